"""Temporary: the names that modules not yet migrated to `hyperpod_perf.domain` still import here.

Removed once localrun/ imports `hyperpod_perf.domain.cluster` directly.
"""

from hyperpod_perf.domain.cluster import LUSTRE_GIB_PER_TIB, MB

__all__ = ["LUSTRE_GIB_PER_TIB", "MB"]
