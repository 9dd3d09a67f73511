"""The domain: plain data the layers pass to one another (no I/O, no AWS, no rules).

findings (Finding, Severity, RunbookSection, Handoff), request (DiagnoseRequest and the input
patterns), report (Report and its parts), cluster (what the adapters return: clusters, nodes, file
systems, metric series, log records), targets (the pipeline's node batches), evaluation (one
node's stored contribution), mounts (which FSx file system a node's mount belongs to).
"""
