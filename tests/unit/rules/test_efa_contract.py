"""EFA findings field by field (reviewed): every shape of efa.devices, efa.port_state, efa.provider and
efa.counters — check id, severity, summary, evidence keys and values, threshold, next step, hand-off —
with the inputs at, just inside and just outside each limit (devices vs the type's count, a counter at
0 and 1). efa.provider's `fi_getinfo: -61` case (judged with the instance type) is pinned in
test_efa_rules.py; the provider shapes here come from listings and exit codes only."""

from __future__ import annotations

import pytest
from test_efa_rules import (
    P4D_DEVICES,
    P4D_FI_INFO,
    REAL,
    WATCHED,
    context,
    counters,
    healthy_p4d,
    ports,
)

from hyperpod_perf.rules import efa
from hyperpod_perf.rules.thresholds import Thresholds

NODE = "i-0a1b2c3d4e5f60001"
MISSING_DEVICE_STEP = (
    "On the node: `ls /sys/class/infiniband` and `lsmod | grep efa` (driver loaded?), and check that the "
    "instance's network interfaces were attached as EFA. A node missing EFA devices slows every "
    "collective it joins: replace or reboot it (hyperpod-node-debugger § A)."
)
PORT_DOWN_STEP = (
    "Read `/sys/class/infiniband/<dev>/ports/1/state` again and check dmesg for efa errors; "
    "a port that stays down needs the node replaced or rebooted (hyperpod-node-debugger § A)."
)
PROVIDER_STEP = (
    "Check the EFA installer / libfabric on the node (`fi_info -p efa -t FI_EP_RDM`, "
    "`/opt/amazon/efa/bin/fi_info`), and in the job log look for `NET/OFI` vs `NET/Socket`."
)
COUNTERS_STEP = (
    "The counters are cumulative since the driver loaded: read them again after a run to see "
    "whether they grow, and compare with other nodes; growing retransmit/unresponsive-remote "
    "counters point at a peer or the path to it, rx_drops at this node."
)
COUNTERS_THRESHOLD = f"{', '.join(WATCHED)} > 0"
OLD_FI_INFO = (REAL / "fi-info/efa_2020_old-fabric-name_libfabric-issue5689.txt").read_text(encoding="utf-8")
HPC6A_FI_INFO = (REAL / "fi-info/hpc6a_1dev_efa_121.0_rdm-dgrm.txt").read_text(encoding="utf-8")
#: A listing in fi_info's format that holds no efa provider (only the tcp one): built for the test.
TCP_ONLY_FI_INFO = (
    "provider: tcp\n    fabric: 10.1.0.0/16\n    domain: eth0\n    version: 1.0\n    type: FI_EP_MSG\n"
)


def finding(check, severity, summary, evidence, threshold=None, next_step=None, handoff=None):
    return {
        "node": NODE,
        "check": check,
        "severity": severity,
        "section": "A",
        "summary": summary,
        "evidence": evidence,
        "threshold": threshold,
        "next_step": next_step,
        "handoff": handoff,
    }


def dumped(ctx, check):
    return [f.model_dump(mode="json") for f in efa.evaluate(ctx) if f.check == check]


# --- efa.devices -------------------------------------------------------------------------------


def test_devices_one_below_the_type_count_is_a_concern_with_the_first_three_read_errors():
    # Given a p4d.24xlarge (4 EFA devices) showing 3, and 4 lines saying a sysfs file is missing
    notes = [f"cat: /sys/class/infiniband/efa_{i}/ports/1/state: No such file or directory" for i in range(4)]
    text = ports(P4D_DEVICES[:3]) + "".join(f"{n}\n" for n in notes)
    ctx = context("ml.p4d.24xlarge", [("efa-ports", text, 0)])
    # Then efa.devices is a CONCERN naming 3 of 4, with only the first 3 read errors as evidence
    assert dumped(ctx, "efa.devices") == [
        finding(
            "efa.devices",
            "CONCERN",
            "only 3 of the 4 EFA devices of p4d.24xlarge are present",
            {
                "instance_type": "p4d.24xlarge",
                "devices": 3,
                "names": P4D_DEVICES[:3],
                "expected": 4,
                "read_errors": notes[:3],
            },
            threshold="devices >= 4 (p4d.24xlarge)",
            next_step=MISSING_DEVICE_STEP,
            handoff="hyperpod-node-debugger § A",
        )
    ]


@pytest.mark.parametrize("extra", [0, 1], ids=["at-the-count", "one-above"])
def test_devices_at_or_above_the_type_count_are_ok(extra):
    # Given a p4d.24xlarge with its 4 devices (or one more)
    names = [*P4D_DEVICES, *(["rdmap176s27"] * extra)]
    ctx = context("ml.p4d.24xlarge", [("efa-ports", ports(names), 0)])
    assert dumped(ctx, "efa.devices") == [
        finding(
            "efa.devices",
            "OK",
            f"{4 + extra} EFA device(s) present",
            {"instance_type": "p4d.24xlarge", "devices": 4 + extra, "names": names, "expected": 4},
        )
    ]


def test_devices_on_a_type_without_a_published_count_are_ok_without_expected():
    ctx = context("ml.g5.48xlarge", [("efa-ports", ports(["rdmap197s0"]), 0)])
    assert dumped(ctx, "efa.devices") == [
        finding(
            "efa.devices",
            "OK",
            "1 EFA device(s) present",
            {"instance_type": "g5.48xlarge", "devices": 1, "names": ["rdmap197s0"]},
        )
    ]


@pytest.mark.parametrize(
    ("instance_type", "expected"), [("p5.48xlarge", {"expected": 32}), ("g6e.24xlarge", {})]
)
def test_no_device_on_an_efa_capable_type_is_a_concern(instance_type, expected):
    ctx = context(f"ml.{instance_type}", [("efa-ports", "", 0)])
    assert dumped(ctx, "efa.devices") == [
        finding(
            "efa.devices",
            "CONCERN",
            f"no EFA device on {instance_type}, an EFA-capable instance type",
            {"instance_type": instance_type, "devices": 0, "names": [], **expected},
            threshold="at least one EFA device on an EFA-capable instance type",
            next_step=MISSING_DEVICE_STEP,
            handoff="hyperpod-node-debugger § A",
        )
    ]


@pytest.mark.parametrize(
    ("instance_type", "reason"),
    [
        ("g5.2xlarge", "g5.2xlarge has no EFA"),
        ("m5.xlarge", "instance type m5.xlarge not in the EFA table"),
        (None, "instance type unknown"),
    ],
)
def test_no_device_on_a_type_without_efa_or_unknown_is_info(instance_type, reason):
    ctx = context(instance_type and f"ml.{instance_type}", [("efa-ports", "", 0)])
    assert dumped(ctx, "efa.devices") == [
        finding(
            "efa.devices",
            "INFO",
            f"no EFA device ({reason})",
            {"instance_type": instance_type, "devices": 0, "names": []},
        )
    ]


def test_each_published_device_count_is_the_expected_one():
    assert efa.EXPECTED_EFA_DEVICES == {
        "p4d.24xlarge": 4,
        "p4de.24xlarge": 4,
        "p5.48xlarge": 32,
        "p5e.48xlarge": 32,
        "p5en.48xlarge": 16,
    }
    for instance_type, count in efa.EXPECTED_EFA_DEVICES.items():
        ctx = context(
            f"ml.{instance_type}", [("efa-ports", ports([f"rdmap{i}s0" for i in range(count - 1)]), 0)]
        )
        (found,) = dumped(ctx, "efa.devices")
        assert (found["severity"], found["evidence"]["expected"]) == ("CONCERN", count)


#: The EFA table as eksctl's instance_types.go lists it (EfaSupported), plus the NVL72 UltraServers.
EFA_SIZES = {
    "p3dn": ["24xlarge"],
    "g4dn": ["8xlarge", "12xlarge", "16xlarge", "metal"],
    "g5": ["8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"],
    "g6": ["8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"],
    "g6e": ["8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"],
    "gr6": ["8xlarge"],
    "trn1": ["32xlarge"],
    "inf1": ["24xlarge"],
}
EFA_EVERY_SIZE = ["p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200", "p6e-gb300"]
EFA_EVERY_SIZE += ["trn1n", "trn2", "trn2u", "dl2q"]


@pytest.mark.parametrize("family", sorted(EFA_SIZES))
def test_capability_of_families_with_efa_on_some_sizes(family):
    for size in EFA_SIZES[family]:
        assert efa.efa_capability(f"ml.{family}.{size}") is True
        assert efa.efa_capability(f"{family}.{size}") is True
    assert efa.efa_capability(f"ml.{family}.2xlarge") is False


@pytest.mark.parametrize("family", EFA_EVERY_SIZE)
def test_capability_of_families_with_efa_on_every_size(family):
    assert efa.efa_capability(f"ml.{family}.48xlarge") is True
    assert efa.efa_capability(f"{family}.2xlarge") is True


@pytest.mark.parametrize("instance_type", [None, "", "c5.large", "ml.c5.large", "xp5.48xlarge"])
def test_capability_unknown(instance_type):
    assert efa.efa_capability(instance_type) is None


def test_capability_table_is_exactly_the_listed_families():
    assert set(efa.EFA_CAPABLE) == set(EFA_SIZES) | set(EFA_EVERY_SIZE)


# --- efa.port_state ----------------------------------------------------------------------------


def test_ports_not_active_list_each_with_its_state_code_or_unreadable():
    # Given 4 ports: 2 ACTIVE, one `1: DOWN`, one `0: NOP` (state code 0), and a fifth device unreadable
    text = (
        ports(P4D_DEVICES[:2])
        + f"{P4D_DEVICES[2]} 1: DOWN\n{P4D_DEVICES[3]} 0: NOP\nrdmap176s27 cat: state: Input/output error\n"
    )
    ctx = context("ml.p4d.24xlarge", [("efa-ports", text, 1)])
    down = {
        f"{P4D_DEVICES[2]}/1": "1: DOWN",
        f"{P4D_DEVICES[3]}/1": "0: NOP",
        "rdmap176s27/1": "UNREADABLE",
    }
    assert dumped(ctx, "efa.port_state") == [
        finding(
            "efa.port_state",
            "CONCERN",
            f"3 of 5 EFA port(s) not ACTIVE: {P4D_DEVICES[2]}/1 (1: DOWN), {P4D_DEVICES[3]}/1 (0: NOP), "
            "rdmap176s27/1 (UNREADABLE)",
            {"active": 2, "total": 5, "not_active": down},
            threshold="every EFA port ACTIVE",
            next_step=PORT_DOWN_STEP,
            handoff="hyperpod-node-debugger § A",
        )
    ]


def test_all_ports_active_is_ok_and_no_port_is_info():
    ok = context("ml.p4d.24xlarge", [("efa-ports", ports(P4D_DEVICES), 0)])
    none = context("ml.p4d.24xlarge", [("efa-ports", "", 0)])
    assert dumped(ok, "efa.port_state") == [
        finding("efa.port_state", "OK", "all 4 EFA port(s) ACTIVE", {"active": 4, "total": 4})
    ]
    assert dumped(none, "efa.port_state") == [
        finding(
            "efa.port_state",
            "INFO",
            "EFA port states: not present (no EFA device)",
            {"section": "efa-ports", "ports": 0},
        )
    ]


# --- not present / not judged --------------------------------------------------------------------


def test_sections_absent_timed_out_or_not_installed_are_info_not_present():
    # Given ports and counters that timed out (rc 124), fi_info not installed (rc 127)
    ctx = context("ml.p5.48xlarge", [("efa-ports", "", 124), ("fi-info", "", 127), ("efa-counters", "", 124)])
    timed_out = {"state": "timeout", "rc": 124}
    assert [f.model_dump(mode="json") for f in efa.evaluate(ctx)] == [
        finding(
            "efa.devices",
            "INFO",
            "EFA devices: not present (command timed out (rc=124))",
            {"section": "efa-ports", **timed_out},
        ),
        finding(
            "efa.port_state",
            "INFO",
            "EFA port states: not present (command timed out (rc=124))",
            {"section": "efa-ports", **timed_out},
        ),
        finding(
            "efa.provider",
            "INFO",
            "libfabric EFA provider (fi_info; the training container may carry its own libfabric): "
            "not present (tool not installed (rc=127))",
            {"section": "fi-info", "state": "absent", "rc": 127},
        ),
        finding(
            "efa.counters",
            "INFO",
            "EFA error counters: not present (command timed out (rc=124))",
            {"section": "efa-counters", **timed_out},
        ),
    ]


def test_unparseable_sections_give_no_efa_finding_only_collection_problems():
    # Given ports, counters and fi_info that are not what their tools print
    ctx = context(
        "ml.p5.48xlarge",
        [
            ("efa-ports", "Traceback (most recent call last):\n", 0),
            ("efa-counters", "garbage here\n", 0),
            ("fi-info", "Segmentation fault\n", 0),
        ],
    )
    assert efa.evaluate(ctx) == []
    assert [f.evidence["section"] for f in ctx.collection_findings] == [
        "efa-ports",
        "fi-info",
        "efa-counters",
    ]


# --- efa.provider (listings and exit codes; not the fi_getinfo -61 case) ---------------------------


def test_provider_ok_lists_versions_domains_endpoint_types_and_devices_fi_info_does_not_list():
    # Given the real 2020 listing (device efa_0, provider versions 2.0 and 1.0) and sysfs with efa_0 + efa_1
    ctx = context(None, [("efa-ports", ports(["efa_0", "efa_1"]), 0), ("fi-info", OLD_FI_INFO, 0)])
    assert dumped(ctx, "efa.provider") == [
        finding(
            "efa.provider",
            "OK",
            "libfabric lists 3 EFA endpoint(s) (provider version 2.0, 1.0)",
            {
                "rc": 0,
                "efa_providers": 3,
                "provider_versions": ["2.0", "1.0"],
                "domains": ["efa_0-rdm", "efa_0-dgrm"],
                "endpoint_types": ["FI_EP_RDM", "FI_EP_DGRAM"],
                "devices_not_listed_by_fi_info": ["efa_1"],
            },
        )
    ]


def test_provider_ok_without_a_version_says_unknown():
    listing = "provider: efa\n    fabric: efa\n    domain: rdmap0s31-rdm\n    type: FI_EP_RDM\n"
    ctx = context(None, [("efa-ports", ports(["rdmap0s31"]), 0), ("fi-info", listing, 0)])
    (found,) = dumped(ctx, "efa.provider")
    assert found["summary"] == "libfabric lists 1 EFA endpoint(s) (provider version unknown)"
    assert found["evidence"] == {
        "rc": 0,
        "efa_providers": 1,
        "provider_versions": [],
        "domains": ["rdmap0s31-rdm"],
        "endpoint_types": ["FI_EP_RDM"],
    }


def test_provider_listing_with_a_non_zero_exit_code_and_devices_is_a_concern():
    # Given the real p4d listing, but fi_info exited 1
    ctx = context("ml.p4d.24xlarge", healthy_p4d(**{"fi-info": (P4D_FI_INFO, 1)}))
    assert dumped(ctx, "efa.provider") == [
        finding(
            "efa.provider",
            "CONCERN",
            "`fi_info -p efa` finds no EFA provider while 4 EFA device(s) exist: NCCL would fall back to TCP",
            {
                "rc": 1,
                "efa_providers": 4,
                "provider_versions": ["111.20"],
                "domains": [f"{d}-rdm" for d in P4D_DEVICES],
                "endpoint_types": ["FI_EP_RDM"],
                "devices": 4,
            },
            threshold="fi_info -p efa lists the efa provider when EFA devices exist",
            next_step=PROVIDER_STEP,
            handoff="hyperpod-nccl",
        )
    ]


def test_provider_listing_without_efa_and_without_devices_is_info():
    # Given fi_info listing only tcp (exit 0), and no EFA device in sysfs
    ctx = context(None, [("efa-ports", "", 0), ("fi-info", TCP_ONLY_FI_INFO, 0)])
    assert dumped(ctx, "efa.provider") == [
        finding(
            "efa.provider",
            "INFO",
            "no libfabric EFA provider (and no EFA device seen)",
            {
                "rc": 0,
                "efa_providers": 0,
                "provider_versions": [],
                "domains": ["eth0"],
                "endpoint_types": ["FI_EP_MSG"],
                "instance_type": None,
            },
        )
    ]


def test_provider_listing_without_efa_while_devices_exist_is_a_concern():
    ctx = context(None, [("efa-ports", ports(["rdmap0s31"]), 0), ("fi-info", TCP_ONLY_FI_INFO, 0)])
    (found,) = dumped(ctx, "efa.provider")
    assert (found["severity"], found["evidence"]["devices"], found["evidence"]["efa_providers"]) == (
        "CONCERN",
        1,
        0,
    )


def test_provider_without_a_ports_section_counts_no_device():
    # Given fi_info exited 1 and efa-ports was not collected: no device is known, so not a TCP fallback
    ctx = context(None, [("fi-info", HPC6A_FI_INFO, 1)])
    (found,) = dumped(ctx, "efa.provider")
    assert (found["severity"], found["summary"]) == (
        "INFO",
        "no libfabric EFA provider (and no EFA device seen)",
    )
    assert found["evidence"]["rc"] == 1 and "devices" not in found["evidence"]


# --- efa.counters ------------------------------------------------------------------------------


@pytest.mark.parametrize("counter", WATCHED)
def test_each_watched_counter_at_one_is_a_concern_and_at_zero_ok(counter):
    # Given one watched counter at 1 (just outside the limit) on one device, every other at 0
    at_one = context(
        "ml.p4d.24xlarge", [("efa-counters", counters(P4D_DEVICES, {(P4D_DEVICES[1], counter): 1}), 0)]
    )
    at_zero = context("ml.p4d.24xlarge", [("efa-counters", counters(P4D_DEVICES), 0)])
    evidence = {"devices_checked": 4, "counters_checked": sorted(WATCHED), "counters_not_exposed": []}
    assert dumped(at_one, "efa.counters") == [
        finding(
            "efa.counters",
            "CONCERN",
            f"EFA error counters non-zero on 1 device(s): {P4D_DEVICES[1]}: {counter}=1",
            {**evidence, "nonzero": {P4D_DEVICES[1]: {counter: 1}}},
            threshold=COUNTERS_THRESHOLD,
            next_step=COUNTERS_STEP,
        )
    ]
    assert dumped(at_zero, "efa.counters") == [
        finding(
            "efa.counters",
            "OK",
            "EFA error counters zero on 4 device(s)",
            evidence,
            threshold=COUNTERS_THRESHOLD,
        )
    ]


def test_counters_several_per_device_and_several_devices_are_listed_in_order():
    planted = {
        ("rdmap16s27", "rx_drops"): 12,
        ("rdmap16s27", "retrans_timeout_events"): 2,
        ("rdmap160s27", "rdma_read_wr_err"): 7,
    }
    ctx = context("ml.p4d.24xlarge", [("efa-counters", counters(P4D_DEVICES, planted), 0)])
    (found,) = dumped(ctx, "efa.counters")
    assert found["summary"] == (
        "EFA error counters non-zero on 2 device(s): rdmap16s27: rx_drops=12, retrans_timeout_events=2; "
        "rdmap160s27: rdma_read_wr_err=7"
    )
    assert found["evidence"]["nonzero"] == {
        "rdmap16s27": {"rx_drops": 12, "retrans_timeout_events": 2},
        "rdmap160s27": {"rdma_read_wr_err": 7},
    }


def test_counters_not_exposed_and_unreadable_are_evidence_not_errors():
    # Given a 2020 driver exposing only rx_drops and tx_pkts, and 11 counter files that could not be read
    text = "efa_0 rx_drops 0\nefa_0 tx_pkts 1\n" + "".join(f"efa_1 c{i} <unreadable>\n" for i in range(11))
    ctx = context(None, [("efa-counters", text, 1)])
    assert dumped(ctx, "efa.counters") == [
        finding(
            "efa.counters",
            "OK",
            "EFA error counters zero on 2 device(s)",
            {
                "devices_checked": 2,
                "counters_checked": ["rx_drops"],
                "counters_not_exposed": [c for c in WATCHED if c != "rx_drops"],
                "unreadable": [f"efa_1 c{i}" for i in range(10)],
            },
            threshold=COUNTERS_THRESHOLD,
        )
    ]


def test_counters_only_the_watched_ones_count_and_the_list_is_the_thresholds_one():
    # Given tx_pkts large (not an error) and rx_drops 1 while only retrans_timeout_events is watched
    only_retrans = Thresholds(efa_error_counters=("retrans_timeout_events",))
    text = "efa_0 tx_pkts 99\nefa_0 rx_drops 1\nefa_0 retrans_timeout_events 0\n"
    ctx = context(None, [("efa-counters", text, 0)], only_retrans)
    (found,) = dumped(ctx, "efa.counters")
    assert (found["severity"], found["threshold"]) == ("OK", "retrans_timeout_events > 0")
    assert found["evidence"]["counters_checked"] == ["retrans_timeout_events"]


def test_no_counter_device_is_info():
    ctx = context("ml.p4d.24xlarge", [("efa-counters", "", 0)])
    assert dumped(ctx, "efa.counters") == [
        finding(
            "efa.counters",
            "INFO",
            "EFA error counters: not present (no EFA device)",
            {"section": "efa-counters", "devices": 0},
        )
    ]
