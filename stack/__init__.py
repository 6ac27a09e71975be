"""The local stack: stub and reference target on free loopback ports, seeded, then stopped.

``make demo``, ``make ui`` and the tests start the same processes the same way.
"""
