"""``compare``: two runs side by side, and the regressions a CI can gate on when they are one plan
on one platform.

``differences`` says what differs about the two runs before any number; ``changes`` holds the
statistics (one check for every figure); ``comparison`` ties them to an exit code; ``document``
and ``command`` write and say it.
"""

from reports.compare.changes import Rules
from reports.compare.command import compare_runs
from reports.compare.comparison import CompareRefused, Comparison, compare

__all__ = ["CompareRefused", "Comparison", "Rules", "compare", "compare_runs"]
