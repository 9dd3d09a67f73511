"""ValidateRequest and ReportProblem: the edges of a run, where input is checked and a run that
cannot finish still says why. Kept light: the validate function imports no AWS client."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.layout import RunLayout, safe_segment
from hyperpod_perf.domain.request import (
    CONTEXT_DEPLOYMENT,
    CONTEXT_S3_PREFIXES,
    Deployment,
    DiagnoseRequest,
)
from hyperpod_perf.pipeline.errors import NEXT_STEPS, InvalidRequest

if TYPE_CHECKING:  # the validate function must not pay for botocore
    from hyperpod_perf.aws.s3 import ReportStore


def validate_request(
    raw: Any,
    execution: str,
    started: str,
    *,
    deployment: Deployment | None = None,
    readable_s3_prefixes: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """The execution input as a DiagnoseRequest, and the run's S3 layout.

    `deployment` (the function's own partition, region, account) refuses a cluster ARN this
    deployment cannot reach; `readable_s3_prefixes` refuses an s3:// prefix it was not configured
    to read. Unset (tests of the patterns alone), neither is checked."""
    if not isinstance(raw, dict):
        raise InvalidRequest('the execution input must be a JSON object such as {"cluster": "my-cluster"}')
    context: dict[str, Any] = {}
    if deployment is not None:
        context[CONTEXT_DEPLOYMENT] = deployment
    if readable_s3_prefixes is not None:
        context[CONTEXT_S3_PREFIXES] = readable_s3_prefixes
    try:
        request = DiagnoseRequest.model_validate(raw, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "input"
        raise InvalidRequest(f"invalid request field {where!r}: {err['msg']}") from exc
    run = run_layout(request, execution, started)
    # Only what the caller set travels on: deployment defaults (sample size) can then fill the rest.
    return {"request": request.model_dump(mode="json", exclude_unset=True), "run": run.model_dump()}


def run_layout(request: DiagnoseRequest, execution: str, started: str) -> RunLayout:
    """The run's folder: from the cluster, the execution's start and its name — the one place
    both ValidateRequest and ReportProblem derive it, so neither trusts a `run` from its input."""
    return RunLayout.new(request.cluster_name, execution, parse_time(started))


#: Where ReportInvalidRequest keeps the problem of a request that never became a run: a folder per
#: execution under reports/ (no cluster prefix starts with "_": layout.safe_segment).
REJECTED_PREFIX = "reports/_rejected/"


def problem_key(state: Any, execution: str, started: str, *, rejected: bool) -> str:
    """`problem.json` of this execution, derived by this function, never read from its input.

    A rejected request (ReportInvalidRequest) has no run: its folder is the execution's own under
    `reports/_rejected/`, whatever the input says (another run's `run.prefix`, `outside/`, a
    `request` key). After ValidateRequest (ReportProblem) the state's request is the validated
    one, and its folder is derived again exactly as ValidateRequest derived it."""
    request = state.get("request") if isinstance(state, dict) and not rejected else None
    try:
        return f"{run_layout(DiagnoseRequest.model_validate(request), execution, started).prefix}problem.json"
    except ValidationError:
        stamp = parse_time(started).strftime("%Y%m%dT%H%M%SZ")
        return f"{REJECTED_PREFIX}{stamp}-{safe_segment(execution, 80)}/problem.json"


def parse_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return datetime.now(UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def failure_from_state_error(error: dict[str, Any]) -> tuple[str, str]:
    """(reason, detail) from a Catch block's {Error, Cause}; Cause is the Lambda error JSON."""
    reason = str(error.get("Error") or "Unknown")
    cause = error.get("Cause") or ""
    try:
        detail = json.loads(cause).get("errorMessage") or cause
    except (TypeError, ValueError, AttributeError):
        detail = str(cause)
    return reason, str(detail)[:1000]


def report_problem(
    state: Any,
    execution: str,
    problem: dict[str, Any],
    *,
    store: ReportStore | None,
    notify: Callable[[str, str, dict[str, Any]], str],
    started: str = "",
    rejected: bool = False,
) -> dict[str, Any]:
    """The run could not finish: say so, why, and what to do — never a bare failure."""
    from hyperpod_perf.report.chatbot import render_problem_chatbot  # not on validate's import path

    reason, detail = failure_from_state_error(problem or {})
    state = state if isinstance(state, dict) else {}
    request = state.get("request") or state.get("input") or state
    cluster = request.get("cluster") if isinstance(request, dict) else None
    cluster_text = repr(cluster)[:80] if cluster is not None else "(none given)"
    name = str(cluster)[:40] if cluster else "a cluster"
    subject = f"hyperpod-perf: diagnosis of {name} could not run ({reason})"
    next_step = NEXT_STEPS.get(reason, "Open the execution in the Step Functions console for details.")
    lines = [
        f"The diagnosis could not run: {reason}.",
        "",
        f"Cluster:   {cluster_text}",
        f"Execution: {execution}",
        f"Reason:    {detail}",
        "",
        "What to do: " + next_step,
        "",
        "Nothing was changed on the cluster (hyperpod-perf is read-only).",
    ]
    text = escaping.terminal("\n".join(lines) + "\n")
    subject = escaping.one_line(subject)
    chatbot = render_problem_chatbot(name, reason, detail, next_step, execution)
    if store is not None:
        with contextlib.suppress(AwsAdapterError):  # the notification below still goes out
            store.put_json(
                problem_key(state, execution, started, rejected=rejected),
                {"reason": reason, "detail": detail, "execution": execution},
            )
    message_id = notify(subject, text, chatbot)
    return {"notified": True, "reason": reason, "message_id": message_id}
