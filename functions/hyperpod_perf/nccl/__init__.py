"""Pairwise NCCL analysis: read nccl-tests logs, find slow pairs, name the node behind them.

Pure modules (no I/O) except `io` (reads files, and S3 through an injected reader) and
`commands` (the CLI's entry points, which may write the report files it is asked for).
"""
