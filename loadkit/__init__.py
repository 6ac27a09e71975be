"""``loadkit``: the kit's one command line, a thin dispatcher to the entry points that do the work.

Every subcommand hands its arguments to a module that already has a command line
of its own (``stack.demo``, ``stack.ui``, ``workloads.seed``, ``workloads.preflight``,
Locust with ``locustfile.py``, ``reports``, ``reports.sweep``, ``reports.export``), so the
kit has one way of doing each thing whether it is typed as ``loadkit ...``, ``make ...`` or
``python -m ...``; this package only names them and keeps the exit codes exact.
"""
