"""What the six workloads are, and one package per platform that speaks them.

``dialect.py`` is the seam (what a workload asks of a platform), ``fixture.py``
what a seeded deployment looks like, ``platforms.py`` the registry the engine
looks platforms up in; each platform package (``agenticos/``, ``agno/``) holds its
dialect, its setup client, seed, preflight and contract notes.
"""
