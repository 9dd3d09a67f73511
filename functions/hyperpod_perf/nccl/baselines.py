"""Published 2-node all-reduce bus bandwidth per instance family (GB/s).

Source: the AI-on-HyperPod NCCL test guide (awslabs.github.io/ai-on-sagemaker-hyperpod,
"Validation and testing / Performance testing / NCCL tests"), as summarised in the project's
runbook: p4d ~300 GB/s; p5, p5e, p5en and p6e ~400 GB/s. The runbook itself warns to benchmark
the instance type before trusting the figure, hence a ratio (thresholds.nccl_baseline_ratio)
rather than an exact comparison, and INFO (not CONCERN) for a family missing from the table.
"""

from __future__ import annotations

EXPECTED_BUSBW_GBPS: dict[str, float] = {
    "p4d": 300.0,
    "p5": 400.0,
    "p5e": 400.0,
    "p5en": 400.0,
    "p6e": 400.0,
}


def instance_family(instance_type: str) -> str:
    """`ml.p5.48xlarge` -> `p5`; `ml.p6e-gb200.36xlarge` -> `p6e`."""
    name = instance_type.strip().lower().removeprefix("ml.")
    return name.split(".", 1)[0].split("-", 1)[0]


def expected_busbw_gbps(instance_type: str | None) -> float | None:
    """The published expectation, or None when the type is not given or not in the table."""
    if not instance_type:
        return None
    return EXPECTED_BUSBW_GBPS.get(instance_family(instance_type))
