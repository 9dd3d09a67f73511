"""Small hand-built Reports for the report tests (the big ones come from hyperpod_perf_dev.synthetic)."""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import ClusterSummary, GpuFigure, NodeSummary, Report, RunInfo

HOT = "temperature.gpu >= 88 C"


def finding(
    node: str | None,
    check: str,
    severity: Severity = Severity.CONCERN,
    summary: str = "",
    section: RunbookSection = RunbookSection.GPU,
    **kw: Any,
) -> Finding:
    return Finding(node=node, check=check, severity=severity, section=section, summary=summary or check, **kw)


def node(
    name: str, *, collection: str = "collected", figures: dict[str, float] | None = None, **kw: Any
) -> NodeSummary:
    return NodeSummary(node=name, collection=collection, figures=figures or {}, **kw)


def report(findings: list[Finding], nodes: list[NodeSummary], **kw: Any) -> Report:
    return Report(
        cluster=ClusterSummary(name="c1", node_count=len(nodes)),
        run=RunInfo(location=kw.pop("location", "s3://bucket-a/c1/run1/")),
        findings=findings,
        nodes=nodes,
        **kw,
    )


def hot_gpu(node_name: str, temp: float, gpu: int = 3) -> Finding:
    return finding(
        node_name,
        "gpu.temperature",
        summary=f"GPU {gpu} at {temp:g} °C",
        evidence={"gpu": gpu, "temperature_c": temp},
        threshold=HOT,
        next_step="Check cooling.",
        handoff="hyperpod-node-debugger § G",
    )


def gpus(temp: float, clock: float, count: int = 8) -> list[GpuFigure]:
    return [
        GpuFigure(index=i, temperature_c=temp, sm_clock_mhz=clock, max_sm_clock_mhz=1980.0)
        for i in range(count)
    ]
