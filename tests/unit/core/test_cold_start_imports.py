"""What a handler's import loads: its cold start, held by structure, not by timing.

A cold start is the handler module's import plus its first invocation's set-up (bench/RESULTS.md,
cold start). The heavy parts are known and counted there in CPU instructions: the X-Ray SDK
(≈ 640 M beyond botocore; its import creates an X-Ray client), botocore (≈ 580 M plus ≈ 400 M a
client model) and the node rule engine. These tests hold each handler to loading only what it
needs, each in a fresh interpreter, whatever the machine's load:

- no handler imports the X-Ray SDK unless the deployment turned the SDK on (`xraySdkTracing`);
- outside Lambda no handler imports boto3 at import (the CLI, the tests and the local run create
  clients on first use); inside Lambda a handler that calls AWS creates its clients at init;
- ValidateRequest loads no AWS SDK at all, not even on its first call;
- only the functions that judge node snapshots load the node rule engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hyperpod_perf.handlers import observability
from hyperpod_perf.pipeline.tasks import TASK_FUNCTIONS, TRIGGER_FUNCTION

HANDLERS = sorted([*TASK_FUNCTIONS.values(), TRIGGER_FUNCTION])
HEAVY = (
    "aws_xray_sdk",
    "boto3",
    "s3transfer",
    "botocore.session",
    "aws_lambda_powertools.utilities.parser",
    "hyperpod_perf.rules.engine",
    "hyperpod_perf.report.html",
)
#: The functions that parse and judge node snapshots (CollectNode; RecordNodeFailure shares its module).
ENGINE_HANDLERS = {"collect_node", "record_node_failure"}
BASE_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "POWERTOOLS_SERVICE_NAME": "hyperpod-perf",
    "POWERTOOLS_METRICS_NAMESPACE": "HyperPodPerf",
}


def loaded_after(code: str, env: dict[str, str] | None = None) -> dict[str, bool]:
    """Which HEAVY modules are in sys.modules after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**BASE_ENV, **(env or {})},
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def at_import() -> dict[str, dict[str, bool]]:
    return {h: loaded_after(f"import hyperpod_perf.handlers.{h}") for h in HANDLERS}


def test_no_handler_loads_the_xray_sdk_or_boto3_at_import_outside_lambda(at_import):
    for handler, loaded in at_import.items():
        assert not loaded["aws_xray_sdk"], f"{handler} imports the X-Ray SDK"
        assert not loaded["boto3"] and not loaded["botocore.session"], f"{handler} imports boto3"


def test_only_the_snapshot_judging_functions_load_the_node_rule_engine(at_import):
    engine = {handler for handler, loaded in at_import.items() if loaded["hyperpod_perf.rules.engine"]}
    assert engine == ENGINE_HANDLERS
    assert not any(loaded["hyperpod_perf.report.html"] for loaded in at_import.values())


def test_validate_calls_no_aws_sdk_even_on_its_first_invocation():
    # Given the ValidateRequest handler, inside Lambda (LAMBDA_TASK_ROOT set, as the runtime sets it)
    invoke = (
        "from hyperpod_perf.handlers import validate\n"
        "class C:\n"
        "    function_name = 'v'; memory_limit_in_mb = 256; aws_request_id = 'r'\n"
        "    invoked_function_arn = 'arn:aws:lambda:us-west-2:111122223333:function:v'\n"
        "validate.handler({'input': {'cluster': 'ml-cluster'}, 'execution': 'e-1',"
        " 'started': '2026-12-02T10:00:00+00:00'}, C())"
    )
    # When it handles a request
    env = {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true", "READABLE_S3_PREFIXES": "[]"}
    loaded = loaded_after(invoke, env)
    # Then neither boto3 nor the X-Ray SDK was ever imported
    assert loaded == dict.fromkeys(HEAVY, False)


def test_inside_lambda_a_handler_creates_its_clients_at_init():
    # Given a handler that reads S3, imported as Lambda's init phase imports it
    env = {
        "LAMBDA_TASK_ROOT": "/var/task",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    loaded = loaded_after("import hyperpod_perf.handlers.evaluate", env)
    # Then botocore is loaded then (AWS's best practice: SDK clients outside the handler), not X-Ray
    assert loaded["botocore.session"]
    assert not loaded["aws_xray_sdk"]
    # And the clients come from one botocore session: boto3 and its S3 transfer manager never load
    assert not loaded["boto3"] and not loaded["s3transfer"]


def test_no_handler_loads_the_powertools_parser(at_import):
    # Given every handler module, imported in a fresh interpreter
    # Then none loads Powertools' parser package (its envelopes, event models, JMESPath helpers):
    # events are validated with the step's own model (handlers/events.py)
    loaded = {
        handler for handler, modules in at_import.items() if modules["aws_lambda_powertools.utilities.parser"]
    }
    assert loaded == set()


@pytest.mark.parametrize(
    ("environment", "enabled"),
    [
        ({}, False),  # outside Lambda (tests, CLI, local run)
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),  # Powertools' default inside Lambda
        (
            {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"},
            False,
        ),  # the stack's default
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false"}, True),  # xraySdkTracing
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"}, False),  # sam local invoke
    ],
)
def test_the_xray_sdk_is_on_where_powertools_would_trace(monkeypatch, environment, enabled):
    for name in ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "AWS_CHALICE_CLI_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert observability.xray_sdk_enabled() is enabled


def test_the_untraced_tracer_still_runs_the_handler_and_its_errors():
    # Given a handler decorated the way every handler is, with the tracer of this test process
    assert isinstance(observability.tracer.provider, observability.UntracedProvider)

    @observability.tracer.capture_lambda_handler
    def handler(event, context):
        if event.get("fail"):
            raise ValueError("bad input")
        return {"echo": event["x"]}

    # Then results and exceptions pass through unchanged
    assert handler({"x": 1}, None) == {"echo": 1}
    with pytest.raises(ValueError, match="bad input"):
        handler({"fail": True}, None)


def test_importing_a_handler_builds_no_report_or_diagnosis_validator():
    # Given a handler that never builds a report (ClusterLogs), imported in a fresh interpreter
    probe = (
        "import json\n"
        "import hyperpod_perf.handlers.cluster_logs\n"
        "from hyperpod_perf.domain import cluster, findings, report\n"
        "from hyperpod_perf.handlers import settings\n"
        "models = [report.Report, report.NodeSummary, cluster.DiagnosisResult, cluster.FileSystemData,"
        " findings.Finding, settings.PublishSettings, settings.ResolveSettings]\n"
        "print(json.dumps({m.__name__: m.__pydantic_complete__ for m in models}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=BASE_ENV, check=True
    )
    built = json.loads(done.stdout.strip().splitlines()[-1])
    # Then pydantic built none of those validators at import (defer_build): each is built on first use
    assert built == dict.fromkeys(built, False)
    assert len(built) == 7


def test_a_deferred_model_still_validates_and_rejects_on_first_use():
    # Given a fresh interpreter where the Finding model was deferred
    probe = (
        "from pydantic import ValidationError\n"
        "from hyperpod_perf.domain.findings import Finding\n"
        "assert not Finding.__pydantic_complete__\n"
        "f = Finding.model_validate({'check': 'c', 'severity': 'OK', 'section': 'G', 'summary': 's'})\n"
        "try:\n"
        "    Finding.model_validate({'check': 'c', 'severity': 'nonsense', 'section': 'G', 'summary': 's'})\n"
        "except ValidationError as exc:\n"
        "    print(f.check, Finding.__pydantic_complete__, exc.errors()[0]['loc'][0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=BASE_ENV, check=True
    )
    # When it is first used, Then it is built, validates and refuses as before
    assert done.stdout.split() == ["c", "True", "severity"]


def test_cluster_logs_loads_neither_the_thresholds_nor_the_fsx_service_at_import():
    # Given ClusterLogs, which shares pipeline/gather with FsxMetrics and NcclResults
    probe = (
        "import json, sys\n"
        "import hyperpod_perf.handlers.cluster_logs\n"
        "names = ['hyperpod_perf.rules.thresholds', 'hyperpod_perf.service.fsx',"
        " 'hyperpod_perf.pipeline.results']\n"
        "print(json.dumps({n: n in sys.modules for n in names}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=BASE_ENV, check=True
    )
    # Then what only the other two steps use is not imported with it
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "hyperpod_perf.rules.thresholds": False,
        "hyperpod_perf.service.fsx": False,
        "hyperpod_perf.pipeline.results": False,
    }


def test_a_reset_starts_a_new_botocore_session_but_keeps_the_service_models_read(monkeypatch) -> None:
    from hyperpod_perf.aws import clients

    # Given a session that has created one client (its loader has read the model)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    clients.reset()
    first = clients.botocore_session()
    first.create_client("sts", aws_access_key_id="a", aws_secret_access_key="b")
    loader = first.get_component("data_loader")
    # When a test or a local run ends (reset) and the next one creates its session
    clients.reset()
    second = clients.botocore_session()
    # Then the session is new (credentials and region read again), the loader the same
    assert second is not first
    assert second.get_component("data_loader") is loader
    clients.reset()
