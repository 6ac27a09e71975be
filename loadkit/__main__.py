"""``python -m loadkit``: the same command line as the ``loadkit`` console script."""

import sys

from loadkit.cli import main

sys.exit(main(sys.argv[1:]))
