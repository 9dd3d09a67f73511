"""The metrics stage (issue 21) may query the configured clusters' AMP workspaces and nothing else,
read from the synthesized template; a deployment without a workspace grants no aps action at all."""

from __future__ import annotations

import copy

import pytest
from iam_audit import statements
from infra_synth import Synth, example_context, synthesize

AMP_ACTIONS = ["aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics"]


def _grants(synth: Synth, role_prefix: str) -> dict[str, list[str]]:
    grants: dict[str, list[str]] = {}
    for st in statements(synth.template):
        if st.kind == "identity" and st.where.startswith(role_prefix) and st.effect == "Allow":
            for action in st.actions:
                grants.setdefault(action, []).extend(st.resources)
    return grants


def _aps_anywhere(synth: Synth) -> list[str]:
    return sorted({a for st in statements(synth.template) for a in st.actions if a.startswith("aps:")})


def test_cluster_metrics_queries_only_the_configured_workspace(synth: Synth) -> None:
    workspace = synth.context["clusters"][0]["prometheusWorkspaceId"]
    grants = _grants(synth, "FunctionsClusterMetricsRole")
    assert sorted(a for a in grants if a.startswith("aps:")) == AMP_ACTIONS
    for action in AMP_ACTIONS:
        [resource] = grants[action]
        assert resource.endswith(f":workspace/{workspace}") and ":aps:" in resource
    # only the metrics function may query: no other role holds an aps action
    others = [st for st in statements(synth.template) if any(a.startswith("aps:") for a in st.actions)]
    assert {st.where.split("Role")[0] for st in others} == {"FunctionsClusterMetrics"}
    # and it reads its run's cluster file and writes its verdict, under reports/ only
    assert all(r.endswith("/reports/*") for r in grants["s3:GetObject"] + grants["s3:PutObject"])
    assert "s3:ListBucket" not in grants


@pytest.fixture(scope="module")
def synth_without_workspace(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = copy.deepcopy(example_context())
    for cluster in context["clusters"]:
        cluster.pop("prometheusWorkspaceId", None)
    return synthesize(tmp_path_factory.mktemp("cdk.out.no-amp"), context)


def test_without_a_workspace_no_role_may_query_any(synth_without_workspace: Synth) -> None:
    assert _aps_anywhere(synth_without_workspace) == []
