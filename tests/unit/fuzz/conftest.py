"""Hypothesis settings for the fuzz suite: bounded and reproducible.

Why a named profile applied per test rather than `load_profile`: loading changes the settings
of every hypothesis test in the session (other suites have their own budgets). Tests here use
`@settings(parent=settings.get_profile(FUZZ_PROFILE))`. `derandomize` makes CI runs identical;
`HPD_FUZZ_EXAMPLES` raises the budget for a deeper local run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_PROFILE = "hpd-fuzz"

settings.register_profile(
    FUZZ_PROFILE,
    max_examples=int(os.environ.get("HPD_FUZZ_EXAMPLES", "40")),
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
