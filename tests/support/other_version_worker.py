"""The kit's locustfile in a process that says it is another version of the kit: what a
worker left on an older release looks like to the master (tests/test_messages.py starts it
with ``--worker``). Only the version the wire compares differs; everything else is the kit.
"""

import runner.messages

runner.messages.VERSION = "0.0.0-other"

from locustfile import *  # noqa: E402, F403  (the user classes and shapes a worker has)
