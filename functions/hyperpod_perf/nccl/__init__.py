"""Pairwise NCCL analysis: read nccl-tests logs, find slow pairs, name the node behind them.

Pure modules (no I/O) except `io` (reads files, and S3 through an injected reader) and
`commands` (the CLI's entry points, which may write the report files it is asked for).
"""

#: What `nccl analyze --out DIR` writes there, always under these names (here, not in `commands`,
#: so the CLI's parser names them without importing the analysis).
ANALYZE_OUT_FILES = ("nccl-pairs.json", "nccl-pairs.md", "nccl-pairs.html", "nccl-heatmap.svg")
