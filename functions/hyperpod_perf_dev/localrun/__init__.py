"""Run the real state machine with the real handlers, offline, inside moto.

Used by `hyperpod-perf demo`, the state-machine tests and the benchmarks. moto executes the
ASL itself (its Step Functions interpreter); this package only routes moto's Lambda
invocations to the handler functions in-process and seeds the simulated cluster.
"""
