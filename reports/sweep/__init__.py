"""A sweep's report: each step's throughput and latency, the knee, the overhead, memory per session.

Reads a run directory written by a sweep shape (shapes/sweep.py), whose phases
are its steps, and answers the capacity questions the seeds ask: how much load
before a threshold breaks or throughput stops growing (the knee), what the
platform adds on top of the model (observed time minus the stub's stated
delays, read from the stub's /stats knobs in probes.csv), and what one
concurrent session costs in memory (a least-squares fit of the API process's
RSS and Private_Dirty against sessions, with r^2, and whether a rest step gave
it back). It never mixes modes: the run's mode is stated and decides what
"load" means (users, or arrivals per second).

Built as the run's own report is: ``analysis`` measures the steps into ``record``'s typed
records (sweep.json's type, and ``read_sweep`` for whoever reads it back),
``document`` says them as a Document rendered through reports/render.py (the same
templates and number formatting, so the two cannot disagree on how a figure reads),
``charts`` draws them, and ``command`` writes sweep.md, sweep.html, sweep.json and
sweep.png beside the run's own report:

    python -m reports.sweep runs/<timestamp>
"""
