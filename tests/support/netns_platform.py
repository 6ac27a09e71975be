"""The test platform (stubs, reference target, seed) inside a network namespace, until stdin closes.

tests/test_distributed_netns.py starts this with ``ip netns exec`` in the master's
namespace: the target binds every address of that namespace (which the test made,
so nothing outside it can reach them) and workers in other namespaces reach it at
the master's address. It writes ``platform.json`` (fixture path, target port) when
ready and stops everything it started when its stdin closes.

    python -m tests.support.netns_platform DIR
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from stack.generator_runs import GENEROUS_LIMITS, platform

# Every address of the namespace: it exists only inside the test's namespaces.
BIND_ALL = "0.0.0.0"


def main(directory: str) -> int:
    """Serve until stdin closes (or SIGTERM: it too stops what this started)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tmp = Path(directory)
    with platform(tmp, limits={**GENEROUS_LIMITS, "TARGET_HOST": BIND_ALL}) as plat:
        port = int(plat.target.url.rsplit(":", 1)[1])
        ready = {"fixture": str(plat.fixture), "port": port}
        (tmp / "platform.json.partial").write_text(json.dumps(ready))
        (tmp / "platform.json.partial").rename(tmp / "platform.json")
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
