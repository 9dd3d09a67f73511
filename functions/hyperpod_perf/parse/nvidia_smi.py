"""Parsers for nvidia-smi outputs: `--query-gpu` CSV, `topo -m`, `nvlink -s` and `nvlink -e`.

Every parser is pure (text in, typed value out) and raises ``ValueError`` with the reason when
the text is not what the tool prints, so the engine can report the section instead of guessing.

Why parse by header name: the CSV header is the only thing that stays stable across drivers.
nvidia-smi prints canonical names (``clocks.current.sm [MHz]`` for the ``clocks.sm`` alias,
``name`` for ``gpu_name``), renamed fields over time (``clocks_throttle_reasons.*`` became
``clocks_event_reasons.*``) and puts units both in headers and in values.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from hyperpod_perf.parse.lines import per_line, per_section

# --------------------------------------------------------------------------------------------
# Shared text hygiene
# --------------------------------------------------------------------------------------------

ANSI_ESCAPE_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: A shell prompt someone pasted together with the output (`$ nvidia-smi ...`, `root@h:~# ...`).
PROMPT_RE = re.compile(r"^\s*(?:[$#]\s|[\w.-]+@[\w.-]+:\S*\s*[$#]\s|nvidia-smi\b)")
#: An elision an author put in place of lines (`[...]`, `...`, `....`).
ELISION_RE = re.compile(r"^\s*(?:\[\.\.\.\]|\.{3,})\s*$")


def _is_noise(line: str) -> bool:
    return not line.strip() or bool(PROMPT_RE.match(line)) or bool(ELISION_RE.match(line))


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE_RE.sub("", text)


# --------------------------------------------------------------------------------------------
# gpu-query: nvidia-smi --query-gpu=... --format=csv
# --------------------------------------------------------------------------------------------

#: The design's query list, in order: the positional meaning of a header-less CSV.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "pci.bus_id",
    "temperature.gpu",
    "clocks.sm",
    "clocks.max.sm",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total",
    "ecc.errors.corrected.volatile.total",
    "clocks_event_reasons.active",
    "power.draw",
    "power.limit",
    "driver_version",
    "remapped_rows.pending",
    "remapped_rows.failure",
    "remapped_rows.correctable",
    "remapped_rows.uncorrectable",
    "serial",  # the board serial, for asset tracking: a GPU that moves between instances
    "uuid",
)

#: Query aliases and older names -> the canonical name nvidia-smi prints in the header today.
FIELD_ALIASES: dict[str, str] = {
    "gpu_name": "name",
    "gpu_bus_id": "pci.bus_id",
    "gpu_uuid": "uuid",
    "gpu_serial": "serial",
    "clocks.sm": "clocks.current.sm",
    "clocks.gr": "clocks.current.graphics",
    "clocks.mem": "clocks.current.memory",
    "clocks.max.gr": "clocks.max.graphics",
    "clocks.max.mem": "clocks.max.memory",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
    "clocks_throttle_reasons.supported": "clocks_event_reasons.supported",
}

#: Values that mean "no value" (the field exists but this GPU/driver cannot report it).
MISSING_VALUES = frozenset({"n/a", "[n/a]", "[not supported]", "[unknown error]", "[gpu is lost]", ""})

HEADER_UNIT_RE = re.compile(r"\s*\[[^\]]*\]\s*$")
HEADER_CELL_RE = re.compile(r"^[a-z][a-z0-9_.]*(?:\s*\[[^\]]*\])?$", re.IGNORECASE)
#: `\s*+`: the blanks before the unit are taken once; with a backtracking `\s*` on both sides of the
#: optional unit, a long blank run followed by a stray character was split every possible way.
NUMBER_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*+(?:[A-Za-z%]+)?\s*$")
BUS_ID_RE = re.compile(
    r"^(?P<domain>[0-9a-fA-F]{4,8}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.\d)?$"
)
NO_DEVICES_RE = re.compile(r"^\s*No devices were found\s*$", re.IGNORECASE | re.MULTILINE)


@per_line
def canonical_field(header_cell: str) -> str:
    """`clocks.current.sm [MHz]` -> `clocks.current.sm`; aliases and old names -> today's name.

    Cached: every rule reads its fields by name (a few hundred look-ups a node, of ~40 names)."""
    name = HEADER_UNIT_RE.sub("", header_cell.strip()).strip().lower()
    return FIELD_ALIASES.get(name, name)


def normalize_bus_id(bus_id: str | None) -> str | None:
    """`00000000:18:00.0` (nvidia-smi), `0000:18:00` (Xid) -> `0000:18:00`, so both can be joined."""
    if bus_id is None:
        return None
    match = BUS_ID_RE.match(bus_id.strip())
    if not match:
        return None
    domain = match["domain"][-4:]
    return f"{domain}:{match['bus']}:{match['dev']}".lower()


def _clean(value: str) -> str | None:
    text = value.strip()
    if text.lower() in MISSING_VALUES or (text.startswith("[") and text.endswith("]")):
        return None  # `[Requested functionality has been deprecated]` and friends
    return text


def _number(value: str | None) -> float | None:
    return None if value is None else _leading_number(value)


@per_line
def _leading_number(value: str) -> float | None:
    """`1980 MHz` -> 1980.0. Cached: the rules read each GPU's fields many times over."""
    match = NUMBER_RE.match(value)
    return float(match.group(1)) if match else None


def _integer(value: str | None) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number.is_integer() else None


def _yes_no(value: str | None) -> bool | None:
    text = (value or "").strip().lower()
    return True if text == "yes" else False if text == "no" else None


def _bitmask(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip(), 16) if value.strip().lower().startswith("0x") else int(value.strip())
    except ValueError:
        return None


@dataclass(frozen=True)
class GpuQueryRow:
    """One GPU's row; a field is None when absent from the query or reported as N/A."""

    fields: dict[str, str | None]

    def get(self, name: str) -> str | None:
        return self.fields.get(canonical_field(name))

    @property
    def index(self) -> int | None:
        return _integer(self.get("index"))

    @property
    def name(self) -> str | None:
        return self.get("name")

    @property
    def pci_bus_id(self) -> str | None:
        return self.get("pci.bus_id")

    @property
    def bus(self) -> str | None:
        """The bus id in the short form the kernel log uses (`0000:18:00`)."""
        return normalize_bus_id(self.pci_bus_id)

    @property
    def temperature_c(self) -> float | None:
        return _number(self.get("temperature.gpu"))

    @property
    def sm_clock_mhz(self) -> float | None:
        return _number(self.get("clocks.sm"))

    @property
    def max_sm_clock_mhz(self) -> float | None:
        return _number(self.get("clocks.max.sm"))

    @property
    def pcie_gen_current(self) -> int | None:
        return _integer(self.get("pcie.link.gen.current"))

    @property
    def pcie_gen_max(self) -> int | None:
        return _integer(self.get("pcie.link.gen.max"))

    @property
    def pcie_width_current(self) -> int | None:
        return _integer(self.get("pcie.link.width.current"))

    @property
    def pcie_width_max(self) -> int | None:
        return _integer(self.get("pcie.link.width.max"))

    @property
    def ecc_uncorrected_volatile(self) -> int | None:
        return _integer(self.get("ecc.errors.uncorrected.volatile.total"))

    @property
    def ecc_uncorrected_aggregate(self) -> int | None:
        return _integer(self.get("ecc.errors.uncorrected.aggregate.total"))

    @property
    def ecc_corrected_volatile(self) -> int | None:
        return _integer(self.get("ecc.errors.corrected.volatile.total"))

    @property
    def clock_event_reasons(self) -> int | None:
        """The `clocks_event_reasons.active` bitmask (older drivers: `clocks_throttle_reasons`)."""
        return _bitmask(self.get("clocks_event_reasons.active"))

    @property
    def utilization_gpu_pct(self) -> float | None:
        return _number(self.get("utilization.gpu"))

    @property
    def power_draw_w(self) -> float | None:
        return _number(self.get("power.draw"))

    @property
    def power_limit_w(self) -> float | None:
        return _number(self.get("power.limit"))

    @property
    def driver_version(self) -> str | None:
        return self.get("driver_version")

    @property
    def remapped_rows_pending(self) -> bool | None:
        """`Yes`: a spare row waits for a GPU reset to be activated (Ampere and newer)."""
        return _yes_no(self.get("remapped_rows.pending"))

    @property
    def remapped_rows_failure(self) -> bool | None:
        """`Yes`: a row remapping failed in the past (the GPU ran out of spare rows)."""
        return _yes_no(self.get("remapped_rows.failure"))

    @property
    def remapped_rows_correctable(self) -> int | None:
        return _integer(self.get("remapped_rows.correctable"))

    @property
    def remapped_rows_uncorrectable(self) -> int | None:
        return _integer(self.get("remapped_rows.uncorrectable"))

    @property
    def serial(self) -> str | None:
        """The board serial nvidia-smi prints (`[N/A]` on boards without one: None)."""
        return self.get("serial")

    @property
    def uuid(self) -> str | None:
        """`GPU-<uuid>`: the identity NVML and nvidia-smi's other commands name the GPU by."""
        return self.get("uuid")


@dataclass(frozen=True)
class GpuQuery:
    rows: tuple[GpuQueryRow, ...]
    header: tuple[str, ...]  # canonical field names, in column order
    had_header: bool

    def __len__(self) -> int:
        return len(self.rows)


def _csv_cells(line: str) -> list[str]:
    """One CSV line's cells; csv.Error (e.g. a field over the module's 128 KiB limit) is a ValueError.

    Why not raise the limit: `csv.field_size_limit` is process-wide, and no nvidia-smi field is
    anywhere near it, so a field that long is damage to report, not data to read.
    """
    try:
        return next(csv.reader([line], skipinitialspace=True))
    except csv.Error as error:
        raise ValueError(f"gpu-query: not a CSV line ({error}): {line[:80]!r}") from error


def _looks_like_header(cells: list[str]) -> bool:
    return all(HEADER_CELL_RE.match(cell.strip()) for cell in cells) and not cells[0].strip().isdigit()


def parse_gpu_query(text: str) -> GpuQuery:
    """Parse `nvidia-smi --query-gpu=... --format=csv[,noheader]` output.

    With a header, columns are read by name (any order, any extra fields). Without one, the
    columns are taken as the leading part of the design's field list and each value is checked
    against its field's type, so a different positional layout fails loudly instead of being
    misread.
    """
    lines = [line for line in strip_ansi(text).splitlines() if not _is_noise(line)]
    if not lines:
        raise ValueError("gpu-query: no output")
    if len(lines) == 1 and NO_DEVICES_RE.match(lines[0]):
        return GpuQuery(rows=(), header=(), had_header=False)
    first = _csv_cells(lines[0])
    if _looks_like_header(first):
        header = tuple(canonical_field(cell) for cell in first)
        body = lines[1:]
        had_header = True
    else:
        if len(first) > len(QUERY_FIELDS):
            raise ValueError(
                f"gpu-query: header-less CSV with {len(first)} columns, more than the "
                f"{len(QUERY_FIELDS)} fields the collector queries"
            )
        header = tuple(canonical_field(name) for name in QUERY_FIELDS[: len(first)])
        body = lines
        had_header = False
    rows = []
    for number, line in enumerate(body, start=2 if had_header else 1):
        cells = _csv_cells(line)
        if len(cells) != len(header):
            raise ValueError(
                f"gpu-query: line {number} has {len(cells)} values for {len(header)} columns: {line[:120]!r}"
            )
        row = GpuQueryRow(fields={name: _clean(cell) for name, cell in zip(header, cells, strict=True)})
        if not had_header:
            _check_positional(row, line)
        rows.append(row)
    if not rows:
        raise ValueError("gpu-query: header without any GPU row")
    return GpuQuery(rows=tuple(rows), header=header, had_header=had_header)


def _check_positional(row: GpuQueryRow, line: str) -> None:
    """Header-less rows are only trusted when each value has the type of its assumed field."""
    checks = {
        "index": lambda v: v.isdigit(),
        "pci.bus_id": lambda v: BUS_ID_RE.match(v) is not None,
        "temperature.gpu": lambda v: _number(v) is not None,
        "clocks.current.sm": lambda v: _number(v) is not None,
        "pcie.link.width.current": lambda v: _integer(v) is not None,
    }
    for name, is_valid in checks.items():
        value = row.fields.get(name)
        if value is not None and not is_valid(value):
            raise ValueError(
                f"gpu-query: header-less row does not match the expected field list ({name}={value!r})"
            )


# --------------------------------------------------------------------------------------------
# gpu-topo: nvidia-smi topo -m
# --------------------------------------------------------------------------------------------

TOPO_SPLIT_RE = re.compile(r"\s*\t\s*|\s{2,}")
DEVICE_RE = re.compile(r"^(?:GPU|NIC|mlx5_|rdmap)\S*$")
NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


@dataclass(frozen=True)
class GpuTopology:
    """The `topo -m` matrix: `links[row][column]` is the connection type (`X`, `NV18`, `SYS`...)."""

    devices: tuple[str, ...]  # matrix column names in order (GPU0.., NIC0..)
    links: dict[str, dict[str, str]]
    attributes: dict[str, dict[str, str | None]]  # per row: `CPU Affinity`, `NUMA Affinity`, ...
    nic_names: dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0 (from the legend)

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(name for name in self.devices if name.startswith("GPU"))

    @property
    def nics(self) -> tuple[str, ...]:
        return tuple(name for name in self.devices if not name.startswith("GPU"))


def _topo_cells(line: str) -> list[str]:
    return [cell for cell in TOPO_SPLIT_RE.split(line.strip()) if cell]


@per_section
def parse_gpu_topology(text: str) -> GpuTopology:
    lines = strip_ansi(text).splitlines()
    header_at = next(
        (i for i, line in enumerate(lines) if (cells := _topo_cells(line)) and cells[0] == "GPU0"),
        None,
    )
    if header_at is None:
        raise ValueError("gpu-topo: no matrix header (a line starting with GPU0) found")
    header = _topo_cells(lines[header_at])
    devices = tuple(cell for cell in header if DEVICE_RE.match(cell))
    extra_columns = header[len(devices) :]
    links: dict[str, dict[str, str]] = {}
    attributes: dict[str, dict[str, str | None]] = {}
    for line in lines[header_at + 1 :]:
        if not line.strip() or line.strip().startswith("Legend"):
            break
        cells = _topo_cells(line)
        row, values = cells[0], cells[1:]
        if row not in devices:
            raise ValueError(f"gpu-topo: row {row!r} is not one of the matrix columns {list(devices)}")
        if len(values) < len(devices):
            raise ValueError(f"gpu-topo: row {row} has {len(values)} cells for {len(devices)} devices")
        links[row] = dict(zip(devices, values[: len(devices)], strict=True))
        if links[row][row] != "X":
            raise ValueError(f"gpu-topo: row {row} does not mark itself X (got {links[row][row]!r})")
        rest = values[len(devices) :]
        attributes[row] = {
            name: (_clean(rest[i]) if i < len(rest) else None) for i, name in enumerate(extra_columns)
        }
    if not links:
        raise ValueError("gpu-topo: header without matrix rows")
    nic_names = {m.group(1): m.group(2) for line in lines if (m := NIC_LEGEND_RE.match(line))}
    return GpuTopology(devices=devices, links=links, attributes=attributes, nic_names=nic_names)


# --------------------------------------------------------------------------------------------
# nvlink-status / nvlink-errors: nvidia-smi nvlink -s / -e
# --------------------------------------------------------------------------------------------

#: `GPU <n>: <name> (UUID: <uuid>)`. The name and the optional UUID are split in code
#: (`_gpu_header`): the single pattern `(?P<name>.*?)\s*(?:\(UUID: ...\))?\s*$` tried every split
#: of a blank run three ways (cubic: 2 KB of blanks took minutes).
GPU_LINE_RE = re.compile(r"^GPU (?P<index>\d+): (?P<rest>.*)$")
UUID_OPEN = "(UUID: "
#: Values run to their last non-blank (`.*\S`: one backtrack), not `.+?\s*$` (quadratic on blanks).
LINK_STATUS_RE = re.compile(r"^\s*Link (?P<link>\d+): (?P<value>.*\S|\s)\s*$")
LINK_SPEED_RE = re.compile(r"^(?P<speed>\d+(?:\.\d+)?) GB/s$")
LINK_INACTIVE_VALUES = frozenset({"<inactive>", "inactive", "not active", "<not active>"})
LINK_COUNTER_RE = re.compile(r"^\s*Link (?P<link>\d+): (?P<counter>[^:]+?):\s*(?P<value>\S(?:.*\S)?)\s*$")
UNSUPPORTED_RE = re.compile(r"not supported", re.IGNORECASE)
#: What NVML prints under a GPU none of whose links came up (`... all links are inActive`, any case):
#: the GPU lost every NVLink (Azure NHC's azure_gpu_nvlink check fails the node on it).
ALL_LINKS_INACTIVE_RE = re.compile(
    r"Unable to retrieve NVLink information as all links are inactive", re.IGNORECASE
)
#: What nvidia-smi prints under a GPU that has no NVLink at all (NVML answers NOT_SUPPORTED for
#: its links): a PCIe card such as an L40S or a GeForce RTX 4080 (nvidia_gpu_exporter captures).
#: An answer about the hardware, not a failed query: it is read, never a parse failure.
NO_NVLINK_RE = re.compile(r"Device does not have or support NVLink", re.IGNORECASE)


@dataclass(frozen=True)
class NvlinkState:
    speed_gbps: float | None  # None when inactive
    raw: str

    @property
    def active(self) -> bool:
        return self.speed_gbps is not None


@dataclass(frozen=True)
class NvlinkGpu:
    index: int
    name: str
    uuid: str | None
    links: dict[int, NvlinkState] = field(default_factory=dict)
    unsupported: str | None = None  # e.g. "Nvlink queries are not supported for Devices in MIG mode"
    all_inactive: str | None = (
        None  # NVML's "Unable to retrieve NVLink information as all links are inActive"
    )
    no_nvlink: str | None = None  # "Device does not have or support Nvlink"

    @property
    def inactive_links(self) -> list[int]:
        return [link for link, state in sorted(self.links.items()) if not state.active]


@dataclass(frozen=True)
class NvlinkErrorsGpu:
    index: int
    name: str
    uuid: str | None
    counters: dict[int, dict[str, int | None]] = field(default_factory=dict)  # link -> counter -> value
    unsupported: str | None = None

    def nonzero(self) -> dict[int, dict[str, int]]:
        return {
            link: {name: value for name, value in values.items() if value}
            for link, values in sorted(self.counters.items())
            if any(values.values())
        }


@dataclass(frozen=True)
class _GpuHeader:
    index: int
    name: str
    uuid: str | None  # as printed inside `(UUID: ...)`, None when the line has none


def _gpu_header(line: str) -> _GpuHeader | None:
    """`GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)` -> index, name, uuid; None for other lines.

    Same reading as `^GPU n: (?P<name>.*?)\\s*(?:\\(UUID: (?P<uuid>[^)]*)\\))?\\s*$`: the UUID part is
    the line's last `(UUID: ...)` group ending the line (its text holds no `)`), taken from the
    first `(UUID: ` after the previous `)`; the name is what precedes it, trailing blanks dropped.
    """
    match = GPU_LINE_RE.match(line)
    if match is None:
        return None
    index, body = int(match["index"]), match["rest"].rstrip()
    if body.endswith(")"):
        opening = body.find(UUID_OPEN, body.rfind(")", 0, len(body) - 1) + 1)
        if opening != -1:
            return _GpuHeader(index, body[:opening].rstrip(), body[opening + len(UUID_OPEN) : -1])
    return _GpuHeader(index, body, None)


def _gpu_blocks(text: str, section: str) -> list[tuple[_GpuHeader, list[str]]]:
    """Split `nvlink -s/-e` output into (GPU header, body lines) blocks."""
    blocks: list[tuple[_GpuHeader, list[str]]] = []
    for line in strip_ansi(text).splitlines():
        link, noise, header = _block_line(line)
        if blocks and link:
            blocks[-1][1].append(line)  # the bulk (~600 lines on 8 GPUs): neither noise nor a header
            continue
        if noise:
            continue
        if header is not None:
            blocks.append((header, []))
        elif not blocks:
            raise ValueError(f"{section}: unexpected line before any GPU: {line.strip()[:120]!r}")
        else:
            blocks[-1][1].append(line)
    return blocks


@per_line
def _block_line(line: str) -> tuple[bool, bool, _GpuHeader | None]:
    """(a `Link n:` line, noise, the GPU header it is) for one line of `nvlink -s/-e` output."""
    if line.lstrip().startswith("Link "):
        return True, False, None
    if _is_noise(line):
        return False, True, None
    return False, False, _gpu_header(line)


def _uuid(header: _GpuHeader) -> str | None:
    uuid = header.uuid
    return None if uuid is None or uuid.strip() in {"", "..."} else uuid.strip()


def parse_nvlink_status(text: str) -> tuple[NvlinkGpu, ...]:
    """Per GPU, per link: the speed in GB/s, or inactive. Empty output -> no GPUs with NVLink."""
    gpus = []
    for header, body in _gpu_blocks(text, "nvlink-status"):
        links: dict[int, NvlinkState] = {}
        notes: dict[str, str] = {}  # unsupported / all_inactive / no_nvlink -> the line
        for line in body:
            kind, link, state = _link_status(line)
            if state is not None:
                links[link] = state
            else:
                notes[kind] = line.strip()
        gpus.append(
            NvlinkGpu(
                header.index,
                header.name,
                _uuid(header),
                links,
                notes.get("unsupported"),
                notes.get("all_inactive"),
                notes.get("no_nvlink"),
            )
        )
    return tuple(gpus)


@per_line
def _link_status(line: str) -> tuple[str, int, NvlinkState | None]:
    """A body line of `nvlink -s`: ('link', n, its state) or (the note it is, 0, None)."""
    match = LINK_STATUS_RE.match(line)
    if match:
        value = match["value"]
        speed = LINK_SPEED_RE.match(value)
        if speed:
            return "link", int(match["link"]), NvlinkState(float(speed["speed"]), value)
        if value.lower() in LINK_INACTIVE_VALUES:
            return "link", int(match["link"]), NvlinkState(None, value)
        raise ValueError(f"nvlink-status: unknown link state {value!r}")
    if ALL_LINKS_INACTIVE_RE.search(line):
        return "all_inactive", 0, None
    if NO_NVLINK_RE.search(line):
        return "no_nvlink", 0, None
    if UNSUPPORTED_RE.search(line):
        return "unsupported", 0, None
    raise ValueError(f"nvlink-status: unexpected line {line.strip()[:120]!r}")


def parse_nvlink_errors(text: str) -> tuple[NvlinkErrorsGpu, ...]:
    """Per GPU, per link, per counter (`Replay Errors`, `Recovery Errors`, `CRC Errors`, ...)."""
    gpus = []
    for header, body in _gpu_blocks(text, "nvlink-errors"):
        counters: dict[int, dict[str, int | None]] = {}
        unsupported = None
        for line in body:
            reading = _link_counter(line)
            if reading is not None:
                link, counter, value = reading
                counters.setdefault(link, {})[counter] = value
            elif UNSUPPORTED_RE.search(line):
                unsupported = line.strip()
            else:
                raise ValueError(f"nvlink-errors: unexpected line {line.strip()[:120]!r}")
        gpus.append(NvlinkErrorsGpu(header.index, header.name, _uuid(header), counters, unsupported))
    return tuple(gpus)


@per_line
def _link_counter(line: str) -> tuple[int, str, int | None] | None:
    """`Link 3: Replay Errors: 0` -> (3, 'Replay Errors', 0); None for a line of another form.

    Cached by the line's text: the 432 counter lines of a healthy p5 are the same 54 lines on each
    GPU and on every healthy node of a fleet (the value, not the line, is what differs on a fault)."""
    match = LINK_COUNTER_RE.match(line)
    if not match:
        return None
    value = _clean(match["value"])
    if value is not None and not value.isdigit():
        raise ValueError(f"nvlink-errors: counter value is not a number: {line.strip()!r}")
    return int(match["link"]), match["counter"], int(value) if value is not None else None
