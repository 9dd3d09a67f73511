"""gpu.nvlink_inactive for GPUs that answer "Device does not have or support Nvlink", field by field.

The message is nvidia-smi's own (the L40S capture of tests/corpus); the GPU names and instance
types below are inputs chosen to land on each side of `nvlink_expected`. What is pinned: the
CONCERN per GPU that should have NVLink, the one INFO for the others and the reason it gives.
"""

from __future__ import annotations

import pytest
from test_gpu_nvlink_contract import H100, INACTIVE_THRESHOLD, header, run, status, uuid
from test_gpu_query_contract import finding

from hyperpod_perf.rules.gpu import common

NO_NVLINK = "Device does not have or support Nvlink"
L40S = "NVIDIA L40S"


def test_no_nvlink_on_an_nvlink_instance_type_is_a_concern_per_gpu_with_its_evidence():
    # Given a p5 whose GPUs 1 and 3 answer that they have no NVLink, GPU 0 healthy
    body = status(0, "26.562") + header(1) + NO_NVLINK + "\n" + header(3) + NO_NVLINK + "\n"
    # Then each of the two is a CONCERN naming the GPU, its model and NVML's words
    assert run("inactive", body, instance_type="ml.p5.48xlarge") == [
        finding(
            "gpu.nvlink_inactive",
            "CONCERN",
            f"GPU {index} ({H100}) reports no NVLink (`{NO_NVLINK}`) where NVLink is expected",
            {
                "gpu": index,
                "name": H100,
                "uuid": uuid(index),
                "no_nvlink": True,
                "message": NO_NVLINK,
                "instance_type": "p5.48xlarge",
            },
            INACTIVE_THRESHOLD,
            common.NEXT_NVLINK_INACTIVE,
        )
        for index in (1, 3)
    ]


def test_no_nvlink_on_a_type_without_nvlink_is_one_info_naming_the_type():
    # Given a g6e (L40S, no NVLink) whose two GPUs say so
    body = header(0, L40S) + NO_NVLINK + "\n" + header(1, L40S) + NO_NVLINK + "\n"
    assert run("inactive", body, instance_type="ml.g6e.12xlarge") == [
        finding(
            "gpu.nvlink_inactive",
            "INFO",
            f"2 GPUs without NVLink ({NO_NVLINK}); g6e.12xlarge has no NVLink",
            {"gpus": [0, 1], "names": [L40S], "instance_type": "g6e.12xlarge", "message": NO_NVLINK},
            INACTIVE_THRESHOLD,
        )
    ]


@pytest.mark.parametrize(
    ("instance_type", "reason"),
    [
        (None, "instance type unknown and the GPU model is not an NVLink-only part"),
        (
            "ml.x9.1xlarge",
            "instance type x9.1xlarge not in the table and the GPU model is not an NVLink-only part",
        ),
    ],
)
def test_no_nvlink_where_the_type_does_not_decide_says_why_it_is_not_a_concern(instance_type, reason):
    # Given a PCIe card (L40S) and no instance type the table knows
    body = header(0, L40S) + NO_NVLINK + "\n"
    named = instance_type.removeprefix("ml.") if instance_type else None
    assert run("inactive", body, instance_type=instance_type) == [
        finding(
            "gpu.nvlink_inactive",
            "INFO",
            f"1 GPU without NVLink ({NO_NVLINK}); {reason}",
            {"gpus": [0], "names": [L40S], "instance_type": named, "message": NO_NVLINK},
            INACTIVE_THRESHOLD,
        )
    ]
