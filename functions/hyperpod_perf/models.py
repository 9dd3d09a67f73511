"""Temporary: the names that modules not yet migrated to `hyperpod_perf.domain` still import here.

Removed once rules/gpu.py and nccl/analysis.py, its last importers, import from `domain` directly.
New code imports `hyperpod_perf.domain.findings`, `.request` or `.report`.
"""

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.domain.request import CLUSTER_NAME_PATTERN, FSX_ID_PATTERN, NotifyPolicy

__all__ = [
    "CLUSTER_NAME_PATTERN",
    "FSX_ID_PATTERN",
    "Finding",
    "Handoff",
    "NotifyPolicy",
    "RunbookSection",
    "Severity",
]
