"""``make ui``: explore by hand: the local stack and Locust's web UI at an arrival rate you set.

Starts stub and reference target, seeds, then Locust's web UI on 127.0.0.1 with
the constant-rate shape: enter a rate (requests per second) in the start form,
change it at /arrival-rate while it runs, and watch the "Verdict so far" tab.
Each test started from the UI gets its own run directory (``ui-<stamp>``, then
``ui-<stamp>-2``, ...). Ctrl-C, SIGTERM or SIGHUP stops Locust and everything this
started, as does killing this process (stack/processes.py).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from runner.settings import RUNS_DIR, run_stamp
from stack.local import LOCUST, LocalStack, StackOptions
from stack.platforms import local_stack
from stack.processes import ROOT, Interrupted, run_load, stopped_by_signals

DEFAULT_WEB_PORT = 8089
# Exit code when the session cannot start (a port in use, a stack that did not come up).
NOT_STARTED = 2


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


def port_in_use(port: int) -> str | None:
    """Why the web UI cannot listen on 127.0.0.1:``port`` (None: it can), asked before the
    stack is started so a taken port costs one line, not a seed and a Locust traceback."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def web_port(text: str) -> int:
    """A TCP port number (an argparse type)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port; give 1 to 65535")
    return port


def main(argv: list[str], prog: str = "loadkit ui") -> int:
    """Run the UI session until Ctrl-C or a stop signal; 0 when stopped, 2 when it cannot start."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--web-port",
        type=web_port,
        default=os.environ.get("WEB_PORT", str(DEFAULT_WEB_PORT)),
        help=f"the web UI's port on 127.0.0.1 (env WEB_PORT, default {DEFAULT_WEB_PORT})",
    )
    args = parser.parse_args(argv)
    taken = port_in_use(args.web_port)
    if taken:
        print(
            f"ui: --web-port {args.web_port}: 127.0.0.1:{args.web_port} is taken ({taken}); "
            "pass another --web-port (or WEB_PORT)",
            file=sys.stderr,
        )
        return NOT_STARTED
    run_dir = ROOT / RUNS_DIR / f"ui-{run_stamp()}"
    print(f"ui: starting stub and reference target, seeding ({run_dir / 'stack'})", flush=True)
    try:
        with stopped_by_signals(), local_stack(StackOptions(workdir=run_dir / "stack")) as stack:
            print(f"ui: open http://127.0.0.1:{args.web_port}/ and enter a rate", flush=True)
            command = locust_ui_command(stack, run_dir, args.web_port)
            code = run_load(command, stack.locust_env())
    except (RuntimeError, TimeoutError) as exc:
        print(f"ui: {exc}; logs are in {run_dir / 'stack'}", file=sys.stderr)
        return NOT_STARTED
    except Interrupted as exc:
        print(f"ui: {exc}: Locust, the stub and the target are stopped", file=sys.stderr)
        return 0
    return 0 if code == 0 else NOT_STARTED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
