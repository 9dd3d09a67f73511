"""The report bucket: reports, raw node snapshots, work files and uploaded NCCL logs.

Why S3-managed encryption and not a customer key: every reader of the bucket (eight functions
and the Distributed Map's ItemReader) would need a KMS grant, widening the IAM surface for no
confidentiality gain inside one account. The topic, which crosses to e-mail and Slack, gets a key.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.constructs import acknowledge, acknowledge_checkov

#: Key prefixes the pipeline reads and writes (see the pipeline contract's S3 layout).
REPORTS_PREFIX = "reports/"
NCCL_PREFIX = "nccl/"


class ReportStorage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, retention_days: int) -> None:
        super().__init__(scope, construct_id)
        # Deliver server access logs through a bucket policy (logging.s3.amazonaws.com), not the
        # deprecated LogDeliveryWrite ACL, so the log bucket can enforce bucket-owner ownership.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)

        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "This is the server access log destination of the report bucket; logging a "
            "log bucket into itself would loop.",
        )
        acknowledge_checkov(
            self.access_logs,
            "CKV_AWS_18",
            "This is the server access log destination of the report bucket; logging a log bucket "
            "into itself would loop.",
        )
        acknowledge_checkov(
            self.access_logs,
            "CKV_AWS_21",
            "Server access logs are written once by S3's log delivery and expired by lifecycle; "
            "versions would only keep expired logs.",
        )

        self.bucket = s3.Bucket(
            self,
            "Reports",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=False,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="reports-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-reports",
                    prefix=REPORTS_PREFIX,
                    expiration=Duration.days(retention_days),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="expire-nccl-uploads",
                    prefix=NCCL_PREFIX,
                    expiration=Duration.days(retention_days),
                ),
            ],
            # Reports are evidence an operator may still need after a stack is torn down.
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge_checkov(
            self.bucket,
            "CKV_AWS_21",
            "Each run writes its objects once under its own prefix and the lifecycle expires them "
            "(reportRetentionDays); versioning would keep every expired report's versions. The "
            "functions' roles cannot delete objects.",
        )
