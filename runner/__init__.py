"""The Locust wiring: the master's conductor, the load processes, users mode, the messages
between them, the options, and the run's files.

It imports the core (``engine``), the platform registry, the probes and the reports;
the shapes, the stack and ``locust_hooks.py`` import it, the core never does.
``python -m runner --help`` lists Locust's options with the kit's.
"""
