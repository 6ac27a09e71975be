"""What the system under test was doing while the load ran: CPU, memory, DB, /metrics, stub,
and the machine as a whole.

Probes run on the master only, every couple of seconds, and write the long-format
``probes`` table described in reports/README.md (engine/dataset.py). Each probe but the
machine's is optional: one that was not given or that fails is named with its reason,
never printed as zero.
"""

from probes.readings import ProbeParts, Reading
from probes.sampler import ProbeOptions, ProbeRun, start_probes

__all__ = ["ProbeOptions", "ProbeParts", "ProbeRun", "Reading", "start_probes"]
