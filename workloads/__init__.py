"""What the six workloads are, and one package per platform that speaks them.

``dialect.py`` is the seam (what a workload asks of a platform), ``fixture.py``
what a seeded deployment looks like, ``platforms.py`` the registry the engine
looks platforms up in, ``corpus.py`` the text every platform is sent, and
``seed.py`` / ``preflight.py`` what seeding and preflight report and their
command lines; each platform package (``agenticos/``, ``agno/``) holds its
dialect, its setup client, seed, preflight and contract notes, and imports no
other platform.
"""
