"""``make ui``: explore by hand: the local stack and Locust's web UI at an arrival rate you set.

Starts stub and reference target, seeds, then Locust's web UI on 127.0.0.1 with
the constant-rate shape: enter a rate (requests per second) in the start form,
change it at /arrival-rate while it runs, and watch the "Verdict so far" tab.
Ctrl-C stops Locust and everything this started.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from runner.settings import RUNS_DIR, run_stamp
from stack.local import LOCUST, LocalStack, StackOptions
from stack.platforms import local_stack
from stack.processes import ROOT

DEFAULT_WEB_PORT = 8089


def locust_ui_command(stack: LocalStack, run_dir: Path, web_port: int) -> list[str]:
    """Locust's web UI against the local stack, bound to loopback, with every probe."""
    return [
        *LOCUST,
        "--web-host",
        "127.0.0.1",
        "--web-port",
        str(web_port),
        *stack.locust_options(),
        "--run-dir",
        str(run_dir),
        "--topology",
        stack.topology + ", driven from the web UI",
    ]


def main(argv: list[str]) -> int:
    """Run the UI session until Ctrl-C; return Locust's exit code."""
    parser = argparse.ArgumentParser(prog="make ui", description=__doc__)
    parser.add_argument(
        "--web-port",
        type=int,
        default=int(os.environ.get("WEB_PORT", DEFAULT_WEB_PORT)),
        help=f"the web UI's port on 127.0.0.1 (env WEB_PORT, default {DEFAULT_WEB_PORT})",
    )
    args = parser.parse_args(argv)
    run_dir = ROOT / RUNS_DIR / f"ui-{run_stamp()}"
    print(f"ui: starting stub and reference target, seeding ({run_dir / 'stack'})", flush=True)
    try:
        with local_stack(StackOptions(workdir=run_dir / "stack")) as stack:
            print(f"ui: open http://127.0.0.1:{args.web_port}/ and enter a rate", flush=True)
            command = locust_ui_command(stack, run_dir, args.web_port)
            return subprocess.call(command, cwd=ROOT, env=stack.locust_env())
    except (RuntimeError, TimeoutError) as exc:
        print(f"ui: {exc}; logs are in {run_dir / 'stack'}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ui: stopped; stub and target stopped", file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
