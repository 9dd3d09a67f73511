"""The fleet over time: one CloudWatch dashboard next to the per-run reports.

Why: a report answers "what is wrong now"; an operator also asks "since when, how often, and is
it getting worse". The dashboard shows the diagnosis runs, the concerns each check raised over
time (the `Concerns` EMF metric with its `Check` dimension, one line per check id), collection
failures, how long a run takes to reach its findings, and each configured file system's
throughput against what it is provisioned for. Its URL is a stack output and goes into every
report (`DASHBOARD_URL`), so the e-mail and the HTML link to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import ClusterConfig, FsxType

#: Must match functions/hyperpod_perf/handlers/observability.py and lambda_defaults.
NAMESPACE = "HyperPodPerf"
SERVICE = "hyperpod-perf"
MB = 1_000_000
#: Lustre throughput is drawn per 5 minutes: fine enough to see a checkpoint burst.
FS_PERIOD = Duration.minutes(5)
RUN_PERIOD = Duration.hours(1)


def _pipeline(metric_name: str, statistic: str = "Sum", label: str | None = None) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": SERVICE},
        statistic=statistic,
        period=RUN_PERIOD,
        label=label or metric_name,
    )


def concerns_by_check() -> cloudwatch.MathExpression:
    """One line per check id: a SEARCH over the `Concerns` metric's {service, Check} dimension set."""
    return cloudwatch.MathExpression(
        expression=(
            f'SEARCH(\'{{{NAMESPACE},Check,service}} MetricName="Concerns" service="{SERVICE}"\', '
            f"'Sum', {int(RUN_PERIOD.to_seconds())})"
        ),
        using_metrics={},
        period=RUN_PERIOD,
        label="",
    )


def lustre_widgets(clusters: Iterable[ClusterConfig]) -> list[cloudwatch.IWidget]:
    """Read+write MB/s of every configured Lustre file system with its provisioned line."""
    widgets: list[cloudwatch.IWidget] = []
    for cluster in clusters:
        for fs in cluster.fsx:
            if fs.type is not FsxType.LUSTRE:
                continue
            dims = {"FileSystemId": fs.id}
            throughput = cloudwatch.MathExpression(
                expression=f"(r + w) / PERIOD(r) / {MB}",
                using_metrics={
                    "r": cloudwatch.Metric(
                        namespace="AWS/FSx",
                        metric_name="DataReadBytes",
                        dimensions_map=dims,
                        statistic="Sum",
                        period=FS_PERIOD,
                    ),
                    "w": cloudwatch.Metric(
                        namespace="AWS/FSx",
                        metric_name="DataWriteBytes",
                        dimensions_map=dims,
                        statistic="Sum",
                        period=FS_PERIOD,
                    ),
                },
                period=FS_PERIOD,
                label=f"{fs.id} read+write MB/s",
            )
            lines = []
            if fs.provisioned_mbps is not None:
                lines.append(
                    cloudwatch.HorizontalAnnotation(
                        value=fs.provisioned_mbps, label=f"provisioned {fs.provisioned_mbps:,.0f} MB/s"
                    )
                )
            widgets.append(
                cloudwatch.GraphWidget(
                    title=f"{cluster.name}: Lustre {fs.id} throughput vs provisioned",
                    left=[throughput],
                    left_annotations=lines,
                    # No fixed 0: CloudWatch fits the axis to the line and the provisioned mark.
                    left_y_axis=cloudwatch.YAxisProps(label="MB/s", show_units=False),
                    width=12,
                    height=6,
                )
            )
    return widgets


class Dashboard(Construct):
    """The deployment's dashboard; `url` opens it in the console of the stack's region."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.IStateMachine,
        clusters: Sequence[ClusterConfig],
        report_functions: Iterable[lambda_.Function] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        runs = cloudwatch.GraphWidget(
            title="Diagnosis runs (per hour)",
            left=[
                state_machine.metric_started(period=RUN_PERIOD, statistic="Sum", label="started"),
                state_machine.metric_succeeded(period=RUN_PERIOD, statistic="Sum", label="succeeded"),
                state_machine.metric_failed(period=RUN_PERIOD, statistic="Sum", label="failed"),
                state_machine.metric_timed_out(period=RUN_PERIOD, statistic="Sum", label="timed out"),
            ],
            stacked=False,
            width=12,
            height=6,
        )
        concerns = cloudwatch.GraphWidget(
            title="Concerns by check id (per hour)",
            left=[concerns_by_check()],
            width=12,
            height=6,
        )
        failures = cloudwatch.GraphWidget(
            title="Nodes not collected (per hour)",
            left=[_pipeline("CollectionFailures", label="collection failures")],
            width=12,
            height=6,
        )
        timing = cloudwatch.GraphWidget(
            title="Time to findings (seconds from start to report)",
            left=[
                _pipeline("TimeToFindings", "p50", "p50"),
                _pipeline("TimeToFindings", "Maximum", "max"),
            ],
            left_y_axis=cloudwatch.YAxisProps(label="seconds", show_units=False, min=0),
            width=12,
            height=6,
        )
        # Named after the stack, not by CloudFormation: the URL then depends on no resource, so
        # the report function can carry it without a cycle (function -> dashboard -> state
        # machine -> function).
        self.dashboard_name = f"{Aws.STACK_NAME}-fleet"
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=self.dashboard_name,
            default_interval=Duration.days(7),
            widgets=[[runs, concerns], [failures, timing], *_pairs(lustre_widgets(clusters))],
        )
        self.url = (
            f"https://{Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region={Aws.REGION}"
            f"#dashboards/dashboard/{self.dashboard_name}"
        )
        for function in report_functions:
            function.add_environment("DASHBOARD_URL", self.url)


def _pairs(widgets: list[cloudwatch.IWidget]) -> list[list[cloudwatch.IWidget]]:
    return [widgets[i : i + 2] for i in range(0, len(widgets), 2)]
