"""The diagnosis service: one module per stage, used alike by the CLI, the Lambda handlers and the demo.

resolve -> targets -> collect -> evaluate -> fsx -> logs -> cluster_rules -> report; `diagnosis`
runs them all in one process (the CLI), the pipeline runs them one Lambda step at a time. The
adapters they need are injected through the Protocols in `ports`.
"""
