"""The simulated account's moto seeding (hyperpod_perf_dev.sim.account), bound to pytest and us-west-2."""

from __future__ import annotations

import functools

import pytest

from hyperpod_perf_dev.sim import account
from hyperpod_perf_dev.sim.account import ACCOUNT, GroupSeed, NodeSeed, put_lustre_throughput

REGION = "us-west-2"

__all__ = [
    "ACCOUNT",
    "REGION",
    "GroupSeed",
    "NodeSeed",
    "extend_moto_hyperpod",
    "put_lustre_throughput",
    "seed_cluster",
    "seed_lustre",
]

seed_cluster = functools.partial(account.seed_cluster, region=REGION)
seed_lustre = functools.partial(account.seed_lustre, region=REGION)


def extend_moto_hyperpod(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's HyperPod model extended for the length of one test."""
    for cls, name, replacement in account.hyperpod_extensions():
        monkeypatch.setattr(cls, name, replacement)
