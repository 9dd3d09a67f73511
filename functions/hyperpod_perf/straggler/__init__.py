"""The straggler named from the job's own timing records: `nccl.straggler`.

The job already records who is late: NCCL Inspector's per-collective execution times, PyTorch's
flight-recorder dumps, Megatron-LM's per-rank timers and straggler detector, nvidia-resiliency-ext's
performance scores. `model` keeps what they say in bounded state, one reader per format
(`inspector`, `flight_recorder`, `trainer`), and `analysis` names the rank, host and process
whose collectives start late, with what it costs, or the rank a hang is waiting for. Pure: the
job-log scan hands the bytes in (`joblogs.scan_logs` recognises each file's format).
"""

from __future__ import annotations

from hyperpod_perf.straggler.analysis import CHECK, straggler_findings
from hyperpod_perf.straggler.model import Identity, TimingState

__all__ = ["CHECK", "Identity", "TimingState", "straggler_findings"]
