"""EFA rules on rendered snapshots: healthy nodes give OK evidence, planted faults exactly their CONCERN."""

import re
from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.rules import efa
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import Thresholds

REAL = Path(__file__).parents[2] / "fixtures" / "real"
P4D_FI_INFO = (REAL / "fi-info/p4d_4dev_efa-rdm_libfabric-111.20.txt").read_text(encoding="utf-8")
FI_FAIL = (REAL / "fi-info/fail_fi_getinfo-61.txt").read_text(encoding="utf-8")
#: The p4d's devices, as its real fi_info names them.
P4D_DEVICES = re.findall(r"domain: (\S+)-rdm", P4D_FI_INFO)
#: A p5.48xlarge's 32 devices, as the real node-exporter output names them.
P5_DEVICES = re.findall(
    r'device="([^"]+)"', (REAL / "efa-sysfs/p5_32dev_node-exporter_amazonefa_tx_pkts.prom").read_text()
)
WATCHED = Thresholds().efa_error_counters


def ports(devices: list[str], down: tuple[str, ...] = ()) -> str:
    return "".join(f"{d} {'1: DOWN' if d in down else '4: ACTIVE'}\n" for d in devices)


def counters(devices: list[str], nonzero: dict[tuple[str, str], int] | None = None) -> str:
    nonzero = nonzero or {}
    names = (*WATCHED, "tx_pkts", "rx_pkts")
    return "".join(
        f"{d} {n} {nonzero.get((d, n), 0 if n in WATCHED else 12345)}\n" for d in devices for n in names
    )


def context(instance_type: str | None, sections: list[tuple[str, str, int]], thresholds=None) -> NodeContext:
    meta = "hostname=ip-10-1-2-3\ninstance_id=i-0a1b2c3d4e5f60001\n"
    if instance_type:
        meta += f"instance_type={instance_type}\n"
    snapshot = parse_container(render_container([("meta", meta, 0), *sections]), "node.txt")
    return NodeContext(snapshot, thresholds or Thresholds())


def healthy_p4d(**override: tuple[str, int]) -> list[tuple[str, str, int]]:
    sections = {
        "efa-ports": (ports(P4D_DEVICES), 0),
        "efa-counters": (counters(P4D_DEVICES), 0),
        "fi-info": (P4D_FI_INFO, 0),
    }
    sections.update(override)
    return [(name, text, rc) for name, (text, rc) in sections.items()]


def by_check(findings: list[Finding]) -> dict[str, Finding]:
    assert len({f.check for f in findings}) == len(findings), "one finding per check expected"
    return {f.check: f for f in findings}


def concerns(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.CONCERN]


def test_healthy_p4d_gives_one_ok_per_check_with_evidence():
    # Given a p4d node with its 4 EFA devices ACTIVE, the real fi_info listing, and zero error counters
    ctx = context("ml.p4d.24xlarge", healthy_p4d())
    # When the EFA rules run
    found = by_check(efa.evaluate(ctx))
    # Then every check is OK and says what it checked
    assert {c: f.severity for c, f in found.items()} == dict.fromkeys(
        ("efa.devices", "efa.port_state", "efa.provider", "efa.counters"), Severity.OK
    )
    assert found["efa.devices"].evidence["devices"] == 4 and found["efa.devices"].evidence["expected"] == 4
    assert found["efa.port_state"].evidence == {"active": 4, "total": 4}
    assert found["efa.provider"].evidence["provider_versions"] == ["111.20"]
    assert found["efa.provider"].evidence["efa_providers"] == 4
    assert found["efa.counters"].evidence["devices_checked"] == 4
    assert found["efa.counters"].evidence["counters_checked"] == sorted(WATCHED)
    assert all(f.section is RunbookSection.NCCL and f.node == "i-0a1b2c3d4e5f60001" for f in found.values())
    assert ctx.collection_findings == []


def test_port_down_is_exactly_one_concern_naming_the_port():
    # Given one of the four ports reading `1: DOWN`
    ctx = context(
        "ml.p4d.24xlarge", healthy_p4d(**{"efa-ports": (ports(P4D_DEVICES, down=("rdmap32s27",)), 0)})
    )
    findings = efa.evaluate(ctx)
    # Then efa.port_state alone is a CONCERN, listing that port, routed to the node debugger § A
    (concern,) = concerns(findings)
    assert concern.check == "efa.port_state"
    assert concern.evidence == {"active": 3, "total": 4, "not_active": {"rdmap32s27/1": "1: DOWN"}}
    assert "rdmap32s27/1 (1: DOWN)" in concern.summary
    assert concern.handoff == Handoff.NODE_A


def test_fi_info_failure_with_devices_warns_of_tcp_fallback():
    # Given devices present but `fi_info -p efa` printing `fi_getinfo: -61` and exiting non-zero
    ctx = context("ml.p4d.24xlarge", healthy_p4d(**{"fi-info": (FI_FAIL, 1)}))
    (concern,) = concerns(efa.evaluate(ctx))
    # Then efa.provider is a CONCERN that says NCCL would fall back to TCP, handed to hyperpod-nccl
    assert concern.check == "efa.provider"
    assert "NCCL would fall back to TCP" in concern.summary
    assert concern.evidence["error"] == "fi_getinfo: -61"
    assert concern.evidence["rc"] == 1 and concern.evidence["devices"] == 4
    assert concern.handoff == Handoff.NCCL
    # and a failed fi_info is not a parse problem
    assert ctx.collection_findings == []


def test_no_device_on_an_efa_capable_type_is_a_concern_and_the_rest_is_info():
    # Given a p5.48xlarge whose sysfs has no EFA device at all
    ctx = context(
        "ml.p5.48xlarge",
        [("efa-ports", "", 0), ("efa-counters", "", 0), ("fi-info", FI_FAIL, 1)],
    )
    found = by_check(efa.evaluate(ctx))
    # Then only efa.devices is a CONCERN; the other checks have nothing to judge
    assert [f.check for f in concerns(list(found.values()))] == ["efa.devices"]
    assert found["efa.devices"].evidence["devices"] == 0
    assert found["efa.devices"].handoff == Handoff.NODE_A
    assert "p5.48xlarge" in found["efa.devices"].summary
    assert {
        c: found[c].severity for c in ("efa.port_state", "efa.provider", "efa.counters")
    } == dict.fromkeys(("efa.port_state", "efa.provider", "efa.counters"), Severity.INFO)


@pytest.mark.parametrize(
    ("instance_type", "words"),
    [("ml.g5.2xlarge", "g5.2xlarge has no EFA"), ("ml.m5.xlarge", "not in the EFA table"), (None, "unknown")],
)
def test_no_device_on_other_types_is_info(instance_type, words):
    ctx = context(instance_type, [("efa-ports", "", 0)])
    found = by_check(efa.evaluate(ctx))
    assert found["efa.devices"].severity is Severity.INFO
    assert words in found["efa.devices"].summary
    assert concerns(list(found.values())) == []


def test_p5_missing_one_of_its_32_devices():
    # Given a p5.48xlarge (real device names) with one device gone
    ctx = context("ml.p5.48xlarge", [("efa-ports", ports(P5_DEVICES[:-1]), 0)])
    (concern,) = concerns(efa.evaluate(ctx))
    assert concern.check == "efa.devices"
    assert (concern.evidence["devices"], concern.evidence["expected"]) == (31, 32)


def test_full_p5_is_ok():
    ctx = context("ml.p5.48xlarge", [("efa-ports", ports(P5_DEVICES), 0)])
    found = by_check(efa.evaluate(ctx))
    assert found["efa.devices"].severity is Severity.OK and found["efa.devices"].evidence["devices"] == 32
    assert found["efa.port_state"].evidence == {"active": 32, "total": 32}


def test_nonzero_error_counters_per_device():
    # Given rx_drops on one device and a retransmit timeout on another (tx_pkts is large but not an error)
    planted = {("rdmap16s27", "rx_drops"): 12, ("rdmap144s27", "retrans_timeout_events"): 3}
    ctx = context("ml.p4d.24xlarge", healthy_p4d(**{"efa-counters": (counters(P4D_DEVICES, planted), 0)}))
    (concern,) = concerns(efa.evaluate(ctx))
    # Then one efa.counters CONCERN carries the non-zero counters per device
    assert concern.check == "efa.counters"
    assert concern.evidence["nonzero"] == {
        "rdmap16s27": {"rx_drops": 12},
        "rdmap144s27": {"retrans_timeout_events": 3},
    }
    assert "rdmap16s27: rx_drops=12" in concern.summary
    assert concern.handoff is None


def test_counter_list_comes_from_thresholds():
    planted = {("rdmap16s27", "retrans_timeout_events"): 3}
    only_drops = Thresholds(efa_error_counters=("rx_drops",))
    ctx = context(
        "ml.p4d.24xlarge", healthy_p4d(**{"efa-counters": (counters(P4D_DEVICES, planted), 0)}), only_drops
    )
    found = by_check(efa.evaluate(ctx))
    assert found["efa.counters"].severity is Severity.OK
    assert found["efa.counters"].evidence["counters_checked"] == ["rx_drops"]


def test_absent_sections_are_info_not_present():
    # Given a snapshot that only has meta (the EFA sections were never collected)
    found = by_check(efa.evaluate(context("ml.p5.48xlarge", [])))
    assert {c: f.severity for c, f in found.items()} == dict.fromkeys(
        ("efa.devices", "efa.port_state", "efa.provider", "efa.counters"), Severity.INFO
    )
    assert all("not present" in f.summary for f in found.values())


def test_fi_info_not_installed_on_host_is_info():
    ctx = context("ml.p4d.24xlarge", healthy_p4d(**{"fi-info": ("bash: fi_info: command not found\n", 127)}))
    found = by_check(efa.evaluate(ctx))
    assert found["efa.provider"].severity is Severity.INFO
    assert found["efa.provider"].evidence["rc"] == 127
    assert concerns(list(found.values())) == []


def test_garbage_ports_become_a_collection_finding_not_a_false_concern():
    ctx = context("ml.p5.48xlarge", [("efa-ports", "Traceback (most recent call last):\n", 0)])
    found = by_check(efa.evaluate(ctx))
    assert "efa.devices" not in found and "efa.port_state" not in found
    (problem,) = ctx.collection_findings
    assert problem.check == "collect.node" and problem.evidence["section"] == "efa-ports"


def test_capability_table():
    assert efa.efa_capability("p6e-gb200.36xlarge") is True
    assert efa.efa_capability("ml.g6.8xlarge") is True
    assert efa.efa_capability("g6.4xlarge") is False
    assert efa.efa_capability("trn1.2xlarge") is False
    assert efa.efa_capability("c5.large") is None


def test_unreadable_port_state_is_not_active():
    text = ports(P4D_DEVICES[:3]) + f"{P4D_DEVICES[3]} cat: state: Input/output error\n"
    ctx = context("ml.p4d.24xlarge", healthy_p4d(**{"efa-ports": (text, 1)}))
    (concern,) = concerns(efa.evaluate(ctx))
    assert concern.check == "efa.port_state"
    assert concern.evidence["not_active"] == {f"{P4D_DEVICES[3]}/1": "UNREADABLE"}
