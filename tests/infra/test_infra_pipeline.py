"""The stack's wiring: cdk-nag, the ASL substitutions, the Lambda settings, triggers and alarms."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
from iam_audit import Auditor, render, statements
from infra_synth import REPO_ROOT, Synth, example_context

from infra import lambda_defaults as defaults
from infra.config import ConfigError, load_config
from infra.constructs.functions import CodeAssetBundler, PipTargetBundler
from infra.constructs.workflow import FUNCTION_PLACEHOLDERS, placeholders

ASL = REPO_ROOT / "statemachines" / "diagnose.asl.json"


# --- cdk-nag -------------------------------------------------------------------------------------


def test_cdk_nag_reports_no_unacknowledged_finding(synth: Synth) -> None:
    # Given the app synthesized with the AwsSolutions checks as a validation plugin
    # Then the validation passed (a finding makes synth raise and lands in the report)
    violations = [
        v for p in synth.validation_report.get("pluginReports", []) for v in p.get("violations", [])
    ]
    assert synth.error is None, synth.error
    assert violations == []


def test_every_acknowledgment_carries_a_specific_reason(synth: Synth) -> None:
    # Given the acknowledged rules recorded in the construct metadata
    acknowledged = {
        (path, rule): reason
        for path, entries in synth.metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for rule, reason in entry["data"].items()
    }
    assert acknowledged
    for (path, rule), reason in acknowledged.items():
        # Then each has a real reason, and wildcard acknowledgments name their evidence
        assert len(reason) >= 40, f"{path} {rule}: {reason!r}"
        if "IAM5" in rule:
            assert "[Resource::" in rule, f"{path}: IAM5 acknowledged wholesale ({rule})"
    rules = {rule.removeprefix("Annotation::").split("[")[0] for _, rule in acknowledged}
    assert rules == {"AwsSolutions-IAM5", "AwsSolutions-L1", "AwsSolutions-S1", "AwsSolutions-SQS3"}


def test_cdk_nag_is_active_it_fails_an_unencrypted_public_bucket(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_s3 as s3
    from cdk_nag import AwsSolutionsChecks

    # Given a throwaway app with a bucket that breaks the rules, checked the way app.py checks
    app = cdk.App(outdir=str(tmp_path))
    s3.Bucket(cdk.Stack(app, "Bad"), "Bucket")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # When it is synthesized, Then the validation fails (so a clean result above means something)
    with pytest.raises(RuntimeError, match="ValidationFailed") as failure:
        app.synth()
    assert "AwsSolutions-S10" in str(failure.value)


# --- the state machine ---------------------------------------------------------------------------


def _state_machine(synth: Synth) -> dict:
    (machine,) = synth.of_type("AWS::StepFunctions::StateMachine").values()
    return machine["Properties"]


def test_every_asl_placeholder_has_a_substitution_and_vice_versa(synth: Synth) -> None:
    # Given the ASL file and the deployed state machine
    asl = ASL.read_text()
    props = _state_machine(synth)
    # Then the substitutions are exactly the placeholders, and the definition is the file itself
    assert set(props["DefinitionSubstitutions"]) == placeholders(asl)
    # 14 functions (ClusterMetrics: issue 21, NodePlacement: issue 26) + the bucket
    assert len(placeholders(asl)) == 15
    assert props["DefinitionString"] == asl


def test_each_function_placeholder_points_at_the_function_running_its_handler(synth: Synth) -> None:
    props = _state_machine(synth)
    for placeholder, module in FUNCTION_PLACEHOLDERS.items():
        # Given the function the placeholder resolves to
        logical_id = props["DefinitionSubstitutions"][placeholder]["Fn::GetAtt"][0]
        function = synth.resources[logical_id]
        # Then it runs that placeholder's handler
        assert function["Properties"]["Handler"] == f"hyperpod_perf.handlers.{module}.handler"
    bucket = props["DefinitionSubstitutions"]["ReportBucketName"]["Ref"]
    assert synth.resources[bucket]["Type"] == "AWS::S3::Bucket"


def test_state_machine_is_standard_traced_and_logs_without_execution_data(synth: Synth) -> None:
    props = _state_machine(synth)
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] in {"ALL", "ERROR"}
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is False


def test_distributed_map_may_run_and_read_only_its_own_children_and_items(synth: Synth) -> None:
    # Given the statements attached to the state machine's role
    role = _state_machine(synth)["RoleArn"]["Fn::GetAtt"][0]
    machine = next(k for k, v in synth.resources.items() if v["Type"] == "AWS::StepFunctions::StateMachine")
    policies = [
        p for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role} in p["Properties"]["Roles"]
    ]
    grants: dict[str, list[str]] = {}
    for p in policies:
        for s in p["Properties"]["PolicyDocument"]["Statement"]:
            resources = [
                render(r) for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
            ]
            for action in [s["Action"]] if isinstance(s["Action"], str) else s["Action"]:
                grants.setdefault(action, []).extend(resources)
    bucket = f"<{_state_machine(synth)['DefinitionSubstitutions']['ReportBucketName']['Ref']}.Arn>"
    # Then child executions are limited to this machine, in both ARN forms of a Map Run's children
    # (execution:<machine>/<map run>:<id> and execution:<machine>:<id>)
    assert grants["states:StartExecution"] == [f"<{machine}>"]
    execution = f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<{machine}.Name>"
    assert grants["states:DescribeExecution"] == [f"{execution}/*", f"{execution}:*"]
    assert grants["states:StopExecution"] == grants["states:DescribeExecution"]
    # and the ItemReader reads the report bucket's reports/; the ResultWriter writes only under
    # reports/_map-runs/, with the multipart actions AWS lists for it
    results = f"{bucket}/reports/_map-runs/*"
    assert grants["s3:GetObject"] == [f"{bucket}/reports/*", results]
    for action in ("s3:PutObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"):
        assert grants[action] == [results], action
    # ClusterMetrics (issue 21) and NodePlacement (issue 26) among them
    assert len(grants["lambda:InvokeFunction"]) == 14


# --- Lambda settings -----------------------------------------------------------------------------


def test_each_function_uses_the_shared_runtime_settings(synth: Synth) -> None:
    functions = synth.of_type("AWS::Lambda::Function")
    handlers = set()
    for logical_id, function in functions.items():
        props = function["Properties"]
        module = props["Handler"].removeprefix("hyperpod_perf.handlers.").removesuffix(".handler")
        handlers.add(module)
        sizing = defaults.FUNCTION_SIZING[module]
        assert props["Runtime"] == defaults.RUNTIME.name, logical_id
        assert props["Architectures"] == [defaults.ARCHITECTURE.name], logical_id
        assert props["TracingConfig"] == {"Mode": "Active"}, logical_id
        assert props["LoggingConfig"]["LogFormat"] == "JSON", logical_id
        assert (props["MemorySize"], props["Timeout"]) == (sizing.memory_mb, sizing.timeout.to_seconds())
        layers = [render(layer) for layer in props["Layers"]]
        assert layers[0] == defaults.powertools_layer_arn("<AWS::Region>"), logical_id
        assert layers[0].endswith(f":{defaults.POWERTOOLS_LAYER_VERSION}")
        assert synth.resources[layers[1].strip("<>")]["Type"] == "AWS::Lambda::LayerVersion"
        # each function logs to its own group with the configured retention
        group = synth.resources[props["LoggingConfig"]["LogGroup"]["Ref"]]
        assert group["Properties"]["RetentionInDays"] == 30
    assert handlers == set(defaults.HANDLER_MODULES)


def test_all_functions_share_one_code_asset(synth: Synth) -> None:
    keys = {f["Properties"]["Code"]["S3Key"] for f in synth.of_type("AWS::Lambda::Function").values()}
    assert len(keys) == 1


@pytest.fixture(scope="module")
def built_asset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The functions' code asset as the stack's bundler builds it (source only here: fast; the
    bytecode step has its own tests below). Synth skips bundling (offline), so it is built here."""
    output = tmp_path_factory.mktemp("code-asset")
    assert CodeAssetBundler(REPO_ROOT / "functions", find_python=lambda version: None).try_bundle(str(output))
    return output


def test_code_asset_is_the_package_without_tests_or_caches(built_asset: Path) -> None:
    files = [p.relative_to(built_asset).as_posix() for p in built_asset.rglob("*")]
    assert "hyperpod_perf/handlers/trigger.py" in files
    assert not [f for f in files if "__pycache__" in f or ".egg-info" in f or f.endswith(".pyc")]
    assert not [f for f in files if "/tests/" in f]


def test_code_asset_holds_no_development_code(built_asset: Path) -> None:
    # Given the functions' code asset as the stack's bundler builds it
    asset = built_asset
    # When its top-level entries and every module path are listed
    top_level = sorted(p.name for p in asset.iterdir())
    parts = {part.removesuffix(".py") for p in asset.rglob("*") for part in p.relative_to(asset).parts}
    # Then it is the hyperpod_perf package alone: no simulated cluster, local run or synthetic reports
    assert top_level == ["hyperpod_perf"]
    assert "hyperpod_perf/service/diagnosis.py" in {p.relative_to(asset).as_posix() for p in asset.rglob("*")}
    assert not parts & {"sim", "localrun", "synthetic", "hyperpod_perf_dev"}


def _source_tree(root: Path) -> Path:
    (root / "pkg" / "tests").mkdir(parents=True)
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text("VALUE = 41 + 1\n")
    (root / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"stale")
    (root / "pkg" / "tests" / "test_mod.py").write_text("")
    return root


def test_the_code_asset_carries_checked_hash_bytecode_of_the_runtime_python(tmp_path: Path) -> None:
    # Given a package with a stale cache and tests, and a Python of the runtime's version (here:
    # this interpreter stands for it, so the result can be imported and checked)
    source = _source_tree(tmp_path / "src")
    output = tmp_path / "out"
    bundler = CodeAssetBundler(source, find_python=lambda version: sys.executable)
    # When the asset is built
    assert bundler.try_bundle(str(output)) is True
    # Then it holds the sources minus the excludes, and fresh bytecode for that Python...
    files = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    tag = sys.implementation.cache_tag
    assert files == [
        "pkg/__init__.py",
        f"pkg/__pycache__/__init__.{tag}.pyc",
        f"pkg/__pycache__/mod.{tag}.pyc",
        "pkg/mod.py",
    ]
    pyc = (output / "pkg" / "__pycache__" / f"mod.{tag}.pyc").read_bytes()
    # ...checked-hash (PEP 552: flags word 0b11), so no zip's timestamps can make it stale...
    assert int.from_bytes(pyc[4:8], "little") == 0b11
    # ...naming the task root in tracebacks, and importable as it stands
    code = marshal.loads(pyc[16:])
    assert code.co_filename == "/var/task/pkg/mod.py"
    done = subprocess.run(
        [sys.executable, "-c", "import pkg.mod; print(pkg.mod.VALUE, pkg.mod.__cached__ is not None)"],
        cwd=output,
        env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["42", "True"]


def test_without_a_runtime_python_the_code_asset_is_the_source_alone(tmp_path: Path, capsys) -> None:
    # Given no Python of the runtime's version on this machine
    source = _source_tree(tmp_path / "src")
    output = tmp_path / "out"
    bundler = CodeAssetBundler(source, find_python=lambda version: None)
    # When the asset is built
    assert bundler.try_bundle(str(output)) is True
    # Then it holds the sources only, and the build says why there is no bytecode
    files = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    assert files == ["pkg/__init__.py", "pkg/mod.py"]
    assert f"no Python {defaults.LAYER_PYTHON_VERSION} found" in capsys.readouterr().err


def test_a_failed_compile_fails_the_build(tmp_path: Path) -> None:
    source = _source_tree(tmp_path / "src")

    def failing(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, stdout="", stderr="SyntaxError: boom")

    bundler = CodeAssetBundler(source, find_python=lambda version: "/usr/bin/python3.12", runner=failing)
    with pytest.raises(RuntimeError, match=r"(?s)compiling the code asset failed.*SyntaxError: boom"):
        bundler.try_bundle(str(tmp_path / "out"))


def test_environment_carries_the_pipeline_settings(synth: Synth) -> None:
    # Given the trigger function's environment
    (trigger,) = [
        f
        for f in synth.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].endswith(".trigger.handler")
    ]
    env = trigger["Properties"]["Environment"]["Variables"]
    # Then the configured values are there, and the path of the clusters' SSM parameters
    assert env["STATE_MACHINE_ARN"]["Ref"] in synth.of_type("AWS::StepFunctions::StateMachine")
    assert (env["NOTIFY_POLICY"], env["MAP_MAX_CONCURRENCY"], env["DISTRIBUTED_MAP_THRESHOLD"]) == (
        "always",
        "30",
        "200",
    )
    assert env["CLUSTERS_PARAMETER_PATH"] == "/hyperpod-perf/HyperPodPerf/clusters"
    # And the cluster's parameter, under that path, names the generated FSx alarms and file systems
    (parameter,) = synth.of_type("AWS::SSM::Parameter").values()
    assert parameter["Properties"]["Name"] == "/hyperpod-perf/HyperPodPerf/clusters/ml-cluster-p5"
    assert (parameter["Properties"]["Type"], parameter["Properties"]["Tier"]) == ("String", "Standard")
    clusters_config = render(parameter["Properties"]["Value"])
    alarms = [a["Properties"]["AlarmName"] for a in _fsx_alarms(synth).values()]
    assert sorted(alarms) == [
        "hyperpod-perf-HyperPodPerf-fsx-ml-cluster-p5-fs-0123456789abcdef0",
        "hyperpod-perf-HyperPodPerf-fsx-ml-cluster-p5-fs-0fedcba9876543210",
    ]
    for alarm in alarms:
        assert f'"{alarm}"' in clusters_config
    assert '"fsxIds":["fs-0123456789abcdef0","fs-0fedcba9876543210"]' in clusters_config
    assert '"kubernetesTopology":true' in clusters_config  # the example cluster opts in
    # the metrics stage's workspace reaches the trigger, which puts it on the cluster's requests
    assert (
        '"prometheusWorkspaceId":"ws-0123abcd-4567-89ef-0123-456789abcdef","deepCollect":"suspects"'
        in clusters_config
    )
    others = [f for f in synth.of_type("AWS::Lambda::Function").values() if f is not trigger]
    for name in ("STATE_MACHINE_ARN", "CLUSTERS_PARAMETER_PATH", "CLUSTERS_CONFIG"):
        # ResolveCluster alone also reads the path: which clusters opt in to the Kubernetes topology
        readers = [f for f in others if name in f["Properties"]["Environment"]["Variables"]]
        assert readers == ([] if name != "CLUSTERS_PARAMETER_PATH" else _resolve_functions(synth))


def _resolve_functions(synth) -> list[dict]:
    return [
        f for lid, f in synth.of_type("AWS::Lambda::Function").items() if lid.startswith("FunctionsResolve")
    ]


# --- triggers and alarms -------------------------------------------------------------------------


def _fsx_alarms(synth: Synth) -> dict[str, dict]:
    return {
        k: v
        for k, v in synth.of_type("AWS::CloudWatch::Alarm").items()
        if "FSx" in json.dumps(v["Properties"].get("Metrics", v["Properties"].get("Namespace", "")))
        or v["Properties"].get("Namespace") == "AWS/FSx"
    }


def _rules(synth: Synth) -> dict[str, dict]:
    return {
        v["Properties"]["EventPattern"]["detail-type"][0]: v
        for v in synth.of_type("AWS::Events::Rule").values()
    }


def test_alarm_rule_matches_configured_names_prefixes_and_the_fsx_alarms(synth: Synth) -> None:
    pattern = _rules(synth)["CloudWatch Alarm State Change"]["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.cloudwatch"]
    assert pattern["detail"]["state"] == {"value": ["ALARM"]}
    names = pattern["detail"]["alarmName"]
    assert "ml-cluster-p5-training-step-time-high" in names
    assert {"prefix": "ml-cluster-p5-nccl-"} in names
    # And the stack's own FSx alarms by the one prefix all their names share
    assert {"prefix": "hyperpod-perf-HyperPodPerf-fsx-"} in names
    assert len(names) == 3
    for alarm in _fsx_alarms(synth).values():
        assert alarm["Properties"]["AlarmName"].startswith("hyperpod-perf-HyperPodPerf-fsx-")


def test_hyperpod_rules_match_the_configured_cluster_and_error_level(synth: Synth) -> None:
    rules = _rules(synth)
    health = rules["SageMaker HyperPod Cluster Node Health Event"]["Properties"]["EventPattern"]
    event = rules["SageMaker HyperPod Cluster Event"]["Properties"]["EventPattern"]
    state = rules["SageMaker HyperPod Cluster State Change"]["Properties"]["EventPattern"]
    assert health["source"] == event["source"] == state["source"] == ["aws.sagemaker"]
    assert health["detail"] == {"ClusterName": ["ml-cluster-p5"]}
    assert event["detail"] == {"EventDetails": {"ClusterName": ["ml-cluster-p5"], "EventLevel": ["Error"]}}
    assert state["detail"] == {"ClusterName": ["ml-cluster-p5"]}


def test_every_rule_targets_the_trigger_with_a_dlq_and_retries(synth: Synth) -> None:
    queues = set(synth.of_type("AWS::SQS::Queue"))
    for rule in synth.of_type("AWS::Events::Rule").values():
        (target,) = rule["Properties"]["Targets"]
        function = synth.resources[target["Arn"]["Fn::GetAtt"][0]]
        assert function["Properties"]["Handler"] == "hyperpod_perf.handlers.trigger.handler"
        assert target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0] in queues
        assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    (queue,) = synth.of_type("AWS::SQS::Queue").values()
    assert queue["Properties"]["SqsManagedSseEnabled"] is True


def test_lustre_alarm_is_throughput_percent_of_provisioned_for_15_minutes(synth: Synth) -> None:
    (lustre,) = [a["Properties"] for a in _fsx_alarms(synth).values() if "Metrics" in a["Properties"]]
    expression = next(m for m in lustre["Metrics"] if "Expression" in m)
    # 2400 MB/s provisioned (example config) = 2.4e9 bytes/s
    assert expression["Expression"] == "(r + w) / PERIOD(r) / 2400000000 * 100"
    stats = {m["Id"]: m["MetricStat"] for m in lustre["Metrics"] if "MetricStat" in m}
    assert {s["Metric"]["MetricName"] for s in stats.values()} == {"DataReadBytes", "DataWriteBytes"}
    assert all(s["Stat"] == "Sum" and s["Period"] == 60 for s in stats.values())
    assert all(
        s["Metric"]["Dimensions"] == [{"Name": "FileSystemId", "Value": "fs-0123456789abcdef0"}]
        for s in stats.values()
    )
    assert (lustre["Threshold"], lustre["EvaluationPeriods"], lustre["DatapointsToAlarm"]) == (90, 15, 15)
    assert lustre["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_openzfs_alarm_is_disk_iops_utilization_80_percent_for_15_minutes(synth: Synth) -> None:
    (zfs,) = [a["Properties"] for a in _fsx_alarms(synth).values() if "MetricName" in a["Properties"]]
    assert zfs["MetricName"] == "FileServerDiskIopsUtilization"
    assert zfs["Dimensions"] == [{"Name": "FileSystemId", "Value": "fs-0fedcba9876543210"}]
    assert (zfs["Threshold"], zfs["EvaluationPeriods"], zfs["Period"]) == (80, 15, 60)


def test_pipeline_failures_and_dead_letters_alarm_on_the_topic(synth: Synth) -> None:
    topic = next(iter(synth.of_type("AWS::SNS::Topic")))
    own = [
        a["Properties"]
        for k, a in synth.of_type("AWS::CloudWatch::Alarm").items()
        if k not in _fsx_alarms(synth)
    ]
    assert len(own) == 2
    assert all(a["AlarmActions"] == [{"Ref": topic}] for a in own)
    metric_names = json.dumps(own)
    assert "ExecutionsFailed" in metric_names and "ApproximateNumberOfMessagesVisible" in metric_names


# --- storage and notifications -------------------------------------------------------------------


def test_report_bucket_is_private_encrypted_logged_and_expires_reports(synth: Synth) -> None:
    reports = synth.resources[_state_machine(synth)["DefinitionSubstitutions"]["ReportBucketName"]["Ref"]]
    props = reports["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert "DestinationBucketName" in props["LoggingConfiguration"]
    expiry = {r["Prefix"]: r["ExpirationInDays"] for r in props["LifecycleConfiguration"]["Rules"]}
    assert expiry == {"reports/": 90, "nccl/": 90, "history/": 90, "athena-results/": 90}


def test_topic_is_encrypted_with_a_rotating_customer_key_and_mails_the_operator(synth: Synth) -> None:
    ((_, topic),) = synth.of_type("AWS::SNS::Topic").items()
    ((key_id, key),) = synth.of_type("AWS::KMS::Key").items()
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    (subscription,) = synth.of_type("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "ml-oncall@example.com"
    # the key policy is readable by the audit: explicit kms actions only
    auditor = Auditor(synth.template)
    for st in statements(synth.template):
        if st.kind == "key":
            assert all(a.startswith("kms:") and "*" not in a for a in st.actions)
            auditor.judge(st)
    assert auditor.violations == []


# --- configuration -------------------------------------------------------------------------------


def test_example_context_is_valid_and_read_as_typed_values() -> None:
    config = load_config(example_context())
    (cluster,) = config.clusters
    assert cluster.name == "ml-cluster-p5"
    assert [(f.id, f.type.value, f.provisioned_mbps) for f in cluster.fsx] == [
        ("fs-0123456789abcdef0", "LUSTRE", 2400),
        ("fs-0fedcba9876543210", "OPENZFS", None),
    ]
    assert config.slack is not None and config.slack.channel_id == "C0123ABCDEF"


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda c: c["clusters"][0]["fsx"][0].update(id="fs-; rm -rf /"), "clusters.0.fsx.0.id"),
        (lambda c: c["clusters"][0]["fsx"][1].update(provisionedMBps=100), "clusters.0.fsx.1"),
        (lambda c: c["clusters"][0].update(name="bad name$(x)"), "clusters.0.name"),
        (lambda c: c["clusters"][0].update(alarmPrefixes=["a\nb"]), "clusters.0.alarmPrefixes"),
        (lambda c: c.update(notificationEmails=["not-an-address"]), "notificationEmails"),
        (lambda c: c.update(mapMaxConcurrency=0), "mapMaxConcurrency"),
        (lambda c: c.update(slack={"workspaceId": "T1"}), "slack.channelId"),
        (
            lambda c: c.update(sessionTargetResourceArns=["*", "arn:aws:ssm:r:1:x/*"]),
            "sessionTargetResourceArns",
        ),
        (lambda c: c.update(sessionTargetResourceArns=[" *"]), "sessionTargetResourceArns"),
        (lambda c: c.update(clusterz=[]), "clusterz"),
        (lambda c: c["clusters"].append(dict(c["clusters"][0])), "hyperpod-perf."),
    ],
)
def test_bad_config_fails_with_the_offending_path(mutate, path: str) -> None:
    # Given the example config with one mistake
    context = example_context()
    mutate(context)
    # When it is loaded, Then the error names where the mistake is
    with pytest.raises(ConfigError) as error:
        load_config(context)
    assert path in str(error.value)


def test_context_must_be_an_object() -> None:
    with pytest.raises(ConfigError, match="must be a JSON object"):
        load_config(["clusters"])


# --- the dependencies layer ----------------------------------------------------------------------


def test_dependencies_layer_is_pip_installed_for_lambda_arm64_python312(tmp_path: Path) -> None:
    # Given a bundler with a recording runner instead of a real pip
    calls: list[list[str]] = []

    def runner(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    bundler = PipTargetBundler(defaults.LAYER_REQUIREMENTS, runner=runner)
    # When CDK asks it to bundle
    assert bundler.try_bundle(str(tmp_path)) is True
    # Then it ran pip for the Lambda platform, binary wheels only, into <out>/python
    (command,) = calls
    joined = " ".join(command)
    assert f"--target {tmp_path / 'python'}" in joined
    assert "--platform manylinux2014_aarch64" in joined
    assert "--python-version 3.12" in joined
    assert "--only-binary=:all:" in command
    assert command[-1].startswith("websockets==")


def test_dependencies_layer_failure_is_reported_with_pip_output(tmp_path: Path) -> None:
    def failing(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", "No matching distribution found for websockets")

    with pytest.raises(RuntimeError, match="No matching distribution"):
        PipTargetBundler(defaults.LAYER_REQUIREMENTS, runner=failing).try_bundle(str(tmp_path))
