"""Job-log findings joined to the diagnosed nodes (host names as logs write them)."""

from __future__ import annotations

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.joblogs.crossref import cross_reference

NODES = [
    ClusterNode(instance_id="i-0aaa00000000000a1", group="w", hostname="ip-10-1-2-3", private_ip="10.1.2.3"),
    ClusterNode(
        instance_id="i-0aaa00000000000a2",
        group="w",
        hostname="ip-10-1-2-4.ec2.internal",
        private_ip="10.1.2.4",
    ),
]
XID = Finding(
    node="i-0aaa00000000000a2",
    check="gpu.xid",
    severity=Severity.CONCERN,
    section=RunbookSection.GPU,
    summary="Xid 79 on GPU 5",
)


def finding(check: str, evidence: dict) -> Finding:
    return Finding(
        check=check, severity=Severity.CONCERN, section=RunbookSection.NCCL, summary="s", evidence=evidence
    )


def test_culprit_host_by_ip_gets_the_node_and_its_concerns():
    (out,) = cross_reference([finding("nccl.timeout", {"culprit": {"hosts": ["10.1.2.4"]}})], NODES, [XID])
    assert out.evidence["nodes"] == [
        {"host": "10.1.2.4", "node": "i-0aaa00000000000a2", "node_concerns": ["gpu.xid: Xid 79 on GPU 5"]}
    ]
    assert out.summary == "s [node i-0aaa00000000000a2 also: gpu.xid: Xid 79 on GPU 5]"


def test_fallback_host_by_short_and_ec2_names():
    (out,) = cross_reference(
        [finding("nccl.transport", {"fallback_hosts": ["ip-10-1-2-4", "ip-10-1-2-3"]})], NODES, []
    )
    assert [n["node"] for n in out.evidence["nodes"]] == ["i-0aaa00000000000a2", "i-0aaa00000000000a1"]
    assert out.summary == "s"  # no concern on those nodes: nothing added to the summary


def test_memlock_finding_takes_the_node_id_and_unknown_hosts_are_left_alone():
    memlock, other = cross_reference(
        [
            finding("nccl.memlock", {"host": "ip-10-1-2-3"}),
            finding("nccl.timeout", {"culprit": {"hosts": ["ai"]}}),
        ],
        NODES,
        [XID],
    )
    assert memlock.node == "i-0aaa00000000000a1"
    assert "nodes" not in other.evidence and other.node is None


def test_a_culprit_ip_finds_a_node_known_only_by_its_listed_ec2_host_name():
    # Given a node as ResolveCluster lists it: host name from ListClusterNodes, no private IP yet
    # (NodePlacement reads it beside the job-log scan, issue 26)
    listed = [ClusterNode(instance_id="i-0aaa00000000000a2", group="w", hostname="ip-10-1-2-4.ec2.internal")]
    # When a log names the culprit by IP
    (out,) = cross_reference([finding("nccl.timeout", {"culprit": {"hosts": ["10.1.2.4"]}})], listed, [XID])
    # Then the IP EC2's name spells finds the node; a host name of another form gives no IP
    assert [n["node"] for n in out.evidence["nodes"]] == ["i-0aaa00000000000a2"]
    custom = [ClusterNode(instance_id="i-0aaa00000000000a2", group="w", hostname="trainer-7")]
    (alone,) = cross_reference([finding("nccl.timeout", {"culprit": {"hosts": ["10.1.2.4"]}})], custom, [XID])
    assert "nodes" not in alone.evidence
