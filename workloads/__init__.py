"""What the six workloads are, and one package per platform that speaks them.

Each platform implements the core's seam (``engine/seam.py``) for the fixture
(``inputs/fixture.py``, top level) it was seeded into; ``platforms.py`` is the registry the
runner and the stack look platforms up in, ``corpus.py`` the text every platform is
sent, and ``seed.py`` / ``preflight.py`` what seeding and preflight report and their
command lines; each platform package (``agenticos/``, ``agno/``, ``langgraph/``) holds
its dialect, setup client, seed, preflight, follow-up and contract notes, exports them
as one ``PLATFORM`` record (its ``platform.py``), and imports no other platform.
README.md here says what a platform exports and how one is added.
"""
