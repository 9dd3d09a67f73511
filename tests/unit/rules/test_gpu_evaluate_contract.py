"""The GPU family as the engine runs it (reviewed): which section each check reads and with which
accepted exit codes, a hung nvidia-smi reported once per section as a collection problem, Xid lines
joined to the GPU index through the query's bus ids, and host.fabric_manager field by field
(`systemctl is-active` states on NVL72 types; silent elsewhere)."""

from __future__ import annotations

import pytest
from test_gpu_rules import H100_LOAD, healthy_sections, real

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.rules import gpu
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu import common, fabric

G = "hyperpod-node-debugger § G"
FM_THRESHOLD = "NVL72 instance (p6e-gb200 / gb300) and nvidia-fabricmanager not active -> CONCERN"


def context(sections: dict[str, tuple[str, int]]) -> NodeContext:
    text = render_container([(name, body, rc) for name, (body, rc) in sections.items()])
    return NodeContext(parse_container(text, "node.txt"))


def dumped(findings, check: str) -> list[dict]:
    return [f.model_dump(mode="json") for f in findings if f.check == check]


# ------------------------------------------------------------------------------ evaluate


@pytest.mark.parametrize("section", ["gpu-query", "nvlink-status", "nvlink-errors", "gpu-topo", "gpu-pcie"])
def test_each_hung_nvidia_smi_section_is_one_collection_problem_even_when_evaluated_twice(
    section: str,
) -> None:
    # Given a node whose nvidia-smi hung on one section (rc=124)
    sections = healthy_sections("ml.p5.48xlarge")
    sections[section] = ("", 124)
    ctx = context(sections)
    # When the family is evaluated twice on the same node
    gpu.evaluate(ctx)
    gpu.evaluate(ctx)
    # Then that section is reported once, naming the tool and the § G hand-off
    assert [f.model_dump(mode="json") for f in ctx.collection_findings] == [
        {
            "node": "ip-10-1-2-3",
            "check": "collect.node",
            "severity": "CONCERN",
            "section": "X",
            "summary": f"section {section}: nvidia-smi timed out (rc=124); a hung nvidia-smi often means a "
            "GPU/driver fault (§ G)",
            "evidence": {
                "section": section,
                "reason": "nvidia-smi timed out (rc=124); a hung nvidia-smi often means a GPU/driver "
                "fault (§ G)",
            },
            "next_step": "Re-run the collection on this node; the raw output is kept next to the report.",
            "handoff": "hyperpod-ssm",
            "threshold": None,
        }
    ]


@pytest.mark.parametrize("section", ["xid", "oom"])
def test_kernel_log_timeouts_are_info_but_not_a_collection_problem_here(section: str) -> None:
    sections = healthy_sections()
    sections[section] = ("", 124)
    ctx = context(sections)
    findings = gpu.evaluate(ctx)
    assert ctx.collection_findings == []
    check = "gpu.xid" if section == "xid" else "host.oom"
    assert [f.severity.value for f in findings if f.check == check] == ["INFO"]


@pytest.mark.parametrize(("section", "check"), [("xid", "gpu.xid"), ("oom", "host.oom")])
def test_grep_exit_1_is_no_match_and_exit_2_is_noted(section: str, check: str) -> None:
    # Given grep found nothing (rc 1: accepted, no section_rc) vs grep failing (rc 2: noted)
    sections = healthy_sections()
    sections[section] = ("", 1)
    (ok,) = dumped(gpu.evaluate(context(sections)), check)
    sections[section] = ("", 2)
    (noted,) = dumped(gpu.evaluate(context(sections)), check)
    assert ok["severity"] == noted["severity"] == "OK"
    assert "section_rc" not in ok["evidence"]
    assert noted["evidence"]["section_rc"] == 2


@pytest.mark.parametrize(
    ("section", "check"),
    [
        ("gpu-query", "gpu.temperature"),
        ("nvlink-status", "gpu.nvlink_inactive"),
        ("nvlink-errors", "gpu.nvlink_errors"),
    ],
)
def test_nvidia_smi_exit_1_is_noted_next_to_the_values(section: str, check: str) -> None:
    sections = healthy_sections()
    sections[section] = (sections[section][0], 1)
    (finding,) = dumped(gpu.evaluate(context(sections)), check)
    assert finding["evidence"]["section_rc"] == 1


def test_xid_is_joined_to_the_index_the_query_gives_or_the_row_position() -> None:
    # Given three GPUs: index 4 on bus 2A, index N/A on bus 3A (position 1 -> GPU 1), and one whose bus
    # id is N/A (not joinable); an Xid on each known bus and one on an unlisted bus
    query = (
        "index, name, pci.bus_id\n"
        "4, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\n"
        "[N/A], NVIDIA H100 80GB HBM3, 00000000:3A:00.0\n"
        "5, NVIDIA H100 80GB HBM3, [N/A]\n"
    )
    xid = "".join(
        f"[Sat Jul 11 05:52:47 2026] NVRM: Xid (PCI:0000:{bus}:00): 43, pid=1, name=python, Ch 00000008\n"
        for bus in ("2a", "3a", "9b")
    )
    sections = healthy_sections()
    sections["gpu-query"] = (query, 0)
    sections["xid"] = (xid, 0)
    findings = dumped(gpu.evaluate(context(sections)), "gpu.xid")
    assert [(f["evidence"]["pci"], f["evidence"]["gpu"]) for f in findings] == [
        ("0000:2a:00", 4),
        ("0000:3a:00", 1),
        ("0000:9b:00", None),
    ]
    assert findings[0]["summary"].startswith("Xid 43 (GPU stopped processing) on GPU 4 (PCI 0000:2a:00) x1")
    assert findings[2]["summary"].startswith("Xid 43 (GPU stopped processing) on PCI 0000:9b:00 x1")


def test_xid_without_a_query_is_still_judged_by_pci() -> None:
    sections = healthy_sections()
    del sections["gpu-query"]
    sections["xid"] = (real("xid/gpu-node-01_dmesg-T_xid120-154_gsp.txt"), 0)
    findings = dumped(gpu.evaluate(context(sections)), "gpu.xid")
    assert [(f["evidence"]["code"], f["evidence"]["gpu"]) for f in findings] == [(120, None), (154, None)]


def test_healthy_eight_gpu_node_is_all_ok_in_catalog_order() -> None:
    sections = healthy_sections("ml.p5.48xlarge")
    sections["gpu-query"] = (real(H100_LOAD), 0)
    findings = gpu.evaluate(context(sections))
    assert [f.check for f in findings] == [
        "gpu.temperature",
        "gpu.pcie_width",
        "gpu.thermal_throttle",
        "gpu.ecc_uncorrected",
        "gpu.remapped_rows",
        "gpu.count",
        "gpu.xid",
        "gpu.nvlink_inactive",
        "gpu.nvlink_errors",
        "gpu.topology",
        "host.oom",
        "gpu.pcie_replay",
        "host.pcie_aer",
    ]


# ------------------------------------------------------------------------------ host.fabric_manager


def fabric_findings(
    instance_type: str | None, state: tuple[str, int] | None
) -> tuple[list[dict], NodeContext]:
    meta = "hostname=gb-1\n" + (f"instance_type={instance_type}\n" if instance_type else "")
    sections = [("meta", meta, 0)] + ([("fabric-manager", *state)] if state else [])
    ctx = NodeContext(parse_container(render_container(sections), "n.txt"))
    return [f.model_dump(mode="json") for f in fabric.check_fabric_manager(ctx)], ctx


def fm(
    severity: str, summary: str, evidence: dict, threshold=FM_THRESHOLD, next_step=None, handoff=G
) -> dict:
    return {
        "node": "gb-1",
        "check": "host.fabric_manager",
        "severity": severity,
        "section": "G",
        "summary": summary,
        "evidence": evidence,
        "threshold": threshold,
        "next_step": next_step,
        "handoff": handoff,
    }


@pytest.mark.parametrize("instance_type", ["ml.p6e-gb200.36xlarge", "p6e-GB300.36xlarge"])
def test_fabric_manager_active_on_nvl72_is_ok(instance_type: str) -> None:
    findings, ctx = fabric_findings(instance_type, ("active\n", 0))
    named = instance_type.removeprefix("ml.")
    assert findings == [
        fm(
            "OK",
            f"nvidia-fabricmanager active on {named}",
            {"instance_type": named, "fabric_manager": "active", "rc": 0},
        )
    ]
    assert ctx.collection_findings == []


@pytest.mark.parametrize(("state", "rc"), [("inactive", 3), ("failed", 3), ("activating", 0), ("unknown", 4)])
def test_fabric_manager_not_active_on_nvl72_is_a_concern(state: str, rc: int) -> None:
    findings, ctx = fabric_findings("ml.p6e-gb200.36xlarge", (f"\n{state.upper()}\n", rc))
    assert findings == [
        fm(
            "CONCERN",
            f"nvidia-fabricmanager is {state} on NVL72 instance p6e-gb200.36xlarge",
            {"instance_type": "p6e-gb200.36xlarge", "fabric_manager": state, "rc": rc},
            next_step=common.NEXT_FABRIC_MANAGER,
        )
    ]
    assert ctx.collection_findings == []


def test_fabric_manager_state_with_an_unexpected_exit_code_is_still_judged() -> None:
    findings, _ = fabric_findings("ml.p6e-gb200.36xlarge", ("failed\n", 5))
    assert [(f["severity"], f["evidence"]["rc"]) for f in findings] == [("CONCERN", 5)]


def test_fabric_manager_on_an_unknown_type_is_info_and_elsewhere_silent() -> None:
    assert fabric_findings(None, ("active\n", 0))[0] == [
        fm(
            "INFO",
            "fabric manager check not applicable (instance type unknown)",
            {"instance_type": None},
            handoff=None,
        )
    ]
    assert fabric_findings("ml.p5.48xlarge", ("inactive\n", 3))[0] == []
    assert fabric_findings("ml.gb200x.48xlarge", ("inactive\n", 3))[0] == []  # gb200 only as a whole word


def test_fabric_manager_section_absent_timed_out_or_unreadable_on_nvl72() -> None:
    absent, _ = fabric_findings("ml.p6e-gb200.36xlarge", None)
    assert absent == [
        fm(
            "INFO",
            "fabric manager state: not present (section not in snapshot)",
            {"section": "fabric-manager", "state": "absent", "rc": None},
            threshold=None,
            handoff=None,
        )
    ]
    timed_out, _ = fabric_findings("ml.p6e-gb200.36xlarge", ("", 124))
    assert timed_out == [
        fm(
            "INFO",
            "fabric manager state: not evaluated, the command timed out (rc=124)",
            {"section": "fabric-manager", "state": "timeout", "rc": 124},
            threshold=None,
            next_step=common.NEXT_TIMEOUT,
        )
    ]
    unreadable, ctx = fabric_findings("ml.p6e-gb200.36xlarge", ("Failed to connect to bus\n", 1))
    assert unreadable == []
    assert [f.evidence["section"] for f in ctx.collection_findings] == ["fabric-manager"]


@pytest.mark.parametrize(
    ("text", "state"),
    [("active\n", "active"), ("\n  Failed  \nactive\n", "failed"), ("maintenance", "maintenance")],
)
def test_parse_systemctl_is_active_reads_the_first_state_word(text: str, state: str) -> None:
    assert fabric.parse_systemctl_is_active(text) == state


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("", "''"),
        ("\n\n", "''"),
        ("enabled\n", "'enabled'"),
        ("x" * 100, repr("x" * 80)),
    ],
)
def test_parse_systemctl_is_active_refuses_anything_else(text: str, shown: str) -> None:
    with pytest.raises(ValueError) as error:
        fabric.parse_systemctl_is_active(text)
    assert str(error.value) == f"not a systemctl is-active state: {shown}"
