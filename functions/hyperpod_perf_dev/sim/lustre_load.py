"""A simulated FSx for Lustre load that varies the way a training job's does, for the demo.

Why: a constant series draws a flat line, so the demo's throughput chart showed nothing of what
it is for. A training job reads its data set steadily (with jitter), pauses reads and writes a
checkpoint in a burst every ~30 minutes, and dips during evaluation. This generator draws that
shape from a seeded random generator (deterministic: the same seed gives the same series), then
shifts it so its mean is exactly the utilisation the scenario asks for, so a scenario's figures
("mean 97.0% of provisioned") stay what the scenario says.

This is a model of a load, not a recording of one: label it "simulated" wherever it is shown.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

#: Minutes between checkpoints, and how long a checkpoint's write burst lasts.
CHECKPOINT_EVERY_MIN = 30
CHECKPOINT_MINUTES = 4
#: Minutes between evaluation passes (reads drop while the job evaluates), and their length.
EVAL_EVERY_MIN = 60
EVAL_MINUTES = 3
#: How far reads dip during evaluation, as a share of the mean load.
EVAL_DIP = 0.35
#: Minute-to-minute jitter: AR(1) noise with this persistence and this standard deviation.
JITTER_PERSISTENCE = 0.7
JITTER_SD = 0.025
#: Checkpoint bursts reach at most this share of provisioned throughput.
BURST_CEILING = 1.02


def lustre_load(
    minutes: int, provisioned_bytes_per_s: float, utilization: float, *, seed: int = 11
) -> list[tuple[float, float]]:
    """(read, write) bytes per second for each minute, averaging `utilization` x provisioned."""
    if minutes <= 0:
        return []
    # bandit B311: simulated values
    rng = random.Random(seed)  # nosec B311
    spike = min(1.0, max(0.03, (BURST_CEILING - utilization) / utilization))
    checkpoint_at = rng.randrange(CHECKPOINT_EVERY_MIN)
    eval_at = rng.randrange(EVAL_EVERY_MIN)
    shape: list[float] = []
    in_checkpoint: list[bool] = []
    jitter = 0.0
    for minute in range(minutes):
        jitter = JITTER_PERSISTENCE * jitter + rng.gauss(0.0, JITTER_SD)
        checkpoint = (minute - checkpoint_at) % CHECKPOINT_EVERY_MIN < CHECKPOINT_MINUTES
        evaluating = (minute - eval_at) % EVAL_EVERY_MIN < EVAL_MINUTES
        level = jitter
        if checkpoint:
            level += spike * rng.uniform(0.85, 1.0)
        elif evaluating:
            level -= EVAL_DIP * rng.uniform(0.8, 1.0)
        shape.append(level)
        in_checkpoint.append(checkpoint)
    totals = _with_mean(shape, utilization * provisioned_bytes_per_s, BURST_CEILING * provisioned_bytes_per_s)
    out = []
    for total, checkpoint in zip(totals, in_checkpoint, strict=True):
        write_share = 0.7 if checkpoint else 0.15
        out.append((total * (1 - write_share), total * write_share))
    return out


def _with_mean(shape: list[float], mean: float, ceiling: float) -> list[float]:
    """Scale the shape around `mean`, clip it to 0..ceiling, and shift the unclipped points until the
    series' mean is `mean` again (a few rounds: only the burst tops are clipped)."""
    offset = sum(shape) / len(shape)
    totals = [mean * (1 + level - offset) for level in shape]
    for _ in range(50):
        totals = [min(max(t, 0.0), ceiling) for t in totals]
        free = [i for i, t in enumerate(totals) if 0.0 < t < ceiling]
        error = mean * len(totals) - sum(totals)
        if abs(error) < 1e-9 * mean * len(totals) or not free:
            break
        for i in free:
            totals[i] += error / len(free)
    return totals


def put_lustre_load(client: Any, fs_id: str, start: datetime, samples: list[tuple[float, float]]) -> None:
    """DataReadBytes/DataWriteBytes per minute (the Sum of that minute's bytes), as FSx publishes."""
    data = []
    for minute, (read, write) in enumerate(samples):
        stamp = start + timedelta(minutes=minute)
        for metric, rate in (("DataReadBytes", read), ("DataWriteBytes", write)):
            data.append(
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": "FileSystemId", "Value": fs_id}],
                    "Timestamp": stamp,
                    "Value": rate * 60,
                    "Unit": "Bytes",
                }
            )
    for offset in range(0, len(data), 500):
        client.put_metric_data(Namespace="AWS/FSx", MetricData=data[offset : offset + 500])
