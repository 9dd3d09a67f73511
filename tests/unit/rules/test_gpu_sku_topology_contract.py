"""The per-SKU GPU table (count, model, NVLinks per pair, source) row by row, `NV<N>` reading, and the
cluster topology findings field by field (reviewed): AZ spread (one AZ, a majority, an even split,
unplaced nodes, controller nodes left out) and UltraServer placement of NVL72 nodes."""

from __future__ import annotations

import pytest

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.rules import topology
from hyperpod_perf.rules.gpu_sku import GpuSku, gpu_sku, nvlink_count

SPECS = "Amazon EC2 accelerated computing instance specifications"

# ------------------------------------------------------------------------------ gpu_sku


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("ml.p4d.24xlarge", GpuSku(8, "A100", 12, f"{SPECS}; NVIDIA A100 datasheet (12 NVLinks)")),
        ("p4de.24xlarge", GpuSku(8, "A100", 12, f"{SPECS}; NVIDIA A100 datasheet (12 NVLinks)")),
        ("ml.p5.48xlarge", GpuSku(8, "H100", 18, f"{SPECS}; NVIDIA H100 datasheet (18 NVLinks)")),
        ("ml.p5e.48xlarge", GpuSku(8, "H200", 18, f"{SPECS}; NVIDIA H200 datasheet (18 NVLinks)")),
        ("ml.p5en.48xlarge", GpuSku(8, "H200", 18, f"{SPECS}; NVIDIA H200 datasheet (18 NVLinks)")),
        ("ml.p6-b200.48xlarge", GpuSku(8, "B200", 18, f"{SPECS}; NVIDIA Blackwell datasheet (18 NVLinks)")),
        ("ml.p5.4xlarge", GpuSku(1, "H100", None, SPECS, has_nvlink=False)),
        ("ml.p6e-gb200.36xlarge", GpuSku(4, "B200", None, SPECS, has_nvlink=True)),
        (" ML.P5.48XLARGE ", GpuSku(8, "H100", 18, f"{SPECS}; NVIDIA H100 datasheet (18 NVLinks)")),
    ],
)
def test_named_instance_types(instance_type: str, expected: GpuSku) -> None:
    assert gpu_sku(instance_type) == expected


@pytest.mark.parametrize(("family", "model"), [("g5", "A10G"), ("g6", "L4"), ("g6e", "L40S")])
@pytest.mark.parametrize(
    ("size", "gpus"),
    [
        ("xlarge", 1),
        ("2xlarge", 1),
        ("4xlarge", 1),
        ("8xlarge", 1),
        ("16xlarge", 1),
        ("12xlarge", 4),
        ("24xlarge", 4),
        ("48xlarge", 8),
    ],
)
def test_pcie_families_by_size(family: str, model: str, size: str, gpus: int) -> None:
    assert gpu_sku(f"ml.{family}.{size}") == GpuSku(gpus, model, None, SPECS, has_nvlink=False)


@pytest.mark.parametrize(
    "instance_type",
    [
        None,
        "",
        "ml.m5.2xlarge",
        "ml.g5.3xlarge",
        "ml.g4dn.12xlarge",
        "ml.p5.24xlarge",
        "g5",
        "ml.trn1.32xlarge",
    ],
)
def test_types_not_in_the_table(instance_type: str | None) -> None:
    assert gpu_sku(instance_type) is None


@pytest.mark.parametrize(
    ("link", "count"),
    [("NV18", 18), ("NV1", 1), (" NV12\t", 12), ("SYS", None), ("NODE", None), ("PHB", None), ("PXB", None)],
)
def test_nvlink_count_reads_nv_n_only(link: str, count: int | None) -> None:
    assert nvlink_count(link) == count


@pytest.mark.parametrize("link", ["PIX", "X", "NV", "NVx", "xNV18", "NV18x", "NV 18"])
def test_nvlink_count_refuses_other_cells(link: str) -> None:
    assert nvlink_count(link) is None


# ------------------------------------------------------------------------------ topology.az_spread


def node(i: int, az: str | None = "us-west-2a", az_id: str | None = "usw2-az1", **kw) -> ClusterNode:
    values = {"instance_id": f"i-{i:04d}", "group": "workers", "instance_type": "ml.p5.48xlarge", **kw}
    return ClusterNode(az=az, az_id=az_id, status="Running", **values)


def dumped(findings) -> list[dict]:
    return [f.model_dump(mode="json") for f in findings]


def finding(check, severity, summary, evidence, threshold=None, next_step=None, handoff=None) -> dict:
    return {
        "node": None,
        "check": check,
        "severity": severity,
        "section": "A",
        "summary": summary,
        "evidence": evidence,
        "threshold": threshold,
        "next_step": next_step,
        "handoff": handoff,
    }


def spread_next(where: str) -> str:
    return (
        f"Run tightly coupled jobs on nodes of one AZ ({where}); if the instance groups themselves span AZs, "
        "re-provision them in one subnet/AZ."
    )


def test_one_az_is_ok_and_controller_nodes_elsewhere_do_not_count() -> None:
    # Given two p5 workers in us-west-2a and a controller (m5) in us-west-2b
    nodes = [node(1), node(2), node(3, az="us-west-2b", az_id="usw2-az2", instance_type="ml.m5.xlarge")]
    assert dumped(topology.az_spread(nodes)) == [
        finding(
            "topology.az_spread",
            "OK",
            "all 2 placed node(s) are in one Availability Zone (us-west-2a (usw2-az1))",
            {"nodes_per_az": {"us-west-2a (usw2-az1)": 2}, "nodes_considered": 2},
            "nodes in > 1 AZ",
        )
    ]


def test_two_azs_with_a_majority_is_a_concern_naming_the_minority() -> None:
    # Given three workers in AZ id usw2-az1 (names only), one in usw2-az3 (id only), one unplaced
    nodes = [node(1, az=None), node(2, az=None), node(3, az=None), node(4, az="us-west-2c", az_id=None)]
    nodes.append(node(5, az=None, az_id=None))
    assert dumped(topology.az_spread(nodes)) == [
        finding(
            "topology.az_spread",
            "CONCERN",
            "job nodes span 2 Availability Zones (us-west-2c: 1, usw2-az1: 3): cross-AZ traffic slows NCCL",
            {
                "nodes_per_az": {"us-west-2c": 1, "usw2-az1": 3},
                "nodes_considered": 5,
                "nodes_without_placement": ["i-0005"],
                "nodes_outside_majority_az": {"us-west-2c": ["i-0004"]},
            },
            "nodes in > 1 AZ",
            spread_next("most are in usw2-az1"),
            "hyperpod-cluster-debugger § B",
        )
    ]


def test_an_even_split_says_no_az_holds_most() -> None:
    nodes = [node(1), node(2, az="us-west-2b", az_id="usw2-az2"), node(3, az="us-west-2c", az_id="usw2-az3")]
    nodes += [node(4), node(5, az="us-west-2b", az_id="usw2-az2")]
    (result,) = dumped(topology.az_spread(nodes))
    assert result["next_step"] == spread_next(
        "no AZ holds most of them: us-west-2a (usw2-az1) and us-west-2b (usw2-az2) hold 2 each"
    )
    # The majority kept for the listing is the last AZ name among the tied ones
    assert result["evidence"]["nodes_outside_majority_az"] == {
        "us-west-2a (usw2-az1)": ["i-0001", "i-0004"],
        "us-west-2c (usw2-az3)": ["i-0003"],
    }


def test_node_lists_stop_at_twenty() -> None:
    nodes = [node(i) for i in range(30)] + [
        node(100 + i, az="us-west-2b", az_id="usw2-az2") for i in range(25)
    ]
    nodes += [node(200 + i, az=None, az_id=None) for i in range(22)]
    (result,) = dumped(topology.az_spread(nodes))
    assert result["evidence"]["nodes_outside_majority_az"] == {
        "us-west-2b (usw2-az2)": [f"i-{100 + i:04d}" for i in range(20)]
    }
    assert result["evidence"]["nodes_without_placement"] == [f"i-{200 + i:04d}" for i in range(20)]
    assert result["evidence"]["nodes_considered"] == 77


def test_no_placement_known_is_info_and_no_nodes_is_nothing() -> None:
    nodes = [node(1, az=None, az_id=None), node(2, az=None, az_id=None)]
    assert dumped(topology.az_spread(nodes)) == [
        finding(
            "topology.az_spread",
            "INFO",
            "placement not known for any of 2 node(s): AZ spread not checked",
            {"nodes_without_placement": 2},
        )
    ]
    assert topology.az_spread([]) == []


def test_without_accelerated_nodes_every_node_counts() -> None:
    nodes = [node(1, instance_type="ml.m5.xlarge"), node(2, az="us-west-2b", az_id=None, instance_type=None)]
    (result,) = dumped(topology.az_spread(nodes))
    assert (result["severity"], result["evidence"]["nodes_per_az"]) == (
        "CONCERN",
        {"us-west-2a (usw2-az1)": 1, "us-west-2b": 1},
    )
    assert topology.job_nodes(nodes) == nodes


# ------------------------------------------------------------------------------ topology.ultraserver

GB200 = "ml.p6e-gb200.36xlarge"
ULTRA_NEXT = (
    "Place each tightly coupled NVL72 job within one UltraServer (EKS label topology.k8s.aws/ultraserver-id, "
    "Slurm topology block); capacity changes go to the cluster debugger."
)


def test_nvl72_nodes_on_one_ultraserver_are_ok() -> None:
    nodes = [
        node(1, instance_type=GB200, ultraserver_id="us-1"),
        node(2, instance_type=GB200, ultraserver_id="us-1"),
    ]
    assert dumped(topology.ultraserver([*nodes, node(3)])) == [
        finding(
            "topology.ultraserver",
            "OK",
            "all 2 p6e-gb200.36xlarge node(s) share UltraServer us-1",
            {"instance_type": "p6e-gb200.36xlarge", "nodes_per_ultraserver": {"us-1": 2}},
            "NVL72 job nodes on > 1 UltraServer",
        )
    ]


def test_nvl72_nodes_on_two_ultraservers_are_a_concern_per_type() -> None:
    # Given three GB200 nodes over two UltraServers (one more without an id) and two GB300 nodes on one
    gb300 = "p6e-gb300.36xlarge"
    nodes = [
        node(1, instance_type=GB200, ultraserver_id="us-1"),
        node(2, instance_type=GB200, ultraserver_id="us-2"),
        node(3, instance_type=GB200, ultraserver_id="us-1"),
        node(4, instance_type=GB200),
        node(5, instance_type=gb300, ultraserver_id="us-9"),
        node(6, instance_type=f"ml.{gb300}", ultraserver_id="us-9"),
    ]
    assert dumped(topology.ultraserver(nodes)) == [
        finding(
            "topology.ultraserver",
            "CONCERN",
            "4 p6e-gb200.36xlarge node(s) span 2 UltraServers: traffic between them leaves the NVLink domain",
            {
                "instance_type": "p6e-gb200.36xlarge",
                "nodes_per_ultraserver": {"us-1": 2, "us-2": 1},
                "nodes_without_ultraserver_id": ["i-0004"],
            },
            "NVL72 job nodes on > 1 UltraServer",
            ULTRA_NEXT,
            "hyperpod-cluster-debugger § B",
        ),
        finding(
            "topology.ultraserver",
            "OK",
            "all 2 p6e-gb300.36xlarge node(s) share UltraServer us-9",
            {"instance_type": "p6e-gb300.36xlarge", "nodes_per_ultraserver": {"us-9": 2}},
            "NVL72 job nodes on > 1 UltraServer",
        ),
    ]


def test_nvl72_nodes_without_ultraserver_ids_are_info() -> None:
    nodes = [node(i, instance_type=GB200) for i in range(25)]
    assert dumped(topology.ultraserver(nodes)) == [
        finding(
            "topology.ultraserver",
            "INFO",
            "25 p6e-gb200.36xlarge node(s) report no UltraServer id: placement not checked",
            {
                "instance_type": "p6e-gb200.36xlarge",
                "nodes_per_ultraserver": {},
                "nodes_without_ultraserver_id": [f"i-{i:04d}" for i in range(20)],
            },
        )
    ]


def test_evaluate_is_az_spread_then_ultraserver() -> None:
    nodes = [node(1, instance_type=GB200, ultraserver_id="us-1")]
    assert [f.check for f in topology.evaluate(nodes)] == ["topology.az_spread", "topology.ultraserver"]
    assert topology.ultraserver([node(1)]) == []
