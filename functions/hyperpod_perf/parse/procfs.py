"""Parsers for host sections read from /proc, /sys and small tools: CPU stat and governors, PSI,
memlock, mounts, df, iostat and key=value version lists.

Each parser is pure and tolerant of what operators paste around the data (shell prompts, command
lines, trailing spaces), but raises on text in which it recognises nothing, so garbage becomes a
collection finding rather than a silently "healthy" host.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from hyperpod_perf.collect.snapshot import parse_key_values
from hyperpod_perf.parse.lines import per_section

#: Shell prompt at the start of a pasted line: `user@host:~$ `, `[root@host dir]# `, `$ `, `# `.
#: The first form means: a first word holding an `@` with one or more characters on both sides and
#: a `:` after the host, the rest of that word free of `$`/`#` up to the prompt's `$`/`#` (at most one
#: blank before it), then a blank. Written as a scan that never revisits a character (possessive
#: loops; a `:` whose following `$`/`#` is not the prompt's is consumed whole), because the plain
#: `\S+@\S+?:` retries every `@` and `:` pair and is quadratic on a long `x@x@...` word.
PROMPT_RE = re.compile(
    r"^\s*(?:\S[^\s@]*+@\S(?:[^\s:]|:[^$#\s]*+[$#](?!\s))*+:[^$#\s]*+\s?[$#]|\[[^\]]+\][$#]|[$#])\s"
)
#: What `cat`/`grep` print when a /proc or /sys file does not exist on this kernel or VM.
UNAVAILABLE_RE = re.compile(
    r"No such file or directory|Operation not supported|cannot open|cannot access", re.I
)


def _is_prompt(line: str) -> bool:
    return bool(PROMPT_RE.match(line))


# --- /proc/stat --------------------------------------------------------------------------------

#: Field order of the aggregate `cpu` line (proc(5)); guest times are already inside user/nice.
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


@dataclass(frozen=True)
class CpuStat:
    """iowait share of the interval between the first and the last `cpu ` sample."""

    iowait_pct: float
    interval_jiffies: int
    samples: int
    deltas: dict[str, int] = field(default_factory=dict)


def parse_cpu_stat(text: str) -> CpuStat:
    """Two (or more) aggregate `cpu ` lines of /proc/stat -> iowait % over the interval."""
    samples: list[dict[str, int]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0] == "cpu":
            if len(parts) <= CPU_FIELDS.index("iowait") + 1:
                # every kernel since 2.6 prints iowait: a shorter line is damaged, not a sample
                raise ValueError(f"`cpu` line of /proc/stat has no iowait column: {line.strip()[:80]!r}")
            samples.append({name: int(value) for name, value in zip(CPU_FIELDS, parts[1:], strict=False)})
    if len(samples) < 2:
        raise ValueError(f"need two `cpu ` samples of /proc/stat to compute iowait, found {len(samples)}")
    first, last = samples[0], samples[-1]
    deltas = {name: last.get(name, 0) - first.get(name, 0) for name in CPU_FIELDS if name in first}
    # guest/guest_nice are counted in user/nice too: leave them out of the total.
    total = sum(v for k, v in deltas.items() if k not in ("guest", "guest_nice"))
    if total <= 0:
        raise ValueError("the two /proc/stat samples are identical or go backwards: no interval to measure")
    return CpuStat(round(100.0 * deltas["iowait"] / total, 2), total, len(samples), deltas)


# --- /proc/pressure/io -------------------------------------------------------------------------

PSI_LINE_RE = re.compile(
    r"^(?P<kind>some|full)\s+avg10=(?P<avg10>[\d.]+)\s+avg60=(?P<avg60>[\d.]+)\s+"
    r"avg300=(?P<avg300>[\d.]+)\s+total=(?P<total>\d+)\s*$"
)


@dataclass(frozen=True)
class PressureLine:
    avg10: float
    avg60: float
    avg300: float
    total_us: int


@dataclass(frozen=True)
class IoPressure:
    some: PressureLine | None = None
    full: PressureLine | None = None
    #: Why there is no data (kernel without PSI, psi=0): the message the read printed.
    unavailable: str | None = None


def parse_io_pressure(text: str) -> IoPressure:
    """`some|full avg10=.. avg60=.. avg300=.. total=..` lines; a missing-file message means no PSI."""
    lines: dict[str, PressureLine] = {}
    unavailable: str | None = None
    unknown: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _is_prompt(line):
            continue
        match = PSI_LINE_RE.match(stripped)
        if match:
            lines[match["kind"]] = PressureLine(
                float(match["avg10"]), float(match["avg60"]), float(match["avg300"]), int(match["total"])
            )
        elif UNAVAILABLE_RE.search(stripped):
            unavailable = stripped
        else:
            unknown.append(stripped)
    if not lines and unavailable is None:
        first = unknown[0][:80] if unknown else "<empty>"
        raise ValueError(f"no PSI line recognised (first line: {first!r})")
    return IoPressure(lines.get("some"), lines.get("full"), unavailable if not lines else None)


# --- CPU frequency governors -------------------------------------------------------------------

GOVERNOR_PAIR_RE = re.compile(r"^(?P<cpu>cpu\d+)\s+(?P<gov>[a-z_]+)$")
GOVERNOR_GREP_RE = re.compile(
    r"^/sys/devices/system/cpu/(?P<cpu>cpu\d+)/cpufreq/scaling_governor:(?P<gov>\S+)$"
)
ANALYZING_RE = re.compile(r"^analyzing CPU (?P<n>\d+):")
POLICY_GOVERNOR_RE = re.compile(r'The governor "(?P<gov>[^"]+)" may decide')
DRIVER_RE = re.compile(r"^driver:\s*(?P<driver>\S+)")
NO_DRIVER_RE = re.compile(r"no or unknown cpufreq driver", re.I)


@dataclass(frozen=True)
class CpuGovernors:
    """Governor per CPU; a later reading of the same CPU replaces an earlier one."""

    by_cpu: dict[str, str] = field(default_factory=dict)
    driver: str | None = None
    #: Set when the node says cpufreq is not there (typical of VMs): the message printed.
    unavailable: str | None = None

    def counts(self) -> dict[str, int]:
        result: dict[str, int] = {}
        for governor in self.by_cpu.values():
            result[governor] = result.get(governor, 0) + 1
        return dict(sorted(result.items()))


@per_section
def parse_cpu_governor(text: str) -> CpuGovernors:
    """`cpuN governor` lines, `grep .` over scaling_governor, or cpupower/cpufreq-info reports."""
    by_cpu: dict[str, str] = {}
    driver: str | None = None
    unavailable: str | None = None
    analyzing: str | None = None
    unknown: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _is_prompt(line):
            continue
        pair = GOVERNOR_PAIR_RE.match(stripped) or GOVERNOR_GREP_RE.match(stripped)
        if pair:
            by_cpu[pair["cpu"]] = pair["gov"]
            continue
        if match := ANALYZING_RE.match(stripped):
            analyzing = f"cpu{match['n']}"
        elif match := POLICY_GOVERNOR_RE.search(stripped):
            by_cpu[analyzing or "cpu0"] = match["gov"]
        elif match := DRIVER_RE.match(stripped):
            driver = match["driver"]
        elif UNAVAILABLE_RE.search(stripped) or NO_DRIVER_RE.search(stripped):
            unavailable = stripped
        else:
            unknown.append(stripped)
    if not by_cpu and unavailable is None and unknown and analyzing is None:
        raise ValueError(f"no CPU governor recognised (first line: {unknown[0][:80]!r})")
    return CpuGovernors(by_cpu, driver, unavailable if not by_cpu else None)


# --- ulimit -l ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Memlock:
    unlimited: bool
    kib: int | None = None


def parse_memlock(text: str) -> Memlock:
    """`ulimit -l`: `unlimited` or a size in KiB."""
    values = [line.strip() for line in text.splitlines() if line.strip() and not _is_prompt(line)]
    if not values:
        raise ValueError("ulimit -l printed nothing")
    value = values[-1]
    if value == "unlimited":
        return Memlock(True)
    if value.isdigit():
        return Memlock(False, int(value))
    raise ValueError(f"ulimit -l printed {value[:80]!r}, expected `unlimited` or a number")


# --- mounts ------------------------------------------------------------------------------------

#: Lustre client device: `<nid>@<lnd>[n]:/<fsname>[/subdir]`; FSx calls the fsname the MountName.
LUSTRE_SOURCE_RE = re.compile(r"^(?P<nid>[^@\s]+)@(?P<net>[a-z]+\d*):/(?P<fsname>[^/\s]+)(?P<subdir>/\S*)?$")
OCTAL_ESCAPE_RE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    device: str
    mountpoint: str
    fstype: str
    options: tuple[str, ...] = ()

    @property
    def lustre_mount_name(self) -> str | None:
        """`10.1.71.197@tcp:/oyuutbev` -> `oyuutbev` (the FSx for Lustre MountName)."""
        match = LUSTRE_SOURCE_RE.match(self.device)
        return match["fsname"] if match else None

    @property
    def lustre_nid(self) -> str | None:
        match = LUSTRE_SOURCE_RE.match(self.device)
        return f"{match['nid']}@{match['net']}" if match else None

    @property
    def is_lustre(self) -> bool:
        return self.fstype == "lustre"


def parse_mounts(text: str) -> list[Mount]:
    """/proc/mounts or fstab lines (`device mountpoint fstype options ...`) or a `findmnt` table."""
    mounts: list[Mount] = []
    unknown: list[str] = []
    header: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or _is_prompt(line) or stripped.startswith("---"):
            continue
        parts = stripped.split()
        if parts[0] == "TARGET" and "SOURCE" in parts:
            header = parts
            continue
        if header is not None and len(parts) >= len(header) - 1:
            row = dict(zip(header, parts, strict=False))
            if "TARGET" in row and "SOURCE" in row:
                mounts.append(
                    Mount(
                        row["SOURCE"],
                        row["TARGET"],
                        row.get("FSTYPE", ""),
                        tuple(row.get("OPTIONS", "").split(",")) if row.get("OPTIONS") else (),
                    )
                )
                continue
        if len(parts) >= 4 and (parts[1].startswith("/") or parts[1] in ("none", "swap")):
            mounts.append(
                Mount(_unescape(parts[0]), _unescape(parts[1]), parts[2], tuple(parts[3].split(",")))
            )
        else:
            unknown.append(stripped)
    if unknown and not mounts:
        raise ValueError(f"no mount line recognised (first line: {unknown[0][:80]!r})")
    return mounts


def _unescape(value: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal (`\\040`)."""
    return OCTAL_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 8)), value)


# --- df ----------------------------------------------------------------------------------------

HUMAN_SIZE_RE = re.compile(r"^(?P<num>\d+(?:[.,]\d+)?)(?P<unit>[KMGTPEZY]?)i?B?$", re.I)
BINARY_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6, "Z": 7, "Y": 8}


@dataclass(frozen=True)
class DfRow:
    filesystem: str
    size_bytes: int
    used_bytes: int
    avail_bytes: int
    use_pct: int | None
    mountpoint: str

    @property
    def used_pct(self) -> float:
        """Use% as printed, or used / (used + avail) as df computes it when it printed `-`."""
        if self.use_pct is not None:
            return float(self.use_pct)
        denominator = self.used_bytes + self.avail_bytes
        return round(100.0 * self.used_bytes / denominator, 1) if denominator else 0.0


def human_to_bytes(value: str, *, block_bytes: int | None = None) -> int:
    """`146G`, `1.2T`, `765M`, `0` (binary powers, as `df -h`/`lfs df -h` print) or a block count."""
    if block_bytes is not None:
        return int(value) * block_bytes
    match = HUMAN_SIZE_RE.match(value)
    if not match:
        raise ValueError(f"not a size: {value!r}")
    size = float(match["num"].replace(",", ".")) * 1024 ** BINARY_POWERS[match["unit"].upper()]
    if not math.isfinite(size):
        # a 400-digit number reads as float inf, which round() refuses with OverflowError
        raise ValueError(f"size out of range: {value[:40]!r}")
    return round(size)


def parse_df(text: str) -> list[DfRow]:
    """`df -kP`, `df -h` or plain `df` output; prompt lines are skipped, wrapped device names joined."""
    rows: list[DfRow] = []
    block_bytes: int | None = None
    seen_header = False
    pending_device: str | None = None
    unknown: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _is_prompt(line):
            continue
        parts = stripped.split()
        if parts[0] == "Filesystem" and len(parts) > 1:  # a bare word is not df's header
            seen_header = True
            block_bytes = _df_block_bytes(parts[1])
            continue
        if not seen_header:
            unknown.append(stripped)
            continue
        if len(parts) == 1:
            pending_device = parts[0]  # old df wraps a long device name onto its own line
            continue
        if pending_device is not None and len(parts) >= 5 and _looks_numeric(parts[0]):
            parts = [pending_device, *parts]
        pending_device = None
        row = _df_row(parts, block_bytes)
        if row is None:
            unknown.append(stripped)
        else:
            rows.append(row)
    if not rows and (unknown or seen_header is False) and text.strip():
        first = unknown[0][:80] if unknown else "<no rows>"
        raise ValueError(f"no df row recognised (first line: {first!r})")
    return rows


def _df_block_bytes(column: str) -> int | None:
    """`1K-blocks` / `1024-blocks` -> 1024; `Size` (human-readable) -> None."""
    match = re.match(r"^(\d+)([KMG]?)-blocks$", column)
    if not match:
        return None
    return int(match[1]) * 1024 ** BINARY_POWERS[match[2]]


def _looks_numeric(value: str) -> bool:
    return bool(HUMAN_SIZE_RE.match(value)) or value == "-"


def _df_row(parts: list[str], block_bytes: int | None) -> DfRow | None:
    if len(parts) < 6:
        return None
    filesystem, size, used, avail, pct = parts[:5]
    mountpoint = " ".join(parts[5:])
    try:
        sizes = [0 if v == "-" else human_to_bytes(v, block_bytes=block_bytes) for v in (size, used, avail)]
    except ValueError:
        return None
    if pct != "-" and not re.match(r"^\d+%$", pct):
        return None
    use_pct = None if pct == "-" else int(pct.rstrip("%"))
    return DfRow(filesystem, sizes[0], sizes[1], sizes[2], use_pct, mountpoint)


# --- versions ----------------------------------------------------------------------------------


def parse_versions(text: str) -> dict[str, str]:
    """key=value lines (driver, cuda, efa_installer, ...); blank values mean "unknown on the host"."""
    return parse_key_values(text)


# --- iostat (informative: the iowait rule uses /proc/stat) -------------------------------------


@dataclass(frozen=True)
class IostatReport:
    cpu: dict[str, float] = field(default_factory=dict)
    devices: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def iowait_pct(self) -> float | None:
        return self.cpu.get("iowait")


@dataclass(frozen=True)
class Iostat:
    """Every report iostat printed. The first is since boot; `last` is the latest interval."""

    reports: tuple[IostatReport, ...]
    banner: str | None = None

    @property
    def last(self) -> IostatReport:
        return self.reports[-1]


def parse_iostat(text: str) -> Iostat:
    """`iostat [-x] [interval [count]]` reports: avg-cpu percentages and the device table(s)."""
    reports: list[IostatReport] = []
    banner: str | None = None
    cpu_header: list[str] | None = None
    device_header: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            device_header = None
            continue
        if _is_prompt(line):
            continue
        if stripped.startswith("Linux ") and banner is None:
            banner = " ".join(stripped.split())
            continue
        parts = stripped.split()
        if parts[0] == "avg-cpu:":
            cpu_header = [p.lstrip("%") for p in parts[1:]]
            reports.append(IostatReport())
            continue
        if cpu_header is not None:
            reports[-1].cpu.update(zip(cpu_header, (float(p) for p in parts), strict=False))
            cpu_header = None
            continue
        if parts[0].rstrip(":") == "Device":
            device_header = parts[1:]
            if not reports:
                reports.append(IostatReport())
            continue
        if device_header is not None and len(parts) == len(device_header) + 1:
            reports[-1].devices[parts[0]] = {
                name: float(value) for name, value in zip(device_header, parts[1:], strict=True)
            }
    if not reports:
        raise ValueError("no iostat report (no avg-cpu or Device header) recognised")
    return Iostat(tuple(reports), banner)
