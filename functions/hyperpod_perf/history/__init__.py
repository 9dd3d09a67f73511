"""The run history: every run's nodes, findings, GPUs and pairs as rows Athena and DuckDB query.

`rows` turns a report into rows (pure), `encoding` writes them as gzip JSON Lines, `queries` holds
the named questions (one SQL text each, valid in Trino and DuckDB), `offenders` escalates a node's
recurring concern in the report, `repair` judges a node after HyperPod rebooted or replaced it, and
`duck` runs the questions on DuckDB (the CLI and the demo; never imported by a Lambda function).
"""
