"""The open-arrival engine: schedule, dispatch, samples, and the master/worker protocol.

It knows workloads only through ``workloads.dialect`` and finds a platform
through ``workloads.platforms``; no module here imports a platform package.
"""
