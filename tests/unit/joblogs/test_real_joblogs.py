"""Job-log checks against real excerpts (tests/fixtures/real/joblogs, SOURCES.md gives each thread
and the reading decided from it before the analyser ran)."""

from __future__ import annotations

from pathlib import Path

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.joblogs import analyze_logs

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "joblogs"


def analyze(*names: str, instance_type: str | None = None) -> list[Finding]:
    logs = [(name, (REAL / name).read_bytes().splitlines(keepends=True)) for name in names]
    return analyze_logs(logs, instance_type)


def only(findings: list[Finding], check: str, severity: Severity | None = None) -> list[Finding]:
    return [f for f in findings if f.check == check and (severity is None or f.severity is severity)]


def test_cloudwatch_export_on_p4d_used_efa_with_four_nics_and_plugin_settings():
    # Given aws-ofi-nccl#889's CloudWatch rows, When analysed
    findings = analyze("ofi-889-cloudwatch-efa-p4d.log")
    # Then the transport is EFA with 4 NICs and nothing is a concern
    (transport,) = only(findings, "nccl.transport")
    assert transport.severity is Severity.OK
    assert "EFA (provider efa, fabric efa, 4 NICs)" in transport.summary
    assert transport.evidence["hosts"] == ["ip-10-36-22-140"]
    assert not only(findings, "nccl.env", Severity.CONCERN)
    settings = {
        (s["name"], s["value"], s["set_by"]) for s in only(findings, "nccl.env")[0].evidence["settings"]
    }
    assert ("NCCL_PROTO", "simple", "aws-ofi-nccl") in settings
    assert ("FI_EFA_FORK_SAFE", "1", "aws-ofi-nccl") in settings
    assert (
        "NCCL_TOPO_FILE",
        "/opt/amazon/ofi-nccl/share/aws-ofi-nccl/xml/p4d-24xl-topo.xml",
        "aws-ofi-nccl platform defaults",
    ) in settings


def test_glued_cloudwatch_console_copy_plugin_failure_is_a_transport_concern():
    findings = analyze("ofi-889-cloudwatch-glued-init-failed.log")
    fallback, gdr = only(findings, "nccl.transport", Severity.CONCERN)
    assert fallback.evidence["fallback_hosts"] == ["ip-10-36-29-253"]
    assert fallback.evidence["reasons"] == ["aws-ofi-nccl initialization failed"]
    assert "p4d.24xlarge" in fallback.evidence["efa_expected_because"]
    assert "GPUDirect RDMA disabled on p4d.24xlarge" in gdr.summary
    (env,) = only(findings, "nccl.env")
    assert env.evidence["settings"][0] == {
        "name": "NCCL_SOCKET_IFNAME",
        "value": "eth0",
        "set_by": "environment",
        "hosts": ["ip-10-36-29-253"],
        "lines": 1,
    }


def test_tcp_rxm_provider_on_efa_instances_is_not_efa():
    findings = analyze("nccl-229-ofi-tcp-rxm.log")
    (transport,) = only(findings, "nccl.transport")
    assert transport.severity is Severity.CONCERN
    assert transport.evidence["fallback_hosts"] == ["ip-192-168-16-255", "ip-192-168-29-243"]
    assert transport.evidence["reasons"] == ["libfabric provider tcp;ofi_rxm"]


def test_sockets_without_efa_evidence_is_info_and_a_concern_once_the_sku_has_efa():
    (alone,) = only(analyze("nccl-857-socket-no-efa.log"), "nccl.transport")
    assert alone.severity is Severity.INFO
    assert alone.evidence["by_transport"] == {"socket": 3}
    (on_p5,) = only(analyze("nccl-857-socket-no-efa.log", instance_type="ml.p5.48xlarge"), "nccl.transport")
    assert on_p5.severity is Severity.CONCERN
    assert on_p5.evidence["fallback_hosts"] == ["ai"]
    assert on_p5.evidence["efa_expected_because"] == "instance type ml.p5.48xlarge has EFA"
    # a type without EFA: still not judged a fallback
    (on_g5x,) = only(analyze("nccl-857-socket-no-efa.log", instance_type="ml.g5.xlarge"), "nccl.transport")
    assert on_g5x.severity is Severity.INFO


def test_efa_wordings_of_several_versions_and_launchers_are_ok():
    for name, hosts in (
        ("nccl-526-pdsh-efa.log", ["compute-st-p4d24xlarge-12", "compute-st-p4d24xlarge-3"]),
        ("ofi-161-sagemaker-efa.log", ["algo-1"]),
        ("nccl-1597-libfabric-efa-p5en.log", ["8h200-2", "8h200-3"]),
        ("ofi-24-openmpi-tagged.log", ["ip-172-32-34-121", "ip-172-32-38-1", "ip-172-32-45-165"]),
    ):
        findings = analyze(name)
        (transport,) = only(findings, "nccl.transport")
        assert transport.severity is Severity.OK, name
        assert transport.evidence["hosts"] == hosts, name


def test_no_plugin_and_collnet_symbol_lines_are_not_findings():
    findings = analyze("nccl-1232-no-plugin-bootstrap.log")
    assert not [f for f in findings if f.severity is Severity.CONCERN]
    (transport,) = only(findings, "nccl.transport")
    assert transport.severity is Severity.INFO


def test_memory_registration_failure_names_the_node_and_the_ulimit_handoff():
    (memlock,) = only(analyze("nccl-563-register-memory-pdsh.log"), "nccl.memlock")
    assert memlock.severity is Severity.CONCERN
    assert memlock.node == "ip-10-0-87-143"
    assert "ulimit -l" in (memlock.next_step or "")
    (bare,) = only(analyze("nccl-tests-206-ibv-reg-mr.log"), "nccl.memlock")
    assert bare.severity is Severity.CONCERN and "ibv_reg_mr_iova2" in bare.summary


def test_registration_einval_points_at_the_efa_installer_bug():
    (memlock,) = only(analyze("awsome-203-rail-mr-invalid.log"), "nccl.memlock")
    assert memlock.severity is Severity.CONCERN
    assert "FI_EFA_SET_CUDA_SYNC_MEMOPS=0" in (memlock.next_step or "")
    assert "awsome-distributed-ai#203" in memlock.evidence["source"]


def test_rank_that_never_issued_the_awaited_collective_is_the_culprit():
    (timeout,) = only(analyze("llamafactory-2902-rank0-lags.log"), "nccl.timeout")
    assert timeout.severity is Severity.CONCERN
    assert timeout.evidence["culprit"]["ranks"] == [0]
    assert timeout.evidence["culprit"]["method"] == "collective sequence lag"
    assert "waits on collective #1517" in timeout.evidence["culprit"]["detail"]


def test_same_collective_everywhere_says_it_cannot_tell():
    for name, ranks in (
        ("llamafactory-7396-watchdog-pt25.log", [0, 3, 4]),
        ("basicsr-737-watchdog-pt26-pg-guid.log", [0, 1]),
        ("sglang-1693-pg3-timeout.log", [1, 4]),
    ):
        (timeout,) = only(analyze(name), "nccl.timeout")
        assert timeout.severity is Severity.CONCERN, name
        assert timeout.evidence["culprit"] is None, name
        assert "do not tell which rank stalled first" in timeout.summary, name
        assert timeout.evidence["ranks_timed_out"] == ranks, name


def test_different_operations_at_one_seqnum_is_reported_without_picking_a_side():
    (timeout,) = only(analyze("nccl-1409-op-mismatch.log"), "nccl.timeout")
    assert timeout.evidence["culprit"] is None
    assert "BROADCAST: rank(s) 7" in timeout.summary and "ALLREDUCE: rank(s) 3" in timeout.summary
    assert "assumed for rank(s) 3" in timeout.summary


def test_several_sequences_per_rank_without_groups_cannot_be_compared():
    (timeout,) = only(analyze("pytorch-118369-pt21-glued-progress.log"), "nccl.timeout")
    assert timeout.evidence["events"] == {"watchdog_timeout": 5}
    assert timeout.evidence["culprit"] is None
    assert "SeqNum 96117, 96120, 96125" in timeout.summary


def test_flight_recorder_missing_rank_is_named():
    (timeout,) = only(analyze("pytorch-tutorials-flight-recorder.log"), "nccl.timeout")
    assert timeout.evidence["culprit"]["ranks"] == [1]
    assert timeout.evidence["culprit"]["method"] == "flight recorder analysis"
    assert "0:default_pg" in timeout.evidence["culprit"]["detail"]


def test_ray_worker_death_names_the_host():
    (timeout,) = only(analyze("openrlhf-621-ray-remote-exit.log"), "nccl.timeout")
    assert timeout.evidence["culprit"]["hosts"] == ["172.19.24.110"]
    assert timeout.evidence["events"] == {"remote_exit": 1, "worker_died": 1}


def test_pod_identity_link_local_interface_and_socket_fallback():
    findings = analyze("aws-do-eks-54-pod-id-link0.log")
    (transport,) = only(findings, "nccl.transport")
    assert transport.severity is Severity.CONCERN
    assert transport.evidence["reasons"] == ["no eligible libfabric provider"]
    (link_local,) = only(findings, "nccl.env", Severity.CONCERN)
    assert "link-local" in link_local.summary and "aws-do-eks#54" in link_local.evidence["source"]
    (timeout,) = only(findings, "nccl.timeout")
    assert timeout.evidence["events"] == {"connect_refused": 1, "remote_exit": 1}


def test_socket_ifname_naming_no_interface():
    (concern,) = only(analyze("nccl-1837-socket-ifname-missing.log"), "nccl.env", Severity.CONCERN)
    assert "NCCL_SOCKET_IFNAME=eth2 names none that exists" in concern.summary
    assert "nccl#1837" in concern.evidence["source"]


def test_hard_wrapped_heartbeat_record_is_joined():
    (timeout,) = only(analyze("vlm-r1-257-hard-wrapped-heartbeat.log"), "nccl.timeout")
    assert timeout.evidence["events"] == {"watchdog_stuck": 1}
    assert "watchdog got stuck for 480 seconds" in timeout.evidence["examples"][0]


def test_openmpi_tagged_ofi_error_is_a_timeout_concern_for_rank_23():
    (timeout,) = only(analyze("ofi-24-openmpi-tagged.log"), "nccl.timeout")
    assert timeout.evidence["events"] == {"ofi_error": 1}
    assert "Couldn't open AV" in timeout.evidence["examples"][0]
