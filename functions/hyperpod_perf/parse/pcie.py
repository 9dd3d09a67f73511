"""PCIe link error counters: the GPUs' replay counters and the kernel's AER counters. Pure, no I/O.

Two collector sections feed this module:

- `gpu-pcie`: `nvidia-smi -q -d PCIE`. Per GPU, a `GPU <bus id>` line, then a `PCI` block holding
  `Replays Since Reset` (older drivers: `Replays since reset`) and `Replay Number Rollovers`. There is
  no `--query-gpu` field for either (the `--help-query-gpu` lists of drivers 590-610 have none), hence
  the `-q` report. The parser also reads a full `nvidia-smi -q` (it only looks at those two keys).
- `pcie-aer`: collector.sh prints, for each NVIDIA (vendor 0x10de) and EFA (vendor 0x1d0f, device
  0xefa*) PCI function, a header line `== <bdf> vendor=<v> device=<d> class=<c>`, then for each
  `aer_dev_{correctable,nonfatal,fatal}` file the device has a line `-- <file name>` followed by the
  file verbatim (`<error name> <count>` lines ending in `TOTAL_ERR_COR|NONFATAL|FATAL <n>`), or
  `<unreadable>`. A device without those files has no AER statistics exposed (no AER capability seen
  by the kernel, as on many virtual machines): not readable, never a fault.

Error names differ between kernels (4.19: `Receiver Error`, `Bad TLP`; later: `RxErr`, `BadTLP`), so a
counter line is "everything before the last field is the name, the last field is the count".
Damaged lines are skipped and counted, never raised on: one bad line must not hide the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperpod_perf.parse.lines import per_line, per_section
from hyperpod_perf.parse.nvidia_smi import normalize_bus_id

# ----------------------------------------------------------------------------------------------
# gpu-pcie: nvidia-smi -q -d PCIE
# ----------------------------------------------------------------------------------------------

_GPU_LINE_RE = re.compile(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_REPLAYS_KEY = "replays since reset"
_ROLLOVERS_KEY = "replay number rollovers"
_NOT_AVAILABLE = frozenset({"n/a", "[n/a]", "not supported", "[not supported]", "unknown error"})


@dataclass(frozen=True)
class GpuReplayCounters:
    """One GPU's PCIe replay counters (None: the driver printed N/A or nothing readable)."""

    pci_bus_id: str
    replays: int | None
    rollovers: int | None

    @property
    def bus(self) -> str | None:
        """The short bus form (`0000:53:00`) that joins with `--query-gpu` rows and Xid lines."""
        return normalize_bus_id(self.pci_bus_id)


@dataclass(frozen=True)
class GpuPcieReport:
    gpus: tuple[GpuReplayCounters, ...]
    #: `Replays...` lines whose value is neither a count nor N/A (kept for the evidence).
    unreadable_values: tuple[str, ...] = ()


@per_section
def parse_gpu_pcie(text: str) -> GpuPcieReport:
    """The replay counters of every GPU in `nvidia-smi -q [-d PCIE]` output.

    Raises ValueError only when the text is not an nvidia-smi report at all (e.g. `NVIDIA-SMI has
    failed ...`), so the context turns it into one collect.node finding naming the section.
    """
    gpus: list[GpuReplayCounters] = []
    unreadable: list[str] = []
    current: str | None = None
    values: dict[str, int | None] = {}
    saw_log = False

    def close() -> None:
        if current is not None:
            gpus.append(GpuReplayCounters(current, values.get(_REPLAYS_KEY), values.get(_ROLLOVERS_KEY)))

    for line in text.splitlines():
        if "NVSMI LOG" in line or line.startswith("Attached GPUs"):
            saw_log = True
        gpu = _GPU_LINE_RE.match(line)
        if gpu:
            close()
            current, values = gpu["bus"], {}
            continue
        # `key : value` split by hand (str.partition is linear; a lazy regex is quadratic on a long line).
        key, colon, raw = line.partition(":")
        key = key.strip().lower()
        if current is None or not colon or key not in (_REPLAYS_KEY, _ROLLOVERS_KEY) or key in values:
            continue
        raw = raw.strip()
        if raw.isdigit() and raw.isascii():
            values[key] = int(raw)
        else:
            values[key] = None
            if raw.lower() not in _NOT_AVAILABLE:
                unreadable.append(line.strip()[:120])
    close()
    if not gpus and not saw_log:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise ValueError(f"not an nvidia-smi -q report: {first[:120]!r}")
    return GpuPcieReport(tuple(gpus), tuple(unreadable))


# ----------------------------------------------------------------------------------------------
# pcie-aer: /sys/bus/pci/devices/<bdf>/aer_dev_{correctable,nonfatal,fatal}
# ----------------------------------------------------------------------------------------------

AER_KINDS: dict[str, str] = {
    "aer_dev_correctable": "correctable",
    "aer_dev_nonfatal": "nonfatal",
    "aer_dev_fatal": "fatal",
}
_DEVICE_RE = re.compile(
    r"^== (?P<bdf>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])"
    r"(?:\s+vendor=(?P<vendor>\S*))?(?:\s+device=(?P<device>\S*))?(?:\s+class=(?P<cls>\S*))?\s*$"
)
_FILE_RE = re.compile(r"^-- (?P<name>aer_dev_[a-z]+)\s*$")
UNREADABLE = "<unreadable>"

NVIDIA_VENDOR = "0x10de"
AMAZON_VENDOR = "0x1d0f"


@dataclass(frozen=True)
class AerCounts:
    """One aer_dev_* file: its TOTAL_ERR_* line (or the sum of the named errors when it is missing)."""

    total: int
    #: The named errors with a non-zero count (`RxErr`, `Bad TLP`, ...), TOTAL_ERR_* excluded.
    nonzero: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AerDevice:
    bdf: str
    vendor: str | None
    device: str | None
    pci_class: str | None
    #: kind (correctable / nonfatal / fatal) -> counts, for the files that were read.
    counts: dict[str, AerCounts] = field(default_factory=dict)
    #: kinds whose file exists but could not be read.
    unreadable: tuple[str, ...] = ()

    @property
    def readable(self) -> bool:
        return bool(self.counts)

    @property
    def kind(self) -> str:
        """What the device is, from its vendor and PCI class: `gpu`, `nvswitch`/`nvidia`, `efa`."""
        if (self.vendor or "").lower() == AMAZON_VENDOR:
            return "efa"
        if (self.vendor or "").lower() == NVIDIA_VENDOR:
            return "gpu" if (self.pci_class or "").lower().startswith("0x03") else "nvidia"
        return "other"

    def total(self, kind: str) -> int:
        counts = self.counts.get(kind)
        return counts.total if counts is not None else 0


@dataclass(frozen=True)
class PcieAerReport:
    devices: tuple[AerDevice, ...]
    #: Lines that fit nowhere (outside a device, or neither a counter nor a marker).
    skipped_lines: int = 0


@dataclass
class _Building:
    bdf: str
    vendor: str | None
    device: str | None
    pci_class: str | None
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def freeze(self) -> AerDevice:
        counts = {kind: _counts(named) for kind, named in self.counters.items()}
        # A file listed with no counter line in it (empty, or every line damaged) tells nothing.
        unreadable = [k for k in self.files if k not in counts and k not in self.unreadable]
        return AerDevice(
            self.bdf, self.vendor, self.device, self.pci_class, counts, (*self.unreadable, *unreadable)
        )


def _counts(named: dict[str, int]) -> AerCounts:
    totals = {name: count for name, count in named.items() if name.upper().startswith("TOTAL_ERR")}
    errors = {name: count for name, count in named.items() if name not in totals}
    total = max(totals.values()) if totals else sum(errors.values())
    # TOTAL_ERR_* counts messages; one message may carry several errors (kernel ABI doc), so a
    # named count above the total is possible: never report less than the largest named count.
    total = max(total, max(errors.values(), default=0))
    return AerCounts(total, {name: count for name, count in errors.items() if count})


@per_section
def parse_pcie_aer(text: str) -> PcieAerReport:
    """Every device block of the `pcie-aer` section; tolerant of damaged and unknown lines."""
    devices: list[AerDevice] = []
    current: _Building | None = None
    kind: str | None = None
    skipped = 0
    for line in text.splitlines():
        tag, *fields = _aer_line(line)
        if tag == "blank":
            continue
        if tag == "device":
            if current is not None:
                devices.append(current.freeze())
            current = _Building(*fields)
            kind = None
            continue
        if tag == "file" and current is not None:
            kind = AER_KINDS.get(fields[0])
            if kind is None:
                skipped += 1
            elif kind not in current.files:
                current.files.append(kind)
            continue
        if current is None or kind is None or tag == "damaged":
            skipped += 1
        elif tag == "unreadable":
            current.unreadable.append(kind)
        else:  # a counter (a file line outside a device was counted as skipped above)
            current.counters.setdefault(kind, {})[fields[0]] = fields[1]
    if current is not None:
        devices.append(current.freeze())
    if not devices and skipped:
        raise ValueError(f"no `== <bdf>` device line in {skipped} line(s): not the pcie-aer format")
    return PcieAerReport(tuple(devices), skipped)


@per_line
def _aer_line(line: str) -> tuple:
    """What one `pcie-aer` line is: ('blank',), ('device', bdf, vendor, device, class),
    ('file', name), ('unreadable',), ('counter', error name, count) or ('damaged',)."""
    stripped = line.strip()
    if not stripped:
        return ("blank",)
    # Only marker lines start with `== ` / `-- `: the counter lines (~90 %) skip both patterns.
    device = _DEVICE_RE.match(line) if line.startswith("== ") else None
    if device:
        return "device", device["bdf"].lower(), device["vendor"], device["device"], device["cls"]
    file = _FILE_RE.match(line) if line.startswith("-- ") else None
    if file:
        return "file", file["name"]
    if stripped == UNREADABLE:
        return ("unreadable",)
    # `<error name> <count>`: the name may hold blanks, the count is the last field (rsplit: linear).
    fields = line.rsplit(None, 1)
    if len(fields) != 2 or not fields[1].isdigit() or not fields[1].isascii():
        return ("damaged",)
    return "counter", fields[0].strip(), int(fields[1])
