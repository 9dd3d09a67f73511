"""`hyperpod-perf`, the command-line front door: one module per group of sub-commands.

`app` builds the parser and maps errors to exit codes; `common` and `conventions` hold what every
sub-command shares (exit codes, AWS options, --format/--out/--quiet); the others register their
sub-commands (diagnose, logs, nccl, pipeline, report).
"""

from hyperpod_perf.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
