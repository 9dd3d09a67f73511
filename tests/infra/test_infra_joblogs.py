"""The job-log functions (issue 22) get exactly what they use, read from the synthesized template:
the planner lists the upload prefixes (no GetObject), a map child reads objects (no ListBucket),
and NcclResults queries only the configured log groups with Logs Insights."""

from __future__ import annotations

from iam_audit import statements
from infra_synth import Synth


def _grants(synth: Synth, role_prefix: str) -> dict[str, list[str]]:
    """action -> resources granted by the identity policies of the role whose id starts so."""
    grants: dict[str, list[str]] = {}
    for st in statements(synth.template):
        if st.kind == "identity" and st.where.startswith(role_prefix) and st.effect == "Allow":
            for action in st.actions:
                grants.setdefault(action, []).extend(st.resources)
    return grants


def test_the_planner_only_lists_and_the_map_child_only_reads(synth: Synth) -> None:
    # (the example configuration uploads logs under nccl/ of the project's own bucket)
    assert synth.context.get("ncclResultBuckets") == []
    plan = _grants(synth, "FunctionsPlanJobLogsRole")
    scan = _grants(synth, "FunctionsScanJobLogsRole")
    # the planner: ListBucket (of the bucket, for the nccl/ prefix), PutObject under reports/ only,
    # and it reads no object at all
    assert len(plan["s3:ListBucket"]) == 1 and plan["s3:ListBucket"][0].endswith(".Arn>")
    assert [r.rsplit("/", 1)[-1] for r in plan["s3:PutObject"]] == ["*"]
    assert all(r.endswith("/reports/*") for r in plan["s3:PutObject"])
    assert "s3:GetObject" not in plan
    # the child: GetObject on nccl/ (its batch) and reports/ (the run's cluster file), never a list
    assert "s3:ListBucket" not in scan
    assert sorted(r.split(">/", 1)[1] for r in scan["s3:GetObject"]) == ["nccl/*", "reports/*"]


def test_nccl_results_queries_only_the_configured_groups_with_logs_insights(synth: Synth) -> None:
    grants = _grants(synth, "FunctionsNcclResultsRole")
    groups = synth.context["jobLogGroups"]
    assert len(grants["logs:StartQuery"]) == len(groups)
    assert all(":log-group:" in r for r in grants["logs:StartQuery"])
    assert grants["logs:StartQuery"] == grants["logs:FilterLogEvents"]
    assert grants["logs:GetQueryResults"] == ["*"]
