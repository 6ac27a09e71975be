"""The open-arrival core: schedule, dispatch, transport, deadlines, samples, and the seam.

It never imports Locust, nor any package above it (``runner``, ``workloads``,
``shapes``, ``webui``, ``reports``, ``probes``, ``stack``): only the scenario and
fixture records beneath it. The seam it drives (``seam.py``: Dialect, Attempt, Turn,
the preflight result, the Platform record) is its own, so a platform package
implements the core's types and the core never learns of a platform; the registry
that names them (``workloads/platforms.py``) and the Locust wiring (``runner/``)
import the core, never the reverse.
"""
