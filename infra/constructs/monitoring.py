"""Watching the watcher: the pipeline's own failures reach the same topic as its findings.

Why: a diagnosis that silently fails is indistinguishable from a healthy cluster. Executions that
fail or time out, and events parked in the dead-letter queue, raise alarms on the topic.
Note: a rejected request also ends in a Fail state (after its own notification), so it counts.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.StateMachine,
        dead_letter_queue: sqs.IQueue,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        period = Duration.minutes(5)
        failed = cloudwatch.MathExpression(
            expression="failed + timedout",
            using_metrics={
                "failed": state_machine.metric_failed(period=period, statistic="Sum"),
                "timedout": state_machine.metric_timed_out(period=period, statistic="Sum"),
            },
            period=period,
            label="Executions failed or timed out",
        )
        self.execution_failures = cloudwatch.Alarm(
            self,
            "ExecutionFailures",
            metric=failed,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="hyperpod-perf: a diagnosis execution failed or timed out (see its history).",
        )
        self.dead_letters = cloudwatch.Alarm(
            self,
            "DeadLetters",
            metric=dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=period, statistic="Maximum"
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="hyperpod-perf: trigger events could not be delivered; they wait in the DLQ.",
        )
        for alarm in (self.execution_failures, self.dead_letters):
            alarm.add_alarm_action(actions.SnsAction(topic))
