"""Benchmarks for hyperpod-perf, run by `make bench` (`python -m bench`), never by CI.

Each module exposes `run(progress) -> dict` with its figures (see `bench.common.Figure`);
`bench.__main__` runs them all and writes `bench/RESULTS.md` and `bench/results.json`.
"""
