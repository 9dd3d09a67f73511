"""efa.provider judged with the instance type when no EFA device list came with the snapshot, field by
field (reviewed): the CONCERN on an EFA instance type (summary, evidence keys and values, threshold,
next step, handoff), the INFO on a type without EFA / not in the table / unknown, what counts as
"fi_info failing" (a non-zero exit code, or exit 0 with no efa provider listed), and a device list
that came back empty (efa.devices' CONCERN, the provider's INFO).

Inputs: the real `fi_getinfo: -61` output (tests/fixtures/real/fi-info, see SOURCES.md), the real
p4d listing, and test_efa_contract.py's tcp-only listing (built in fi_info's format, said so there).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_efa_contract import TCP_ONLY_FI_INFO
from test_efa_provider_by_instance_type import FI_FAIL, _provider
from test_efa_rules import P4D_FI_INFO

NODE = "ip-10-1-2-3"
TYPE_STEP = (
    "Check that the EFA devices are attached (`ls /sys/class/infiniband`), then the EFA installer / "
    "libfabric (`/opt/amazon/efa/bin/fi_info -p efa -t FI_EP_RDM`), and in the job log look for `NET/OFI` "
    "vs `NET/Socket`."
)
FAILED_EVIDENCE = {
    "rc": 1,
    "efa_providers": 0,
    "provider_versions": [],
    "domains": [],
    "endpoint_types": [],
    "error": "fi_getinfo: -61",
}


def dumped(instance_type: str, sections: list[tuple[str, str, int]]) -> dict[str, Any]:
    finding, ctx = _provider(instance_type, sections)
    assert ctx.collection_findings == []
    return finding.model_dump(mode="json")


def concern(instance_type: str, evidence: dict[str, Any]) -> dict[str, Any]:
    return {
        "node": NODE,
        "check": "efa.provider",
        "severity": "CONCERN",
        "section": "A",
        "summary": f"`fi_info -p efa` finds no EFA provider on {instance_type}, an EFA instance type: "
        "NCCL would fall back to TCP",
        "evidence": evidence,
        "threshold": "fi_info -p efa lists the efa provider on an EFA-capable instance type",
        "next_step": TYPE_STEP,
        "handoff": "hyperpod-nccl",
    }


def info(evidence: dict[str, Any]) -> dict[str, Any]:
    return {
        "node": NODE,
        "check": "efa.provider",
        "severity": "INFO",
        "section": "A",
        "summary": "no libfabric EFA provider (and no EFA device seen)",
        "evidence": evidence,
        "threshold": None,
        "next_step": None,
        "handoff": None,
    }


def test_fi_getinfo_61_on_an_efa_type_field_by_field() -> None:
    # Given a p4d whose snapshot holds only `fi_getinfo: -61` (rc 1), no efa-ports section
    assert dumped("ml.p4d.24xlarge", [("fi-info", FI_FAIL, 1)]) == concern(
        "p4d.24xlarge", {**FAILED_EVIDENCE, "instance_type": "p4d.24xlarge", "devices": 0}
    )


@pytest.mark.parametrize(
    ("instance_type", "normalised"),
    [
        ("ml.g5.2xlarge", "g5.2xlarge"),  # a family with EFA on other sizes only
        ("ml.m5.xlarge", "m5.xlarge"),  # not in the EFA table
        ("", None),  # instance type unknown
    ],
)
def test_fi_getinfo_61_elsewhere_is_info_field_by_field(instance_type: str, normalised: str | None) -> None:
    assert dumped(instance_type, [("fi-info", FI_FAIL, 1)]) == info(
        {**FAILED_EVIDENCE, "instance_type": normalised}
    )


@pytest.mark.parametrize(
    ("instance_type", "severity"),
    [
        ("p3dn.24xlarge", "CONCERN"),
        ("p3dn.2xlarge", "INFO"),
        ("g4dn.metal", "CONCERN"),
        ("g6e.48xlarge", "CONCERN"),
        ("trn1.32xlarge", "CONCERN"),
        ("trn1.2xlarge", "INFO"),
        ("trn2.48xlarge", "CONCERN"),
        ("p6-b200.48xlarge", "CONCERN"),
        ("p6e-gb200.36xlarge", "CONCERN"),
        ("ml.p5en.48xlarge", "CONCERN"),
    ],
)
def test_efa_table_decides_per_family_and_size(instance_type: str, severity: str) -> None:
    assert dumped(instance_type, [("fi-info", FI_FAIL, 1)])["severity"] == severity


def test_exit_zero_without_an_efa_provider_on_an_efa_type_is_the_concern() -> None:
    # Given fi_info exiting 0 but listing only tcp, on a p5 with no efa-ports section
    assert dumped("p5.48xlarge", [("fi-info", TCP_ONLY_FI_INFO, 0)]) == concern(
        "p5.48xlarge",
        {
            "rc": 0,
            "efa_providers": 0,
            "provider_versions": [],
            "domains": ["eth0"],
            "endpoint_types": ["FI_EP_MSG"],
            "instance_type": "p5.48xlarge",
            "devices": 0,
        },
    )


def test_exit_zero_with_the_error_line_is_failing_too() -> None:
    # Given `fi_getinfo: -61` printed with exit code 0 on a p4d
    found = dumped("ml.p4d.24xlarge", [("fi-info", FI_FAIL, 0)])
    assert (found["severity"], found["evidence"]["rc"], found["evidence"]["error"]) == (
        "CONCERN",
        0,
        "fi_getinfo: -61",
    )


def test_a_listing_with_a_non_zero_exit_code_and_no_device_list_is_failing() -> None:
    # Given the real p4d listing (4 efa endpoints) but exit code 1, and no efa-ports section
    found = dumped("ml.p4d.24xlarge", [("fi-info", P4D_FI_INFO, 1)])
    assert (found["severity"], found["evidence"]["rc"], found["evidence"]["efa_providers"]) == (
        "CONCERN",
        1,
        4,
    )
    assert found["summary"].startswith("`fi_info -p efa` finds no EFA provider on p4d.24xlarge")
    # And the same listing with exit 0 is OK on the same type
    ok = dumped("ml.p4d.24xlarge", [("fi-info", P4D_FI_INFO, 0)])
    assert (ok["severity"], ok["summary"]) == (
        "OK",
        "libfabric lists 4 EFA endpoint(s) (provider version 111.20)",
    )


def test_an_empty_device_list_on_an_efa_type_leaves_the_provider_at_info_field_by_field() -> None:
    # Given a p4d whose sysfs lists no EFA device (efa.devices' CONCERN) and fi_info failing
    assert dumped("ml.p4d.24xlarge", [("efa-ports", "", 0), ("fi-info", FI_FAIL, 1)]) == info(
        {**FAILED_EVIDENCE, "instance_type": "p4d.24xlarge"}
    )
