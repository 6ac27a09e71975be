"""The local stack: stub and a platform (the reference target, or agno's AgentOS) on free
loopback ports, seeded, then stopped.

``make demo``, ``make ui`` and the tests start the same processes the same way.
"""
