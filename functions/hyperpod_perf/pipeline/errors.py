"""Errors a pipeline step raises on purpose. Their class names are the Lambda `errorType`
that the state machine's Catch/Retry and the problem notification read, so keep them stable."""

from __future__ import annotations


class PipelineError(Exception):
    """Base: the message is written for the operator who receives the notification."""


class InvalidRequest(PipelineError):
    """The execution input is not a valid DiagnoseRequest."""


class ClusterNotFound(PipelineError):
    """No HyperPod cluster by that name or ARN in this account and region."""


class NoTargets(PipelineError):
    """The cluster has no node to diagnose (empty cluster, or none of the named nodes exist)."""


#: What the operator should do next, per error type (used by the problem notification).
NEXT_STEPS: dict[str, str] = {
    "InvalidRequest": (
        'Fix the execution input: {"cluster": "<name or ARN>", "nodes": ["i-…"], "window_minutes": 180}. '
        "See the input schema in docs/DEPLOY.md."
    ),
    "ClusterNotFound": (
        "Check the cluster name and the region: `aws sagemaker list-clusters --region <region>`."
    ),
    "NoTargets": "List the cluster's nodes: `aws sagemaker list-cluster-nodes --cluster-name <name>`.",
    "AccessDenied": "The function's IAM role lacks a permission named in the message; see docs/SECURITY.md.",
    "Throttled": "AWS throttled the diagnosis past its retries; start it again in a few minutes.",
}
