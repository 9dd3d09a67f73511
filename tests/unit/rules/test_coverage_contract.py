"""Coverage findings field by field (reviewed): coverage.node_recovery and coverage.deep_health_checks —
the printed (never run) commands exactly, and which groups are judged."""

from __future__ import annotations

from test_cluster_rules import CLUSTER

from hyperpod_perf.domain.cluster import ClusterInfo, InstanceGroup
from hyperpod_perf.rules import coverage

THRESHOLD_DHC = "GPU instance group without OnStartDeepHealthChecks [InstanceStress, InstanceConnectivity]"


def dumped(findings):
    return [f.model_dump(mode="json") for f in findings]


def cluster(**update) -> ClusterInfo:
    return CLUSTER.model_copy(update=update)


def test_node_recovery_automatic_is_ok():
    assert dumped(coverage.node_recovery(cluster(node_recovery="Automatic"))) == [
        {
            "node": None,
            "check": "coverage.node_recovery",
            "severity": "OK",
            "section": "C",
            "summary": "NodeRecovery is Automatic: HyperPod reboots or replaces nodes HMA marks unhealthy",
            "evidence": {"node_recovery": "Automatic"},
            "threshold": "NodeRecovery != Automatic",
            "next_step": None,
            "handoff": None,
        }
    ]


def test_node_recovery_none_is_info_with_the_command_not_run():
    command = (
        "aws sagemaker update-cluster --cluster-name ml-cluster --node-recovery Automatic --region us-west-2"
    )
    assert dumped(coverage.node_recovery(CLUSTER)) == [
        {
            "node": None,
            "check": "coverage.node_recovery",
            "severity": "INFO",
            "section": "C",
            "summary": "NodeRecovery is None: faulty nodes found by the Health Monitoring Agent "
            "wait for an operator",
            "evidence": {"node_recovery": "None", "command": command},
            "threshold": "NodeRecovery != Automatic",
            "next_step": "To let HyperPod reboot or replace unhealthy nodes itself, "
            f"run (not run by this tool): {command}",
            "handoff": None,
        }
    ]


def test_node_recovery_not_set_without_region_and_a_name_that_needs_quoting():
    # Given no NodeRecovery reported, no region, and a cluster name with a space
    (finding,) = coverage.node_recovery(cluster(node_recovery=None, region=None, name="my cluster"))
    assert finding.summary.startswith("NodeRecovery is not set: ")
    assert finding.evidence == {
        "node_recovery": None,
        "command": "aws sagemaker update-cluster --cluster-name 'my cluster' --node-recovery Automatic",
    }


def test_deep_health_checks_ok_first_then_info_per_partly_covered_group():
    command = (
        "aws sagemaker update-cluster --cluster-name ml-cluster --instance-groups "
        '\'[{"InstanceGroupName":"workers","InstanceType":"ml.p5.48xlarge","InstanceCount":16,'
        '"LifeCycleConfig":{"SourceS3Uri":"s3://sagemaker-lcs/scripts/","OnCreate":"on_create.sh"},'
        '"ExecutionRole":"arn:aws:iam::123456789012:role/hp-exec","ThreadsPerCore":1,'
        '"OnStartDeepHealthChecks":["InstanceStress","InstanceConnectivity"]}]\' --region us-west-2'
    )
    assert dumped(coverage.deep_health_checks(CLUSTER)) == [
        {
            "node": None,
            "check": "coverage.deep_health_checks",
            "severity": "OK",
            "section": "C",
            "summary": "on-start deep health checks enabled on GPU instance group(s) covered",
            "evidence": {"groups": ["covered"]},
            "threshold": THRESHOLD_DHC,
            "next_step": None,
            "handoff": None,
        },
        {
            "node": None,
            "check": "coverage.deep_health_checks",
            "severity": "INFO",
            "section": "C",
            "summary": "instance group workers (ml.p5.48xlarge) lacks on-start deep health check(s) "
            "InstanceConnectivity: new or replaced nodes join without that baseline",
            "evidence": {
                "group": "workers",
                "instance_type": "ml.p5.48xlarge",
                "configured": ["InstanceStress"],
                "missing": ["InstanceConnectivity"],
                "command": command,
            },
            "threshold": THRESHOLD_DHC,
            "next_step": "InstanceStress (stress-ng, GPU/PCI counts, DCGM level 4, EFA loopback) and "
            "InstanceConnectivity (multi-node NCCL all-reduce) gate every new node. Review that the "
            f"specification matches the group's current settings, then run (not run by this tool): {command}",
            "handoff": None,
        },
    ]


def test_group_without_any_check_and_only_current_count_gets_a_minimal_spec():
    # Given a GPU group with no check, no target count (current 3), no role, no lifecycle, no threads setting
    bare = cluster(
        region=None,
        instance_groups=(
            InstanceGroup(name="gpu", instance_type="ml.g5.48xlarge", current_count=3),
            InstanceGroup(name="trn", instance_type="ml.trn1.32xlarge", target_count=0, current_count=5),
        ),
    )
    findings = coverage.deep_health_checks(bare)
    assert [(f.severity.value, f.evidence["missing"]) for f in findings] == [
        ("INFO", ["InstanceStress", "InstanceConnectivity"]),
        ("INFO", ["InstanceStress", "InstanceConnectivity"]),
    ]
    assert findings[0].summary == (
        "instance group gpu (ml.g5.48xlarge) lacks on-start deep health check(s) InstanceStress / "
        "InstanceConnectivity: new or replaced nodes join without that baseline"
    )
    assert [f.evidence["command"] for f in findings] == [
        "aws sagemaker update-cluster --cluster-name ml-cluster --instance-groups "
        '\'[{"InstanceGroupName":"gpu","InstanceType":"ml.g5.48xlarge","InstanceCount":3,'
        '"OnStartDeepHealthChecks":["InstanceStress","InstanceConnectivity"]}]\'',
        # a target count of 0 is a count (not "unset"): it is repeated, not replaced by the current one
        "aws sagemaker update-cluster --cluster-name ml-cluster --instance-groups "
        '\'[{"InstanceGroupName":"trn","InstanceType":"ml.trn1.32xlarge","InstanceCount":0,'
        '"OnStartDeepHealthChecks":["InstanceStress","InstanceConnectivity"]}]\'',
    ]


def test_spec_keeps_zero_threads_and_orders_configured_checks_first():
    group = InstanceGroup(
        name="w",
        instance_type="ml.p4d.24xlarge",
        threads_per_core=0,
        on_start_deep_health_checks=("InstanceConnectivity",),
    )
    command = coverage.deep_health_command(cluster(name="c"), group)
    assert command == (
        "aws sagemaker update-cluster --cluster-name c --instance-groups "
        '\'[{"InstanceGroupName":"w","InstanceType":"ml.p4d.24xlarge","ThreadsPerCore":0,'
        '"OnStartDeepHealthChecks":["InstanceConnectivity","InstanceStress"]}]\' --region us-west-2'
    )


def test_cpu_groups_and_groups_without_type_are_not_judged():
    only_cpu = cluster(
        instance_groups=(
            InstanceGroup(name="controller", instance_type="ml.m5.2xlarge"),
            InstanceGroup(name="x"),
        )
    )
    assert coverage.deep_health_checks(only_cpu) == []


def test_evaluate_is_node_recovery_then_deep_health_checks():
    findings = coverage.evaluate(CLUSTER)
    assert [(f.check, f.severity.value) for f in findings] == [
        ("coverage.node_recovery", "INFO"),
        ("coverage.deep_health_checks", "OK"),
        ("coverage.deep_health_checks", "INFO"),
    ]


def test_every_group_is_judged_whatever_comes_before_it():
    # Given two covered GPU groups listed before a CPU group and a partly covered GPU group
    both = ("InstanceStress", "InstanceConnectivity")
    groups = (
        InstanceGroup(name="a", instance_type="ml.p5.48xlarge", on_start_deep_health_checks=both),
        InstanceGroup(name="b", instance_type="ml.p5.48xlarge", on_start_deep_health_checks=both),
        InstanceGroup(name="ctl", instance_type="ml.m5.2xlarge"),
        InstanceGroup(
            name="c", instance_type="ml.p5.48xlarge", on_start_deep_health_checks=("InstanceStress",)
        ),
    )
    findings = coverage.deep_health_checks(cluster(instance_groups=groups))
    assert [(f.severity.value, f.summary.split(":")[0]) for f in findings] == [
        ("OK", "on-start deep health checks enabled on GPU instance group(s) a, b"),
        (
            "INFO",
            "instance group c (ml.p5.48xlarge) lacks on-start deep health check(s) InstanceConnectivity",
        ),
    ]
    assert findings[0].evidence == {"groups": ["a", "b"]}
