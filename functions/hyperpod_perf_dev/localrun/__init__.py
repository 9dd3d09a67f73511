"""Run the real state machine with the real handlers, offline, inside moto.

`driver.local_pipeline` is the one driver, used by `hyperpod-perf demo`, the state-machine tests
and the benchmarks; `plan` describes what it simulates. moto executes the ASL itself (its Step
Functions interpreter); this package only routes moto's Lambda invocations to the handler
functions in-process, seeds the simulated cluster and injects the SSM side and the faults.
"""
