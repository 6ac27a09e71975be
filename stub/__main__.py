"""``python -m stub``: parse the knobs, refuse bad ones in one line, then serve."""

import sys

from stub.config import ConfigError, parse_config
from stub.serve import serve


def main(argv: list[str]) -> int:
    """Exit status: 0 after a clean stop, 2 for a refused knob or port, 1 if a process died."""
    try:
        config = parse_config(argv)
        return serve(config)
    except ConfigError as exc:
        print(f"stub: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
