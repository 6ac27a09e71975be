"""``python -m reports.sweep RUN``: the sweep report's command line (reports/sweep/command.py)."""

import sys

from reports.sweep.command import main

sys.exit(main())
