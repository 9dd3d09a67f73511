"""Development-only companions of `hyperpod_perf`, kept out of the Lambda code asset.

`sim` (the simulated account, nodes, SSM agents and API), `localrun` (the offline run of the whole
pipeline in moto, one driver) and `synthetic` (deterministic demo reports) serve the demo, the tests and the
benchmarks. Nothing in `hyperpod_perf` imports them, except the `demo` sub-command, lazily.
"""
