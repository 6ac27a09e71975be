"""The Locust wiring, the top of the kit: its hooks (``hooks.py``, where Locust, the shapes,
the web UI and the runner meet), the master's conductor, the load processes, users mode,
the messages between them, the options, and the run's files.

It imports the shapes and the web UI (which see the run only through shapes.kit_shape's
protocols), the core, the platform registry, the probes and the reports; only the
locustfile, the stack and the command line import it. ``python -m runner --help`` lists
Locust's options with the kit's.
"""
