"""`hyperpod-perf`, the command-line front door: one module per group of sub-commands.

`app` builds the parser and maps errors to exit codes; `common`, `conventions` and `progress` hold
what every sub-command shares (exit codes, AWS options, --format, -o FILE / --out DIR, --quiet, the
progress line on a terminal); the others register their sub-commands (diagnose, logs, nccl,
pipeline, report).
"""

from hyperpod_perf.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
