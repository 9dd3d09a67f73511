"""efa.provider when `fi_info -p efa` fails and no EFA device list came with the snapshot.

Why: the instance type alone says whether EFA is expected. `fi_getinfo: -61` (FI_ENODATA, no EFA
provider) is the failure an FSDP-on-p4d guide quotes as the one to look for on a p4d (corpus case
fi-info/fail_fi_getinfo-61): on an EFA instance type it is a CONCERN (NCCL falls back to TCP),
elsewhere INFO.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Handoff, Severity
from hyperpod_perf.rules import efa
from hyperpod_perf.rules.context import NodeContext

FI_FAIL = (Path(__file__).resolve().parents[2] / "fixtures/real/fi-info/fail_fi_getinfo-61.txt").read_text(
    encoding="utf-8"
)


def _provider(instance_type: str, sections: list[tuple[str, str, int]]):
    meta = f"hostname=ip-10-1-2-3\ninstance_type={instance_type}\n"
    ctx = NodeContext(parse_container(render_container([("meta", meta, 0), *sections]), "node.txt"))
    (finding,) = [f for f in efa.evaluate(ctx) if f.check == "efa.provider"]
    return finding, ctx


@pytest.mark.parametrize(
    ("instance_type", "severity"),
    [
        ("ml.p4d.24xlarge", Severity.CONCERN),
        ("p5.48xlarge", Severity.CONCERN),
        ("ml.g5.8xlarge", Severity.CONCERN),  # g5.8xlarge has EFA
        ("ml.g5.2xlarge", Severity.INFO),  # g5.2xlarge has none
        ("ml.m5.xlarge", Severity.INFO),  # not in the EFA table
        ("", Severity.INFO),  # instance type unknown
    ],
)
def test_no_provider_without_a_device_list_is_judged_by_the_instance_type(instance_type, severity):
    # Given only the fi-info section: `fi_getinfo: -61`, rc 1 (no efa-ports section came)
    finding, ctx = _provider(instance_type, [("fi-info", FI_FAIL, 1)])
    # Then the instance type decides: CONCERN where it has EFA, INFO elsewhere
    assert finding.severity is severity
    assert finding.evidence["error"] == "fi_getinfo: -61"
    assert ctx.collection_findings == []
    if severity is Severity.CONCERN:
        assert "an EFA instance type: NCCL would fall back to TCP" in finding.summary
        assert finding.handoff == Handoff.NCCL


def test_an_empty_device_list_leaves_the_concern_to_efa_devices():
    # Given a p4d whose sysfs lists no EFA device and fi_info failing
    finding, _ = _provider("ml.p4d.24xlarge", [("efa-ports", "", 0), ("fi-info", FI_FAIL, 1)])
    # Then the provider failure is the consequence (INFO); efa.devices carries the CONCERN
    assert finding.severity is Severity.INFO
