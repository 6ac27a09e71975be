"""One line of the verdict's short list, as summary.json carries it.

Its own module, below the headline that builds the list (reports/headline.py), because
summary.json's record holds it: reading a run's verdict (``loadkit run``'s exit code,
the console, CI) must not import what judges and draws a report (pandas, DuckDB,
matplotlib), only this type.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct


class Finding(Struct, frozen=True, forbid_unknown_fields=True):
    """One line of the short list: a check that did not pass, a workload that did not recover,
    a flag (summary.json's findings carry it as it is)."""

    kind: Annotated[
        str,
        Meta(description="failed, not measured, inconclusive or not recovered (each maybe "
             "'(informational)'), or flag"),
    ]  # fmt: skip
    phase: str
    workload: str
    metric: Annotated[str, Meta(description="the metric in words")]
    limit: Annotated[str, Meta(description="the limit with units ('' where none)")]
    measured: Annotated[str, Meta(description="the measurement with units, or why there is none")]
    samples: Annotated[int, Meta(ge=0, description="n")]
    anchor: Annotated[str, Meta(description="id of the report.html section with the evidence")]

    @property
    def text(self) -> str:
        """The finding in one line, sample count included."""
        limit = f" ({self.limit})" if self.limit else ""
        return (
            f"{self.kind}: {self.workload} {self.metric} in {self.phase}: "
            f"{self.measured}{limit}, n={self.samples:,}"
        )
