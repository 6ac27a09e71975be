"""What the tests start and share, apart from the tests themselves: the reference stack and
generator runs (reference, generator_env, postgres, netns), the hostile servers and proxies
run as real processes (``python -m tests.support.<name>``), and synthetic run directories.

Kept out of ``tests/`` proper so that a test module is a ``test_*.py`` file and nothing else.
"""
