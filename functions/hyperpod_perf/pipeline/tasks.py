"""The state machine's Lambda tasks: ASL substitution key -> handler module.

One table shared by the CDK stack (which creates one function per row) and the local run
(which routes moto's Lambda invocations to the same handlers), so the two cannot disagree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: ASL `${...}` key -> module under hyperpod_perf.handlers (entry point `handler`).
TASK_FUNCTIONS: dict[str, str] = {
    "ValidateFunctionArn": "validate",
    "ResolveClusterFunctionArn": "resolve_cluster",
    "CollectNodeFunctionArn": "collect_node",
    "RecordNodeFailureFunctionArn": "record_node_failure",
    "FsxMetricsFunctionArn": "fsx_metrics",
    "ClusterMetricsFunctionArn": "cluster_metrics",
    "ClusterLogsFunctionArn": "cluster_logs",
    "NodePlacementFunctionArn": "node_placement",
    "PlanJobLogsFunctionArn": "plan_job_logs",
    "ScanJobLogsFunctionArn": "scan_job_logs",
    "NcclResultsFunctionArn": "nccl_results",
    "EvaluateFunctionArn": "evaluate",
    "PublishFunctionArn": "publish",
    "ReportProblemFunctionArn": "report_problem",
}

#: Functions outside the state machine.
TRIGGER_FUNCTION = "trigger"

#: Non-function substitutions in the ASL.
BUCKET_SUBSTITUTION = "ReportBucketName"


def handler_entry(module: str) -> str:
    """The Lambda handler string, e.g. `hyperpod_perf.handlers.validate.handler`."""
    return f"hyperpod_perf.handlers.{module}.handler"


def load_handler(module: str) -> Callable[[dict[str, Any], Any], Any]:
    return importlib.import_module(f"hyperpod_perf.handlers.{module}").handler
