"""Simulated HyperPod nodes: realistic collector output with planted faults, for the demo and tests.

Import from `hyperpod_perf_dev.sim.node` (kept out of this package's namespace so that
`python -m hyperpod_perf_dev.sim.node` runs without a double import).
"""
