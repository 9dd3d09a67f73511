"""Benchmarks for hyperpod-perf, run by `make bench` (`python -m bench`), never by CI.

Each section (bench/sections.py) is a module `bench_<name>.py` with `run(progress) -> BenchResult`
(figures: `bench.common.Figure`); `bench.__main__` re-measures the sections whose inputs changed,
keeps the others, and writes `bench/RESULTS.md` and `bench/results.json` from every kept record.
"""
