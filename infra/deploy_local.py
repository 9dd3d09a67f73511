"""`make deploy-local`: the real CDK CLI deploys the stack into a local moto server, then DEPLOY.md's
`aws stepfunctions start-execution` command, as written, diagnoses a seeded simulated cluster.

What it proves: the template bootstraps and deploys with the pinned CLI (assets published to
the bootstrap bucket, every resource type moto supports created), the deployed definition has
every substitution filled, and the handlers, run with each function's deployed handler string and
environment, take a diagnosis to SUCCEEDED and write the report into the deployed bucket. What it
cannot prove is listed in the README (IAM, KMS, alarms, subscriptions, Chatbot, layers).

moto runs in this process (a threaded server on 127.0.0.1): its Step Functions interpreter then
reaches the Lambda bridge installed here, and the simulated HyperPod extensions apply to it.
A developer tool, kept out of the Lambda package (it starts processes): `python -m infra.deploy_local`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import socket

# bandit B404: dev tool: the CDK CLI and aws CLI
import subprocess  # nosec B404
import sys
import time
import urllib.request
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
STACK = "HyperPodPerf"
CLUSTER = "ml-cluster-p5"  # DEPLOY.md's example, and the example configuration's cluster
NODES = 4
REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def connection_environment(port: int) -> dict[str, str]:
    """Everything that points the CLI, the aws command and boto3 at the local server, offline.

    `localhost`, not 127.0.0.1: moto reads the bucket of a TemplateURL only with that host.
    """
    return {
        "AWS_ENDPOINT_URL": f"http://localhost:{port}",
        "MOTO_PORT": str(port),  # where moto's Step Functions interpreter calls Lambda
        "AWS_ACCESS_KEY_ID": "testing",
        # bandit B105: moto's fake credentials
        "AWS_SECRET_ACCESS_KEY": "testing",  # nosec B105
        # bandit B105: moto's fake credentials
        "AWS_SESSION_TOKEN": "testing",  # nosec B105
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "CDK_DISABLE_VERSION_CHECK": "1",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }


def start_execution_command(deploy_md: Path) -> str:
    """The `aws stepfunctions start-execution` block of DEPLOY.md, exactly as documented."""
    blocks = re.findall(r"```bash\n(.*?)```", deploy_md.read_text(), flags=re.S)
    (command,) = [b for b in blocks if b.startswith("aws stepfunctions start-execution")]
    return command


def run(command: list[str], env: dict[str, str], what: str) -> float:
    started = time.monotonic()
    print(f"$ {' '.join(command[:4])} …  ({what})", flush=True)
    # bandit B603: argv list, no shell
    result = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, check=False)  # nosec B603
    if result.returncode != 0:
        sys.exit(
            f"{what} failed (exit {result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return time.monotonic() - started


def set_moto_config(port: int, config: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/moto-api/config",
        data=json.dumps(config).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    # bandit B310: http://127.0.0.1 moto
    with urllib.request.urlopen(request, timeout=10) as response:  # nosec B310
        response.read()


def seed_cluster(client: Any) -> dict[str, bytes]:
    """The simulated cluster DEPLOY.md's command names; instance id -> what its collector prints."""
    from hyperpod_perf_dev.sim.account import GroupSeed, NodeSeed
    from hyperpod_perf_dev.sim.account import seed_cluster as seed
    from hyperpod_perf_dev.sim.node import simulate_cluster

    nodes = simulate_cluster(NODES, {}, instance_type="ml.p5.48xlarge")
    seeds = [NodeSeed(n.instance_id, az="us-east-1a", az_id="use1-az1", hostname=n.hostname) for n in nodes]
    seed(
        client("sagemaker"),
        CLUSTER,
        [GroupSeed("worker-group-1", "ml.p5.48xlarge", seeds, ["InstanceStress", "InstanceConnectivity"])],
        region=REGION,
        node_recovery="Automatic",
        orchestrator={"Slurm": {}},
    )
    logs = client("logs")
    group = f"/aws/sagemaker/Clusters/{CLUSTER}/{CLUSTER}"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="DeepHealthCheckResults/hpd-sim")
    return {n.instance_id: n.text.encode() for n in nodes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cdk", default="node_modules/.bin/cdk", help="the pinned CDK CLI")
    parser.add_argument("--outdir", default="cdk.out/deploy-local")
    parser.add_argument("--context", default="infra/example-context.json", help="configuration deployed")
    parser.add_argument(
        "--app",
        help="a cloud assembly the same CLI synthesized (make cdk-synth's cdk.out/cli, with the example "
        "configuration); without it the CLI synthesizes into --outdir first",
    )
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)

    import boto3
    from moto.server import ThreadedMotoServer

    from hyperpod_perf_dev.localrun.deployed import (
        UNSUPPORTED_BY_MOTO,
        DeployedStack,
        aws_execution_names,
        executing_state_machine,
        history_catalog,
        running_deployed_handlers,
    )
    from hyperpod_perf_dev.localrun.sessions import instance_of, loopback_sessions
    from hyperpod_perf_dev.sim.account import extended_hyperpod
    from hyperpod_perf_dev.sim.agent import Scenario

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    port = free_port()
    connection = connection_environment(port)
    os.environ.update(connection)
    cli_env = {**os.environ, **connection}
    cdk = [str(REPO / args.cdk)]
    flags = ["--no-notices", "--ci", "-o", args.outdir]
    started = time.monotonic()

    with ExitStack() as stack:
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        stack.callback(server.stop)
        stack.enter_context(extended_hyperpod())
        print(f"moto server on 127.0.0.1:{port}", flush=True)

        def client(service: str) -> Any:
            return boto3.client(service, region_name=REGION)

        assembly = args.app
        if assembly is None:  # bootstrap and deploy then read this one synth (not one each)
            synth = [*cdk, "synth", "--quiet", "-c", f"hyperpod-perf:config={args.context}", *flags]
            took = run(synth, cli_env, "cdk synth")
            print(f"  synthesized in {took:.0f} s", flush=True)
            assembly = args.outdir
        app = ["--app", str(REPO / assembly), "--no-notices", "--ci"]
        took = run([*cdk, "bootstrap", f"aws://{ACCOUNT}/{REGION}", *app], cli_env, "cdk bootstrap")
        print(f"  bootstrapped in {took:.0f} s", flush=True)
        deploy = [*cdk, "deploy", STACK, "--method=direct", "--no-previous-parameters"]
        deploy += ["--require-approval", "never", *app]
        took = run(deploy, cli_env, "cdk deploy")
        print(f"  deployed in {took:.0f} s", flush=True)

        deployed = DeployedStack(STACK, client).read()
        types = sorted({r["Type"] for r in deployed.template["Resources"].values()})
        missing = deployed.missing_resources()
        if missing:
            sys.exit(f"resources neither created nor of a type moto lacks: {missing}")
        stale = deployed.stale_unsupported()
        if stale:
            sys.exit(f"listed as unsupported by moto but created: {stale} (update UNSUPPORTED_BY_MOTO)")
        skipped = sorted({t for t in types if t in UNSUPPORTED_BY_MOTO})
        created = len(deployed.template["Resources"]) - sum(
            1 for r in deployed.template["Resources"].values() if r["Type"] in UNSUPPORTED_BY_MOTO
        )
        print(f"  {created} resources created over {len(types) - len(skipped)} types; not in moto: {skipped}")

        catalog = history_catalog(deployed, ACCOUNT, REGION)
        check_history_catalog(client, catalog)
        print(f"  history catalog through moto's Glue/Athena APIs from the template's properties: {catalog}")

        functions = deployed.functions()
        definition = executing_state_machine(deployed, lambda config: set_moto_config(port, config))
        print(f"  definition registered in moto's executing backend, no '${{' left ({len(definition)} B)")

        outputs_by_node = seed_cluster(client)
        loopback_sessions(stack, lambda target: Scenario(stdout=outputs_by_node[instance_of(target)]))
        stack.enter_context(running_deployed_handlers(functions))
        stack.enter_context(aws_execution_names())

        command = start_execution_command(REPO / "docs" / "DEPLOY.md")
        print("$ " + command.strip().replace("\n", "\n  "), flush=True)
        # bandit B603, B607: DEPLOY.md's command, as documented
        result = subprocess.run(  # nosec B603 B607
            ["bash", "-c", command], env=cli_env, cwd=REPO, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            sys.exit(f"start-execution failed: {result.stdout}\n{result.stderr}")
        execution_arn = json.loads(result.stdout)["executionArn"]
        status = wait(client("stepfunctions"), execution_arn, args.timeout)
        print(f"  execution {execution_arn.rsplit(':', 1)[-1]}: {status['status']}", flush=True)
        if status["status"] != "SUCCEEDED":
            sys.exit(f"the diagnosis ended {status['status']}: {status.get('error')} {status.get('cause')}")

        bucket = deployed.outputs["ReportBucketName"]
        keys = [
            o["Key"]
            for page in client("s3")
            .get_paginator("list_objects_v2")
            .paginate(Bucket=bucket, Prefix=f"reports/{CLUSTER}/")
            for o in page.get("Contents", [])
        ]
        reports = [k for k in keys if k.endswith("/report.json")]
        if not reports:
            sys.exit(f"no report.json in s3://{bucket}/reports/{CLUSTER}/ ({len(keys)} objects)")
        report = json.loads(client("s3").get_object(Bucket=bucket, Key=reports[0])["Body"].read())
        collected = [k for k in keys if "/raw/" in k]
        print(f"  report in the deployed bucket: s3://{bucket}/{reports[0]}")
        print(f"  {len(collected)} raw node snapshots, {len(report.get('findings', []))} findings")
        if len(collected) != NODES:
            sys.exit(f"expected {NODES} raw snapshots, found {len(collected)}")
        history = [
            o["Key"]
            for page in client("s3")
            .get_paginator("list_objects_v2")
            .paginate(Bucket=bucket, Prefix="history/")
            for o in page.get("Contents", [])
        ]
        tables = sorted({k.split("/")[1] for k in history if f"/cluster={CLUSTER}/" in k})
        print(f"  run history in the deployed bucket: {len(history)} object(s), tables {tables}")
        if tables != ["findings", "gpus", "nodes", "pairs"]:
            sys.exit(f"expected the run's history objects of every table, found {history}")
    print(f"deploy-local: OK in {time.monotonic() - started:.0f} s")
    return 0


def check_history_catalog(client: Any, created: dict[str, int]) -> None:
    """Every history table with its columns, and every named question with its SQL, as deployed."""
    from hyperpod_perf.history.queries import QUESTIONS, TABLE_PREFIX
    from hyperpod_perf.history.rows import TABLES
    from infra.constructs.history import DATABASE_NAME, WORKGROUP_NAME

    if created != {"databases": 1, "tables": len(TABLES), "workgroups": 1, "named_queries": len(QUESTIONS)}:
        sys.exit(f"history catalog: unexpected resources {created}")
    glue, athena = client("glue"), client("athena")
    for table, columns in TABLES.items():
        described = glue.get_table(DatabaseName=DATABASE_NAME, Name=f"{TABLE_PREFIX}{table}")["Table"]
        names = [c["Name"] for c in described["StorageDescriptor"]["Columns"]]
        if names != [name for name, _ in columns]:
            sys.exit(f"history table {table}: columns {names} differ from the writer's")
    ids = athena.list_named_queries(WorkGroup=WORKGROUP_NAME)["NamedQueryIds"]
    named = [athena.get_named_query(NamedQueryId=i)["NamedQuery"] for i in ids]
    texts = {q["Name"]: q["QueryString"] for q in named}
    for question in QUESTIONS:
        if texts.get(f"hyperpod-perf {question.name}") != question.sql:
            sys.exit(f"named query {question.name}: not the SQL the CLI runs")


def wait(sfn: Any, execution_arn: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        description = sfn.describe_execution(executionArn=execution_arn)
        if description["status"] != "RUNNING" or time.monotonic() > deadline:
            return description
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
