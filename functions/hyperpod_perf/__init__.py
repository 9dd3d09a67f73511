"""hyperpod-perf: a read-only performance debugger for SageMaker HyperPod clusters."""

__version__ = "0.1.0"
