"""The real-world corpus: load the cases, judge each one with the project's own engine, score.

Each case is one real tool output taken from another project's test data or a public thread
(`cases/<family>/<name>.txt`), described in `cases.toml` with its source and the diagnosis its
source implies, written down before the engine ever saw it. Node sections are wrapped into a
snapshot exactly as collector.sh prints one (a `meta` section, then the case's section between
`=== hpd:begin/end ===` markers) and go through `engine.evaluate_snapshot`; nccl-tests logs go
through `nccl.analysis.analyze_logs`, as `hyperpod-perf nccl analyze` does; a training job's own
logs (section `job-logs`) through `joblogs.analyze_logs`, as `hyperpod-perf logs analyze` does.

Expectation words (per check id):
- `CONCERN`: at least one CONCERN finding of that check;
- `OK`: at least one OK finding of that check and no CONCERN;
- `INFO`: findings of that check, all INFO;
- `no CONCERN`: no CONCERN finding of that check (it may also be absent).
A `collect.node` CONCERN (a parse failure, a damaged snapshot) makes any case wrong unless the
case expects it: a real output the parsers cannot read is a miss, never a pass.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_perf.collect.snapshot import SECTION_ORDER, parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.joblogs import analyze_logs as analyze_job_logs
from hyperpod_perf.nccl.analysis import analyze_logs
from hyperpod_perf.rules.engine import evaluate_snapshot

CORPUS_DIR = Path(__file__).resolve().parent
TESTS_DIR = CORPUS_DIR.parent
CASES_DIR = CORPUS_DIR / "cases"
CASES_FILE = CORPUS_DIR / "cases.toml"
PENDING_FILE = CORPUS_DIR / "pending_fixes.toml"

#: Not a collector section: nccl-tests logs, analysed as `hyperpod-perf nccl analyze` does.
NCCL_SECTION = "nccl-tests"
#: Not a collector section: a training job's own logs, analysed as `hyperpod-perf logs analyze` does.
JOBLOGS_SECTION = "job-logs"
EXPECTATIONS = frozenset({"CONCERN", "OK", "INFO", "no CONCERN"})
#: Where an output was found: a thread (issue / pull request), another project's test data or capture
#: files, its documentation, or another public page (blog post, notes).
KINDS = frozenset({"issue thread", "pull request", "test fixture", "capture", "documentation", "public page"})
REQUIRED = ("id", "section", "source", "kind", "context", "cut", "expected", "decided_before_running")


@dataclass(frozen=True)
class Case:
    id: str
    section: str
    source: str
    kind: str
    context: str
    cut: str
    expected: dict[str, str]
    healthy: bool
    instance_type: str | None = None
    rc: int = 0
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Other nccl-tests cases analysed together with this one (one pair each).
    with_logs: tuple[str, ...] = ()
    #: A real output already kept in tests/fixtures/real/ is used in place (path under tests/).
    file: str | None = None

    @property
    def family(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def path(self) -> Path:
        if self.file:
            return TESTS_DIR / self.file
        return CASES_DIR / f"{self.id}.txt"

    def raw(self) -> str:
        return self.path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class CheckOutcome:
    check: str
    expected: str
    got: str  # e.g. "CONCERN x2, OK x1" or "absent"
    right: bool


@dataclass(frozen=True)
class CaseResult:
    case: Case
    outcomes: tuple[CheckOutcome, ...]
    #: CONCERN findings whose check the case did not expect to be CONCERN.
    unexpected_concerns: tuple[str, ...]
    evidence_misses: tuple[str, ...]

    @property
    def right(self) -> bool:
        return (
            all(o.right for o in self.outcomes) and not self.unexpected_collect and not self.evidence_misses
        )

    @property
    def trivially_right(self) -> bool:
        """Right only because no expected check produced any finding (a check not built yet)."""
        return self.right and all(o.got == "absent" for o in self.outcomes)

    @property
    def unexpected_collect(self) -> bool:
        return "collect.node" in self.unexpected_concerns

    @property
    def false_concern(self) -> bool:
        """A CONCERN on an output its source calls healthy."""
        return self.case.healthy and bool(self.unexpected_concerns)

    def explain(self) -> str:
        wrong = [f"{o.check}: expected {o.expected}, got {o.got}" for o in self.outcomes if not o.right]
        if self.unexpected_collect:
            wrong.append("unexpected collect.node CONCERN (output not read)")
        wrong.extend(self.evidence_misses)
        return "; ".join(wrong) or "right"


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_cases(path: Path = CASES_FILE) -> list[Case]:
    """Every case of cases.toml, validated (a malformed entry raises with its id)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cases = []
    for entry in data.get("case", []):
        missing = [key for key in REQUIRED if key not in entry]
        if missing:
            raise ValueError(f"case {entry.get('id', '?')}: missing {', '.join(missing)}")
        if entry["decided_before_running"] is not True:
            raise ValueError(f"case {entry['id']}: expectation must be decided before running")
        if entry["kind"] not in KINDS:
            raise ValueError(f"case {entry['id']}: kind {entry['kind']!r} not in {sorted(KINDS)}")
        if entry["section"] not in (NCCL_SECTION, JOBLOGS_SECTION) and entry["section"] not in SECTION_ORDER:
            raise ValueError(f"case {entry['id']}: {entry['section']!r} is not a collector section")
        bad = {c: e for c, e in entry["expected"].items() if e not in EXPECTATIONS}
        if bad or not entry["expected"]:
            raise ValueError(f"case {entry['id']}: expectations must be one of {sorted(EXPECTATIONS)}")
        cases.append(
            Case(
                id=entry["id"],
                section=entry["section"],
                source=entry["source"],
                kind=entry["kind"],
                context=entry["context"],
                cut=entry["cut"],
                expected=dict(entry["expected"]),
                healthy=bool(entry.get("healthy", False)),
                instance_type=entry.get("instance_type"),
                rc=int(entry.get("rc", 0)),
                evidence=dict(entry.get("evidence", {})),
                with_logs=tuple(entry.get("with_logs", ())),
                file=entry.get("file"),
            )
        )
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate case ids: {duplicates}")
    return cases


def load_pending(path: Path = PENDING_FILE) -> dict[str, str]:
    """case id -> the gap (issue 14) or finding that makes it fail today."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {entry["id"]: entry["gap"] for entry in data.get("pending", [])}


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def snapshot_text(case: Case) -> str:
    """The case's output wrapped as collector.sh would print it on a node."""
    meta = f"collector_version=1\nhostname=corpus-node\ninstance_type={case.instance_type or ''}\n"
    return render_container([("meta", meta, 0), (case.section, case.raw(), case.rc)])


def findings_for(case: Case, by_id: dict[str, Case] | None = None) -> list[Finding]:
    if case.section == JOBLOGS_SECTION:
        lines = case.path.read_bytes().splitlines()
        return analyze_job_logs([(case.path.name, lines)], case.instance_type)
    if case.section == NCCL_SECTION:
        logs = [(case.path.name, case.raw())]
        for other in case.with_logs:
            other_case = (by_id or {})[other]
            logs.append((other_case.path.name, other_case.raw()))
        return analyze_logs(logs, instance_type=case.instance_type).findings
    return evaluate_snapshot(parse_container(snapshot_text(case), source=f"corpus:{case.id}"))


def _got(findings: list[Finding]) -> str:
    if not findings:
        return "absent"
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.severity.value] = counts.get(finding.severity.value, 0) + 1
    return ", ".join(f"{sev} x{n}" for sev, n in sorted(counts.items()))


def _meets(expected: str, findings: list[Finding]) -> bool:
    severities = {f.severity for f in findings}
    if expected == "CONCERN":
        return Severity.CONCERN in severities
    if expected == "no CONCERN":
        return Severity.CONCERN not in severities
    if expected == "OK":
        return Severity.OK in severities and Severity.CONCERN not in severities
    return bool(severities) and severities == {Severity.INFO}


def _evidence_misses(case: Case, findings: list[Finding]) -> list[str]:
    """`evidence = { "gpu.xid" = { pci = "0000:01:00.0" } }`: some finding of the check carries it."""
    misses = []
    for check, wanted in case.evidence.items():
        of_check = [f for f in findings if f.check == check]
        for key, value in wanted.items():
            if not any(f.evidence.get(key) == value for f in of_check):
                seen = [f.evidence.get(key) for f in of_check]
                misses.append(f"{check}: evidence {key}={value!r} expected, got {seen!r}")
    return misses


def judge(case: Case, findings: list[Finding]) -> CaseResult:
    by_check: dict[str, list[Finding]] = {}
    for finding in findings:
        by_check.setdefault(finding.check, []).append(finding)
    outcomes = tuple(
        CheckOutcome(check, expected, _got(of_check), _meets(expected, of_check))
        for check, expected in case.expected.items()
        for of_check in [by_check.get(check, [])]
    )
    unexpected = tuple(
        sorted(
            {
                f.check
                for f in findings
                if f.severity is Severity.CONCERN and case.expected.get(f.check) != "CONCERN"
            }
        )
    )
    return CaseResult(case, outcomes, unexpected, tuple(_evidence_misses(case, findings)))


def run_case(case: Case, by_id: dict[str, Case] | None = None) -> CaseResult:
    return judge(case, findings_for(case, by_id))


def run_all(cases: Iterable[Case]) -> list[CaseResult]:
    cases = list(cases)
    by_id = {c.id: c for c in cases}
    return [run_case(c, by_id) for c in cases]


@dataclass(frozen=True)
class Score:
    right: int
    total: int
    false_concerns: int
    healthy: int
    #: Right cases whose expected checks gave no finding at all (the check does not exist yet).
    trivial: int = 0

    def line(self) -> str:
        trivial = f" ({self.trivial} of them only because the check they name does not exist yet)"
        return (
            f"{self.right} of {self.total} right{trivial if self.trivial else ''}, "
            f"{self.false_concerns} false CONCERN on {self.healthy} healthy outputs"
        )


def score(results: Iterable[CaseResult]) -> Score:
    results = list(results)
    return Score(
        right=sum(r.right for r in results),
        total=len(results),
        false_concerns=sum(r.false_concern for r in results),
        healthy=sum(r.case.healthy for r in results),
        trivial=sum(r.trivially_right for r in results),
    )
