"""Parsers for the EFA sections: port states, hardware counters and `fi_info -p efa`.

The collector prints sysfs values as `<device> <value>` lines, but operators paste the same data
in other shapes (`grep .` over sysfs, a `name :value` listing, the EFA node-exporter's Prometheus
exposition), so each parser accepts those too: the rules only care about device names, states and
counter values. Lines that are clearly not data (shell prompts, ssh warnings) are skipped; a
section that holds no recognisable line at all raises, so the engine reports it as a collection
problem instead of treating garbage as "no devices".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property

from hyperpod_perf.parse.lines import per_line, per_section

#: `ports/1/state` reads `<number>: <NAME>` (IB states: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER).
PORT_LINE_RE = re.compile(r"^(?P<dev>[A-Za-z0-9_.-]+)\s+(?P<code>\d+):\s*(?P<state>[A-Z_]+)\s*$")
#: The same value read with `grep . /sys/class/infiniband/*/ports/*/state`.
PORT_GREP_RE = re.compile(
    r"^/sys/class/infiniband/(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/state:(?P<code>\d+):\s*(?P<state>[A-Z_]+)\s*$"
)
#: Messages a sysfs read prints on a node without the file (no EFA driver / no device).
MISSING_FILE_RE = re.compile(r"No such file or directory|cannot access|Operation not supported", re.I)
#: `<dev> cat: .../state: Input/output error`: the device exists but its state could not be read.
#: Two patterns rather than one `<dev>\s+.*(?:reasons).*$`: that form backtracks quadratically on a
#: long blank run (an 80 KB line took minutes); the device is matched once, then a reason searched.
DEVICE_THEN_BLANK_RE = re.compile(r"^(?P<dev>[A-Za-z0-9_.-]+)\s", re.I)
UNREADABLE_REASON_RE = re.compile(
    r"No such file|Permission denied|Input/output error|Invalid argument|cannot|<unreadable>", re.I
)
#: State recorded for a port whose state file could not be read (it is not ACTIVE).
UNREADABLE = "UNREADABLE"
#: A shell prompt: `user@host:path$ `, `user@host:~/my dir# `, `[user@host dir]$ `, `$ `.
#: The first form means: a first word holding an `@` with one or more characters on both sides,
#: then a `:` or `~` in that word after the host, then the next `$`/`#` (spaces allowed before it)
#: followed by a blank. Written as a scan that never revisits a character (possessive loops; a
#: `:`/`~` whose next `$`/`#` is not followed by a blank is consumed whole), because the plain
#: `\S+@\S+[:~][^$#]*[$#]` retries every `@` and `:` pair and is quadratic on a long `x@x@...` word.
PROMPT_RE = re.compile(
    r"^(\S[^\s@]*+@\S(?:[^\s:~]|[:~][^$#\s]*+[$#](?!\s))*+[:~][^$#]*+[$#]|\[[^\]]+\][$#]|[$#])\s"
)


@dataclass(frozen=True)
class EfaPort:
    device: str
    port: int
    state_code: int
    state: str

    @property
    def active(self) -> bool:
        return self.state == "ACTIVE"


@dataclass(frozen=True)
class EfaPorts:
    ports: tuple[EfaPort, ...]
    #: Lines that said the sysfs file is missing (kept as evidence for "no device").
    missing_notes: tuple[str, ...] = ()

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.device for p in self.ports))

    @property
    def down(self) -> tuple[EfaPort, ...]:
        return tuple(p for p in self.ports if not p.active)


def _is_noise(line: str) -> bool:
    return not line.strip() or bool(PROMPT_RE.match(line))


def _unreadable_device(line: str) -> str | None:
    """The device of a `<dev> <error saying the state could not be read>` line, else None."""
    match = DEVICE_THEN_BLANK_RE.match(line)
    if match is None or UNREADABLE_REASON_RE.search(line, match.end()) is None:
        return None
    return match["dev"]


@per_section
def parse_efa_ports(text: str) -> EfaPorts:
    """`<dev> 4: ACTIVE` lines (or their `grep .` form). Empty output means no EFA device."""
    ports: list[EfaPort] = []
    missing: list[str] = []
    unknown: list[str] = []
    for line in text.splitlines():
        if _is_noise(line):
            continue
        stripped = line.strip()
        match = PORT_LINE_RE.match(stripped)
        if match:
            ports.append(EfaPort(match["dev"], 1, int(match["code"]), match["state"]))
            continue
        match = PORT_GREP_RE.match(stripped)
        if match:
            ports.append(EfaPort(match["dev"], int(match["port"]), int(match["code"]), match["state"]))
        elif (device := _unreadable_device(stripped)) is not None and not stripped.startswith(
            ("cat:", "grep:")
        ):
            ports.append(EfaPort(device, 1, -1, UNREADABLE))
        elif MISSING_FILE_RE.search(stripped):
            missing.append(stripped)
        else:
            unknown.append(stripped)
    if unknown and not ports and not missing:
        raise ValueError(f"no EFA port state line recognised (first line: {unknown[0][:80]!r})")
    return EfaPorts(tuple(ports), tuple(missing))


# --- hardware counters -------------------------------------------------------------------------

COUNTER_TRIPLE_RE = re.compile(r"^(?P<dev>[A-Za-z0-9_.-]+)\s+(?P<name>[a-z][a-z0-9_]*)\s+(?P<value>-?\d+)$")
COUNTER_UNREADABLE_RE = re.compile(r"^(?P<dev>[A-Za-z0-9_.-]+)\s+(?P<name>[a-z][a-z0-9_]*)\s+<unreadable>$")
COUNTER_GREP_RE = re.compile(
    r"^/sys/class/infiniband/(?P<dev>[^/\s]+)/ports/\d+/hw_counters/(?P<name>[a-z0-9_]+):(?P<value>-?\d+)$"
)
#: A `name :value` listing (as in `for f in hw_counters/*; do echo "$(basename $f) :$(cat $f)"`).
COUNTER_COLON_RE = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)\s*:\s*(?P<value>-?\d+)$")
#: Prometheus exposition of the EFA node-exporter collector: node_amazonefa_<counter>{device="..",port=".."}.
PROM_RE = re.compile(
    r"^node_amazonefa_(?P<name>[a-z0-9_]+)\{(?P<labels>[^}]*)\}\s+(?P<value>[-+0-9.eE]+|NaN)(?:\s+\d+)?$"
)
#: Tried only where a run of name characters starts (the lookbehind): from any later offset of the
#: same run it would reach the same `="` or fail the same way, so the matches are those of the plain
#: pattern, without rescanning a long run from each of its characters (quadratic).
PROM_LABEL_RE = re.compile(r'(?<![A-Za-z0-9_])[0-9]*+(?P<key>[A-Za-z_][A-Za-z0-9_]*+)="(?P<value>[^"]*)"')
HEADING_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
RULE_LINE_RE = re.compile(r"^-{3,}$")
#: Device key used when a listing names no device (one anonymous block).
UNNAMED_DEVICE = "unnamed"


@dataclass(frozen=True)
class EfaCounters:
    """Counter values per device; the device key is a heading for listings that name none."""

    devices: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Which input shape was recognised: "triples", "sysfs-grep", "listing" or "prometheus".
    form: str = "triples"
    #: `<dev> <counter>` pairs whose file could not be read (the collector prints `<unreadable>`).
    unreadable: tuple[str, ...] = ()

    def value(self, device: str, counter: str) -> int | None:
        return self.devices.get(device, {}).get(counter)


def parse_efa_counters(text: str) -> EfaCounters:
    """`<dev> <counter> <value>` lines; also `grep .` paths, `name :value` listings and `.prom` text."""
    devices: dict[str, dict[str, int]] = {}
    forms: list[str] = []
    unknown: list[str] = []
    unreadable: list[str] = []
    heading: str | None = None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        # The collector's own form first (~740 lines on a p5): a triple can be neither noise, a
        # comment nor a rule line (its device and counter names hold no `@`, `$`, `#` or `-` run).
        triple = _triple(stripped)
        if triple is not None:
            device, name, value = triple
            devices.setdefault(device, {})[name] = value
            forms.append("triples")
            continue
        if _is_noise(line) or stripped.startswith("#") or RULE_LINE_RE.match(stripped):
            continue
        parsed = _counter_line(stripped)
        if parsed is not None:
            form, device, name, value = parsed
            if device is None:
                device = heading or UNNAMED_DEVICE
            devices.setdefault(device, {})[name] = value
            forms.append(form)
            continue
        if (bad := COUNTER_UNREADABLE_RE.match(stripped)) is not None:
            devices.setdefault(bad["dev"], {})
            unreadable.append(f"{bad['dev']} {bad['name']}")
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if HEADING_RE.match(stripped) and RULE_LINE_RE.match(following):
            heading = stripped  # `client` / `----------` block title in a pasted listing
        elif stripped.startswith("node_"):
            continue  # other node-exporter series (scrape duration etc.)
        elif MISSING_FILE_RE.search(stripped):
            continue
        else:
            unknown.append(stripped)
    if unknown and not devices:
        raise ValueError(f"no EFA counter line recognised (first line: {unknown[0][:80]!r})")
    form = max(set(forms), key=forms.count) if forms else "triples"
    return EfaCounters(devices, form, tuple(unreadable))


@per_line
def _triple(line: str) -> tuple[str, str, int] | None:
    """`rdmap113s0 rx_drops 0` -> ('rdmap113s0', 'rx_drops', 0). Cached: the error counters, zero
    on a healthy node, are the same lines on every healthy node of a type."""
    triple = COUNTER_TRIPLE_RE.match(line)
    return None if triple is None else (triple["dev"], triple["name"], int(triple["value"]))


def _counter_line(line: str) -> tuple[str, str | None, str, int] | None:
    match = COUNTER_TRIPLE_RE.match(line)
    if match:
        return "triples", match["dev"], match["name"], int(match["value"])
    match = COUNTER_GREP_RE.match(line)
    if match:
        return "sysfs-grep", match["dev"], match["name"], int(match["value"])
    match = COUNTER_COLON_RE.match(line)
    if match:
        return "listing", None, match["name"], int(match["value"])
    match = PROM_RE.match(line)
    if match and match["value"] != "NaN":
        labels = {m["key"]: m["value"] for m in PROM_LABEL_RE.finditer(match["labels"])}
        device = labels.get("device")
        if device:
            value = float(match["value"])
            if not math.isfinite(value):
                # `1e999` reads as inf: no counter holds that, and round() would raise OverflowError
                raise ValueError(f"EFA counter value out of range: {line[:120]!r}")
            return "prometheus", device, match["name"], round(value)
    return None


# --- fi_info -----------------------------------------------------------------------------------

#: Launcher prefixes: Open MPI `--tag-output` (`[1,0]<stdout>:`) and Slurm/torchrun style `0: `.
LAUNCHER_PREFIX_RE = re.compile(r"^(?:\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:|(?P<srank>\d+): )")
#: The value runs to the last non-blank (`.*\S`, one backtrack) rather than `.*?\s*$`, which retries
#: the trailing-blank check at every character (quadratic on a long blank run).
FI_FIELD_RE = re.compile(
    r"^\s*(?P<key>provider|fabric|domain|version|type|protocol):\s*(?P<value>(?:.*\S)?)\s*$"
)
FI_GETINFO_ERROR_RE = re.compile(r"fi_getinfo:\s*(?P<code>-?\d+)\s*(?P<detail>.*)$")
SSH_WARNING_RE = re.compile(r"^Warning: Permanently added .* to the list of known hosts\.?$")
#: `efa_0-rdm`, `rdmap16s27-dgrm`: the domain is the device name plus the endpoint flavour.
DOMAIN_SUFFIX_RE = re.compile(r"-(?:rdm|dgrm)$")


@dataclass(frozen=True)
class FiProvider:
    provider: str
    fabric: str = ""
    domain: str = ""
    version: str = ""
    endpoint_type: str = ""
    protocol: str = ""
    rank: int | None = None  # the launcher rank when the output came through mpirun

    @property
    def device(self) -> str:
        return DOMAIN_SUFFIX_RE.sub("", self.domain)

    @property
    def is_efa(self) -> bool:
        """`efa`, or a layered provider over it such as `efa;ofi_rxd`."""
        return "efa" in self.provider.split(";")

    @property
    def old_fabric_naming(self) -> bool:
        """Early libfabric named the fabric `EFA-<link-local IPv6>`; current releases say `efa`."""
        return self.fabric.startswith("EFA-")


@dataclass(frozen=True)
class FiInfo:
    providers: tuple[FiProvider, ...] = ()
    #: `fi_getinfo: -61` style failure (negative libfabric errno), as printed.
    error: str | None = None
    error_code: int | None = None

    @cached_property  # read by every efa.provider branch and by the other properties
    def efa_providers(self) -> tuple[FiProvider, ...]:
        return tuple(p for p in self.providers if p.is_efa)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.efa_providers)

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.domain for p in self.providers if p.domain))

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.device for p in self.efa_providers if p.domain))

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.version for p in self.efa_providers if p.version))

    @property
    def endpoint_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.endpoint_type for p in self.providers if p.endpoint_type))

    @property
    def fabrics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.fabric for p in self.providers if p.fabric))


@per_section
def parse_fi_info(text: str) -> FiInfo:
    """`fi_info -p efa` blocks (`provider:` starts one), or the `fi_getinfo: -N` failure line."""
    providers: list[FiProvider] = []
    current: dict[str, str] | None = None
    current_rank: int | None = None
    error: str | None = None
    error_code: int | None = None
    unknown: list[str] = []

    def flush() -> None:
        if current is not None:
            providers.append(_provider(current, current_rank))

    for raw in text.splitlines():
        tag, stripped, rank, key, value = _fi_line(raw)
        if tag == "skip":
            continue
        if tag == "error":
            error, error_code = stripped, rank
        elif tag == "unknown":
            unknown.append(stripped)
        elif key == "provider":
            flush()
            current, current_rank = {"provider": value}, rank
        elif current is not None:
            current[key] = value
        else:
            unknown.append(stripped)
    flush()
    if not providers and error is None and unknown:
        raise ValueError(f"not fi_info output (first line: {unknown[0][:80]!r})")
    return FiInfo(tuple(providers), error, error_code)


@per_line
def _fi_line(raw: str) -> tuple[str, str, int | None, str, str]:
    """(what the line is — skip / error / field / unknown —, the line stripped of its launcher
    prefix and blanks, the launcher rank — for an error, its code —, the field's key and value)."""
    line, rank = _strip_launcher(raw)
    stripped = line.strip()
    if not stripped or SSH_WARNING_RE.match(stripped) or PROMPT_RE.match(line):
        return "skip", stripped, rank, "", ""
    failure = FI_GETINFO_ERROR_RE.search(stripped)
    if failure:
        return "error", stripped, int(failure["code"]), "", ""
    match = FI_FIELD_RE.match(line)
    if not match:
        return "unknown", stripped, rank, "", ""
    return "field", stripped, rank, match["key"], match["value"]


def _strip_launcher(line: str) -> tuple[str, int | None]:
    match = LAUNCHER_PREFIX_RE.match(line)
    if not match:
        return line, None
    rank = match["rank"] or match["srank"]
    return line[match.end() :], int(rank)


def _provider(values: dict[str, str], rank: int | None) -> FiProvider:
    return FiProvider(
        provider=values.get("provider", ""),
        fabric=values.get("fabric", ""),
        domain=values.get("domain", ""),
        version=values.get("version", ""),
        endpoint_type=values.get("type", ""),
        protocol=values.get("protocol", ""),
        rank=rank,
    )
