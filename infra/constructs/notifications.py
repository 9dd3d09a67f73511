"""Where findings go: one KMS-encrypted SNS topic, e-mail subscriptions, optional Slack.

Why a customer key: SNS's AWS-managed key cannot be granted to CloudWatch, so alarm actions on an
encrypted topic need a key of our own. Its policy names each permitted use explicitly (no
`kms:*`), so the IAM audit can read it like any other policy.
"""

from __future__ import annotations

from aws_cdk import Duration, Names, RemovalPolicy, Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.config import SlackConfig

#: What the account's administrators may do with the key: manage it, never use it to read.
KEY_ADMIN_ACTIONS = (
    "kms:DescribeKey",
    "kms:GetKeyPolicy",
    "kms:PutKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:EnableKeyRotation",
    "kms:ListResourceTags",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:UpdateKeyDescription",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
)
#: What a publisher needs to publish to an SSE-KMS topic.
KEY_PUBLISH_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


class Notifications(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        emails: tuple[str, ...],
        slack: SlackConfig | None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        account_root = iam.AccountRootPrincipal()

        # In a key policy `Resource: *` means "this key". The account root keeps administration
        # (so the key can never become unmanageable) and the publish actions, which lets the
        # publishing roles' own IAM statements take effect; CloudWatch may publish alarm actions.
        self.key = kms.Key(
            self,
            "TopicKey",
            description="hyperpod-perf notification topic encryption",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
            pending_window=Duration.days(7),
            policy=iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        sid="AccountAdministersKey",
                        principals=[account_root],
                        actions=list(KEY_ADMIN_ACTIONS),
                        resources=["*"],
                    ),
                    iam.PolicyStatement(
                        sid="AccountRolesMayPublish",
                        principals=[account_root],
                        actions=list(KEY_PUBLISH_ACTIONS),
                        resources=["*"],
                    ),
                    iam.PolicyStatement(
                        sid="CloudWatchAlarmsMayPublish",
                        principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                        actions=list(KEY_PUBLISH_ACTIONS),
                        resources=["*"],
                        conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
                    ),
                ]
            ),
        )

        self.topic = sns.Topic(
            self,
            "Topic",
            display_name="hyperpod-perf findings",
            master_key=self.key,
            enforce_ssl=True,
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccount",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            )
        )
        for email in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))

        self.slack: chatbot.SlackChannelConfiguration | None = None
        if slack is not None:
            # The channel's role gets no policies: it only relays notifications, it runs nothing.
            self.slack = chatbot.SlackChannelConfiguration(
                self,
                "Slack",
                slack_channel_configuration_name=Names.unique_resource_name(
                    self, max_length=128, separator="-"
                ),
                slack_workspace_id=slack.workspace_id,
                slack_channel_id=slack.channel_id,
                notification_topics=[self.topic],
                logging_level=chatbot.LoggingLevel.ERROR,
                # Caps whatever a channel member could ever do through Chatbot at read-only.
                guardrail_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("ReadOnlyAccess")],
            )
