"""HyperPod health signals from CloudWatch Logs (hand-off: hyperpod-node-debugger § F).

- `health.deep_check`: DeepHealthCheckResults records. Real records come as JSON
  (`{"level": "error", "ts": ..., "msg": "Encountered FaultyInstance. Replace the Instance ..."}`,
  sometimes pretty-printed) or as the node log's plain lines (`<ts> <level> <message>`).
- `health.hma`: Health Monitoring Agent detection events, JSON records carrying
  `"HealthMonitoringAgentDetectionEvent": "HealthEvent"`. Real records vary: the details object
  appears under `details` or `details: `, fields may be null, and a record may be one line or
  pretty-printed.

Parsing is tolerant (a record that cannot be read is kept as raw text in the evidence) because
the point of these checks is not to lose a fault signal HyperPod already raised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from hyperpod_perf.domain.cluster import LogKind, LogRecord
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity

INSTANCE_ID_RE = re.compile(r"\bi-[0-9a-f]{8,17}\b")
PLAIN_LINE_RE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:?\d\d)?)\s+(?P<level>[a-zA-Z]+)\s+(?P<msg>.*)$"
)
FAILED_LEVELS = frozenset({"error", "fatal", "critical", "panic"})
FAILURE_RE = re.compile(
    r"FaultyInstance|Replace the Instance|\bfail(?:ed|ure|s)?\b|replacementRequired:\s*true|"
    r"rebootRequired:\s*true|less than threshold",
    re.IGNORECASE,
)
NCCL_BW_RE = re.compile(
    r"Expected minimum threshold\s*:\s*(?P<expected>\d+(?:\.\d+)?)\s*,\s*"
    r"NCCL Test output Bw\s*:\s*(?P<observed>\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
XID_RE = re.compile(r"Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]+)\):\s*(?P<code>\d+)")
HMA_MARKER = "HealthMonitoringAgentDetectionEvent"
DETAILS_KEYS = ("details", "details: ", "details:", "Details")
MAX_EVENT_FINDINGS = 50
DEEP_CHECK_NEXT_STEP = (
    "HyperPod flags the instance for reboot/replacement when NodeRecovery is Automatic; otherwise "
    "replace it (aws sagemaker batch-replace-cluster-nodes) once the node debugger confirms the fault."
)
HMA_NEXT_STEP = (
    "HMA marks the instance unhealthy; with NodeRecovery=Automatic HyperPod reboots or replaces it. "
    "Confirm the node's state (aws sagemaker describe-cluster-node) and follow the node debugger."
)
DEEP_CHECK_THRESHOLD = "any failed deep health check"
HMA_THRESHOLD = "any HMA detection event"

_Item = TypeVar("_Item")
_Key = TypeVar("_Key", bound=tuple[Any, ...])


def _stream_instance(stream: str) -> str | None:
    """`SagemakerHealthMonitoringAgent/<group>/<instance-id>`, `DeepHealthCheckResults/<id>`."""
    last = stream.rstrip("/").rsplit("/", 1)[-1]
    match = INSTANCE_ID_RE.search(last)
    return match.group(0) if match else None


def _iso(timestamp_ms: int | None) -> str | None:
    if timestamp_ms is None:
        return None
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _concern_per_group(
    check: str,
    items: Iterable[_Item],
    key: Callable[[_Item], _Key],
    describe: Callable[[_Key, list[_Item]], tuple[str, dict[str, Any]]],
    threshold: str,
    next_step: str,
) -> list[Finding]:
    """One § F CONCERN per distinct key (the node first), in order of first appearance.

    A fault HyperPod logs over and over stays one finding per node and message; at most
    MAX_EVENT_FINDINGS of them, so a noisy window cannot flood the report. `describe` turns a
    group into its summary and evidence.
    """
    grouped: dict[_Key, list[_Item]] = {}
    for item in items:
        grouped.setdefault(key(item), []).append(item)
    findings = []
    for group_key, members in list(grouped.items())[:MAX_EVENT_FINDINGS]:
        summary, evidence = describe(group_key, members)
        findings.append(
            Finding(
                node=group_key[0],
                check=check,
                severity=Severity.CONCERN,
                section=RunbookSection.GPU,
                summary=summary,
                evidence=evidence,
                threshold=threshold,
                next_step=next_step,
                handoff=Handoff.NODE_F,
            )
        )
    return findings


def _load_json(text: str) -> Any:
    """A JSON record, also when wrapped in other text (a log prefix before the braces)."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(stripped[start : end + 1])
            except ValueError:
                return None
    return None


# --- deep health checks --------------------------------------------------------------------------


@dataclass(frozen=True)
class DeepHealthEntry:
    node: str | None
    timestamp: str | None
    level: str | None
    message: str
    failed: bool
    stream: str


def parse_deep_health(record: LogRecord) -> list[DeepHealthEntry]:
    """One log event -> its entries (a plain-text event may hold several log lines)."""
    node = _stream_instance(record.stream)
    data = _load_json(record.message)
    if isinstance(data, dict):
        message = str(data.get("msg") or data.get("message") or "")
        level = (str(data.get("level")) if data.get("level") is not None else None) or None
        node = node or _first_instance(message)
        return [
            DeepHealthEntry(
                node=node,
                timestamp=str(data.get("ts")) if data.get("ts") else _iso(record.timestamp_ms),
                level=level,
                message=message,
                failed=_failed(level, message),
                stream=record.stream,
            )
        ]
    entries = []
    for line in record.message.splitlines():
        if not line.strip():
            continue
        match = PLAIN_LINE_RE.match(line.strip())
        level = match["level"].lower() if match else None
        message = match["msg"] if match else line.strip()
        entries.append(
            DeepHealthEntry(
                node=node or _first_instance(message),
                timestamp=match["ts"] if match else _iso(record.timestamp_ms),
                level=level,
                message=message,
                failed=_failed(level, message),
                stream=record.stream,
            )
        )
    return entries


def _first_instance(text: str) -> str | None:
    match = INSTANCE_ID_RE.search(text)
    return match.group(0) if match else None


def _failed(level: str | None, message: str) -> bool:
    return (level or "").lower() in FAILED_LEVELS or bool(FAILURE_RE.search(message))


def deep_check(records: Iterable[LogRecord]) -> list[Finding]:
    """health.deep_check: a failed deep health check in the window -> CONCERN (one per node and message)."""
    entries = [e for r in records if r.kind is LogKind.DEEP_HEALTH for e in parse_deep_health(r)]
    if not entries:
        return [
            Finding(
                check="health.deep_check",
                severity=Severity.INFO,
                section=RunbookSection.COVERAGE,
                summary="no deep health check results in the window",
                evidence={"records": 0},
                next_step="Deep health checks run when nodes are created or replaced, or on demand "
                "(aws sagemaker start-cluster-health-check).",
            )
        ]
    failures = [e for e in entries if e.failed]
    if not failures:
        return [
            Finding(
                check="health.deep_check",
                severity=Severity.OK,
                section=RunbookSection.COVERAGE,
                summary=f"{len(entries)} deep health check record(s) in the window, none failed",
                evidence={"records": len(entries), "nodes": sorted({e.node for e in entries if e.node})},
                threshold=DEEP_CHECK_THRESHOLD,
            )
        ]
    return _concern_per_group(
        "health.deep_check",
        failures,
        lambda entry: (entry.node, entry.message),
        _deep_check_failure,
        DEEP_CHECK_THRESHOLD,
        DEEP_CHECK_NEXT_STEP,
    )


def _deep_check_failure(
    key: tuple[str | None, str], items: list[DeepHealthEntry]
) -> tuple[str, dict[str, Any]]:
    """What one failed check message on one node says, with the NCCL figures when it quotes them."""
    _, message = key
    evidence: dict[str, Any] = {
        "message": message,
        "level": items[0].level,
        "first_seen": items[0].timestamp,
        "occurrences": len(items),
        "stream": items[0].stream,
    }
    bandwidth = NCCL_BW_RE.search(message)
    if bandwidth:
        evidence["nccl_expected_min_bw"] = float(bandwidth["expected"])
        evidence["nccl_observed_bw"] = float(bandwidth["observed"])
    return f"deep health check failed: {message[:200]}", evidence


# --- Health Monitoring Agent -----------------------------------------------------------------------


@dataclass(frozen=True)
class HmaEvent:
    node: str | None
    timestamp: str | None
    severity: str | None
    reason: str | None
    message: str | None
    xid: int | None
    pci: str | None
    raw: str
    parsed: bool


def parse_hma(record: LogRecord) -> HmaEvent | None:
    """One HMA record -> its event; None when it is not a detection event."""
    node = _stream_instance(record.stream)
    data = _load_json(record.message)
    if not isinstance(data, dict):
        if HMA_MARKER not in record.message:
            return None
        return HmaEvent(
            node, _iso(record.timestamp_ms), None, None, None, *_xid(record.message), record.message, False
        )
    if HMA_MARKER not in data and HMA_MARKER not in record.message:
        return None
    details = _details(data)
    message = _text(details.get("message")) or _text(data.get("message"))
    xid, pci = _xid(message or "")
    return HmaEvent(
        node=node or _first_instance(message or ""),
        timestamp=_text(details.get("timestamp")) or _text(data.get("ts")) or _iso(record.timestamp_ms),
        severity=_text(details.get("severity")) or _text(data.get("level")),
        reason=_text(details.get("reason")),
        message=message,
        xid=xid,
        pci=pci,
        raw=record.message,
        parsed=True,
    )


def _details(data: dict[str, Any]) -> dict[str, Any]:
    for key in DETAILS_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            value = _load_json(value)
        if isinstance(value, dict):
            return value
    return {}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _xid(text: str) -> tuple[int | None, str | None]:
    match = XID_RE.search(text)
    if not match:
        return None, None
    return int(match["code"]), match["pci"]


@cache
def _xid_titles() -> dict[str, tuple[str | None, str]]:
    data = json.loads(resources.files("hyperpod_perf.rules").joinpath("xid_actions.json").read_text("utf-8"))
    actions = data["actions"]
    return {
        code: (entry.get("title"), actions[entry["action"]]["summary"])
        for code, entry in data["codes"].items()
    }


def hma(records: Iterable[LogRecord]) -> list[Finding]:
    """health.hma: any Health Monitoring Agent detection event in the window -> CONCERN."""
    events = [e for r in records if r.kind is LogKind.HMA if (e := parse_hma(r)) is not None]
    if not events:
        return [
            Finding(
                check="health.hma",
                severity=Severity.OK,
                section=RunbookSection.GPU,
                summary="no Health Monitoring Agent detection events in the window",
                evidence={"events": 0},
                threshold=HMA_THRESHOLD,
            )
        ]
    return _concern_per_group(
        "health.hma",
        events,
        lambda event: (event.node, event.reason, event.message or event.raw[:300]),
        _hma_detection,
        HMA_THRESHOLD,
        HMA_NEXT_STEP,
    )


def _hma_detection(
    key: tuple[str | None, str | None, str | None], items: list[HmaEvent]
) -> tuple[str, dict[str, Any]]:
    """What one HMA detection on one node says, with NVIDIA's action when it names an Xid."""
    _, reason, message = key
    first = items[0]
    evidence: dict[str, Any] = {
        "reason": reason,
        "message": message,
        "severity": first.severity,
        "first_seen": first.timestamp,
        "occurrences": len(items),
    }
    what = reason or "detection event"
    if first.xid is not None:
        title, action = _xid_titles().get(str(first.xid), (None, "look the code up in NVIDIA's Xid catalog"))
        evidence.update(xid=first.xid, pci=first.pci, xid_title=title, xid_action=action)
        what = f"{reason or 'Xid'}: Xid {first.xid}" + (f" ({title})" if title else "")
    if not first.parsed:
        evidence["raw"] = first.raw[:500]
    return f"Health Monitoring Agent reported {what}", evidence


def evaluate(records: Sequence[LogRecord]) -> list[Finding]:
    return deep_check(records) + hma(records)
