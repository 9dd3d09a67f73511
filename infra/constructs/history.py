"""The run history in Athena: a Glue database and one table per history table (partition projection),
an Athena workgroup whose results stay in the project's bucket, and the named questions.

Why partition projection and no crawler: the partitions are `cluster=<name>/run_date=<date>/`,
known from the key layout alone — `cluster` injected (a query names it: every question starts with
`cluster = ?`), `run_date` a date range up to today — so a new cluster or day is queryable the
moment Evaluate writes it, with no Glue crawler (and no crawler role) in the stack.

The table definitions, the columns and the SQL are read from `hyperpod_perf.history`, the same
modules the Lambda writer and the DuckDB questions use. History and query results expire after
the reports' retention.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_athena as athena
from aws_cdk import aws_glue as glue
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_perf.domain.layout import HISTORY_PREFIX
from hyperpod_perf.history.queries import QUESTIONS, TABLE_PREFIX
from hyperpod_perf.history.rows import PARTITION_KEYS, TABLES

DATABASE_NAME = "hyperpod_perf_history"
WORKGROUP_NAME = "hyperpod-perf"
ATHENA_RESULTS_PREFIX = "athena-results/"
#: The first day the projection enumerates (before the project wrote any history).
PROJECTION_START = "2024-01-01"
#: A question that would scan more than this is cancelled (a cost guard; 10 GB = $0.05 at $5/TB).
BYTES_SCANNED_CUTOFF = 10 * 1024**3

#: Hive text table read by the OpenX JSON SerDe (gzip chosen by the `.gz` suffix).
JSON_SERDE = "org.openx.data.jsonserde.JsonSerDe"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"


def _columns(pairs: tuple[tuple[str, str], ...]) -> list[glue.CfnTable.ColumnProperty]:
    return [glue.CfnTable.ColumnProperty(name=name, type=kind) for name, kind in pairs]


class HistoryCatalog(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, bucket: s3.Bucket, retention_days: int
    ) -> None:
        super().__init__(scope, construct_id)
        account = Stack.of(self).account
        bucket.add_lifecycle_rule(
            id="expire-history", prefix=HISTORY_PREFIX, expiration=Duration.days(retention_days)
        )
        bucket.add_lifecycle_rule(
            id="expire-athena-results",
            prefix=ATHENA_RESULTS_PREFIX,
            expiration=Duration.days(retention_days),
            abort_incomplete_multipart_upload_after=Duration.days(1),
        )

        self.database = glue.CfnDatabase(
            self,
            "Database",
            catalog_id=account,
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=DATABASE_NAME,
                description="hyperpod-perf run history (one object per run and table; see the README)",
            ),
        )
        self.tables: dict[str, glue.CfnTable] = {}
        for table, columns in TABLES.items():
            location = f"s3://{bucket.bucket_name}/{HISTORY_PREFIX}{table}/"
            template = f"{location}cluster=${{cluster}}/run_date=${{run_date}}/"
            cfn_table = glue.CfnTable(
                self,
                f"{table.title()}Table",
                catalog_id=account,
                database_name=DATABASE_NAME,
                table_input=glue.CfnTable.TableInputProperty(
                    name=f"{TABLE_PREFIX}{table}",
                    description=f"hyperpod-perf history: {table}, one object per run",
                    table_type="EXTERNAL_TABLE",
                    partition_keys=_columns(PARTITION_KEYS),
                    parameters={
                        "classification": "json",
                        "compressionType": "gzip",
                        "projection.enabled": "true",
                        "projection.cluster.type": "injected",
                        "projection.run_date.type": "date",
                        "projection.run_date.format": "yyyy-MM-dd",
                        "projection.run_date.range": f"{PROJECTION_START},NOW",
                        "projection.run_date.interval": "1",
                        "projection.run_date.interval.unit": "DAYS",
                        "storage.location.template": template,
                    },
                    storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                        columns=_columns(columns),
                        location=location,
                        input_format=TEXT_INPUT,
                        output_format=TEXT_OUTPUT,
                        compressed=True,
                        serde_info=glue.CfnTable.SerdeInfoProperty(
                            serialization_library=JSON_SERDE,
                            parameters={"ignore.malformed.json": "FALSE", "dots.in.keys": "FALSE"},
                        ),
                    ),
                ),
            )
            cfn_table.node.add_dependency(self.database)
            self.tables[table] = cfn_table

        self.workgroup = athena.CfnWorkGroup(
            self,
            "WorkGroup",
            name=WORKGROUP_NAME,
            description="hyperpod-perf: the run history's questions; results in the project's bucket",
            recursive_delete_option=True,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                bytes_scanned_cutoff_per_query=BYTES_SCANNED_CUTOFF,
                engine_version=athena.CfnWorkGroup.EngineVersionProperty(
                    selected_engine_version="Athena engine version 3"
                ),
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=f"s3://{bucket.bucket_name}/{ATHENA_RESULTS_PREFIX}",
                    expected_bucket_owner=Aws.ACCOUNT_ID,
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_S3"
                    ),
                ),
            ),
        )
        self.named_queries: dict[str, athena.CfnNamedQuery] = {}
        for question in QUESTIONS:
            named = athena.CfnNamedQuery(
                self,
                "".join(part.title() for part in question.name.split("_")) + "Query",
                name=f"hyperpod-perf {question.name}",
                description=f"{question.title} (parameters: {', '.join(question.parameters)})"[:1024],
                database=DATABASE_NAME,
                work_group=self.workgroup.ref,
                query_string=question.sql,
            )
            named.node.add_dependency(self.database)
            self.named_queries[question.name] = named
