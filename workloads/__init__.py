"""What the six workloads are, and one package per platform that speaks them.

Each platform implements the core's seam (``engine/seam.py``) for the fixture
(``fixture.py``, top level) it was seeded into; ``platforms.py`` is the registry the
runner and the stack look platforms up in, ``corpus.py`` the text every platform is
sent, and ``seed.py`` / ``preflight.py`` what seeding and preflight report and their
command lines; each platform package (``agenticos/``, ``agno/``) holds its dialect,
its setup client, seed, preflight and contract notes, and imports no other platform.
"""
