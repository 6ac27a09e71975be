"""``python -m bench.respawn --pid-file FILE -- COMMAND...``: run a command and start it again
whenever it exits, as a supervisor (systemd, Kubernetes) restarts a service.

bench/faults.py's API restart kills the reference platform's process (by the PID this
writes to FILE, the operator's own command, as a team would ``kill`` or ``kubectl delete
pod``) and measures how the platform comes back; something has to bring it back, and in
the demo stack nothing else would. It stops, and stops its command, on SIGTERM or SIGINT,
and its command dies with it (``PR_SET_PDEATHSIG``), so nothing it started outlives it.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

from stack.processes import child_options

# A command that keeps dying is started again at most this often.
RESTART_EVERY_S = 0.2


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.respawn", description=__doc__)
    parser.add_argument("--pid-file", type=Path, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    stopping: list[int] = []
    child: subprocess.Popen | None = None

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    options = {**child_options(), "stdin": subprocess.DEVNULL}
    while not stopping:
        started = time.monotonic()
        child = subprocess.Popen(command, **options)
        args.pid_file.write_text(f"{child.pid}\n")
        code = child.wait()
        if stopping:
            break
        print(f"respawn: PID {child.pid} exited {code}; starting it again", flush=True)
        time.sleep(max(0.0, RESTART_EVERY_S - (time.monotonic() - started)))
    args.pid_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
