"""``python -m runner --help``: Locust's options together with this kit's.

``locust -f locustfile.py --help`` cannot show the kit's options: Locust prints its
help before it imports the locustfile that registers them. This prints the same
help with them, under their own heading.
"""

from __future__ import annotations

import sys

from locust.argument_parser import get_parser

from runner.options import add_options


def main() -> int:
    """Print the help (any arguments are ignored: this entry point only explains)."""
    parser = get_parser()
    add_options(parser)
    parser.prog = "locust -f locustfile.py"
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
