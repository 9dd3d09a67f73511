"""A simulated HyperPod node: the collector output a real node of a given type would print.

Why: the offline demo, the README and the end-to-end tests need whole snapshots that look
exactly like collector.sh output on a real node, with faults planted on purpose. Every
section copies the shape of the real tool's output as captured in the shared fixtures
(nvidia-smi CSV header names with units, `topo -m`, `nvlink -s/-e`, the Xid 79 line,
`fi_info -p efa`, `df -kP`, `lfs df -h`); only the values are generated. Output is
deterministic for a given (index, seed), with small realistic jitter between nodes.

Run `python -m hyperpod_perf_dev.sim.node --write DIR` to write the two example snapshots.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hyperpod_perf.collect.snapshot import SECTION_ORDER, render_container

COLLECTOR_VERSION = "2"

#: The design's `--query-gpu` fields as nvidia-smi prints them in the CSV header (aliases
#: resolved, units appended), as seen in the shared gpu-query captures.
GPU_QUERY_HEADER = (
    "index, name, pci.bus_id, temperature.gpu, clocks.current.sm [MHz], clocks.max.sm [MHz], "
    "pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, "
    "ecc.errors.uncorrected.volatile.total, ecc.errors.uncorrected.aggregate.total, "
    "ecc.errors.corrected.volatile.total, clocks_event_reasons.active, power.draw [W], "
    "power.limit [W], driver_version, remapped_rows.pending, remapped_rows.failure, "
    "remapped_rows.correctable, remapped_rows.uncorrectable, serial, uuid"
)

#: The 32 EFA devices of a real p5.48xlarge (shared fixture
#: efa-sysfs/p5_32dev_node-exporter_amazonefa_tx_pkts.prom), in numeric (PCI) order.
_P5_EFA_BUSES = (79, 80, 81, 82, 96, 97, 98, 99, 113, 114, 115, 116, 130, 131, 132, 133)
_P5_EFA_BUSES_HIGH = (147, 148, 149, 150, 164, 165, 166, 167, 181, 182, 183, 184, 198, 199, 200, 201)
P5_EFA_DEVICES: tuple[str, ...] = tuple(f"rdmap{bus}s0" for bus in (*_P5_EFA_BUSES, *_P5_EFA_BUSES_HIGH))
#: The 4 EFA devices of a real p4d.24xlarge (shared fixture fi-info/p4d_4dev_efa-rdm_libfabric-111.20.txt).
P4D_EFA_DEVICES: tuple[str, ...] = ("rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27")

#: Port-level EFA hw_counters (ports/1/hw_counters), listed in glob (alphabetical) order.
EFA_COUNTERS: tuple[str, ...] = tuple(
    sorted(
        (
            "impaired_remote_conn_events",
            "lifespan",
            "rdma_read_bytes",
            "rdma_read_resp_bytes",
            "rdma_read_wr_err",
            "rdma_read_wrs",
            "rdma_write_bytes",
            "rdma_write_recv_bytes",
            "rdma_write_wr_err",
            "rdma_write_wrs",
            "recv_bytes",
            "recv_wrs",
            "retrans_bytes",
            "retrans_pkts",
            "retrans_timeout_events",
            "rx_bytes",
            "rx_drops",
            "rx_pkts",
            "send_bytes",
            "send_wrs",
            "tx_bytes",
            "tx_pkts",
            "unresponsive_remote_events",
        )
    )
)

TOPO_LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""

#: The real Xid 79 line (shared fixture xid/no-prefix_xid79-154-os-reboot_610.43.02.txt),
#: with the PCI id of the simulated GPU substituted.
XID79_MESSAGE = "NVRM: Xid (PCI:{pci}): 79, GPU has fallen off the bus."

#: What `scontrol show topology` prints (through 2>&1) with topology/flat: the plugin's error() line
#: (SchedMD/slurm src/plugins/topology/tree/topology_tree.c prints the same with no switch), rc 0.
NO_SLURM_TOPOLOGY = "scontrol: error: No topology information available\n"
FSX_SOURCE = "10.1.71.197@tcp:/oyuutbev"
FSX_MOUNT = "/fsx"
BASE_TIME = datetime(2025, 6, 2, 9, 15, 0, tzinfo=UTC)


@dataclass(frozen=True)
class InstanceProfile:
    """What one instance type looks like from the inside."""

    instance_type: str
    gpu_name: str
    gpu_bus_ids: tuple[str, ...]  # 8-digit domain form, as nvidia-smi prints pci.bus_id
    max_sm_clock_mhz: int
    pcie_gen: int
    power_limit_w: float
    nvlinks: int
    nvlink_speed: str
    topo_link: str
    cpu_affinity: tuple[str, str]  # NUMA node 0, NUMA node 1
    cpus: int
    efa_devices: tuple[str, ...]
    shm_kib: int  # tmpfs /dev/shm defaults to half the RAM
    nvme_kib: int


PROFILES: dict[str, InstanceProfile] = {
    "ml.p5.48xlarge": InstanceProfile(
        instance_type="ml.p5.48xlarge",
        gpu_name="NVIDIA H100 80GB HBM3",
        gpu_bus_ids=tuple(f"00000000:{bus}:00.0" for bus in ("53", "64", "75", "86", "97", "A8", "B9", "CA")),
        max_sm_clock_mhz=1980,
        pcie_gen=5,
        power_limit_w=700.0,
        nvlinks=18,
        nvlink_speed="26.562 GB/s",
        topo_link="NV18",
        cpu_affinity=("0-47,96-143", "48-95,144-191"),
        cpus=192,
        efa_devices=P5_EFA_DEVICES,
        shm_kib=1_056_690_264,
        nvme_kib=29_996_532_736,
    ),
    "ml.p4d.24xlarge": InstanceProfile(
        instance_type="ml.p4d.24xlarge",
        gpu_name="NVIDIA A100-SXM4-40GB",
        gpu_bus_ids=tuple(
            f"00000000:{bus}:{dev}.0" for bus in ("10", "20", "90", "A0") for dev in ("1C", "1D")
        ),
        max_sm_clock_mhz=1410,
        pcie_gen=4,
        power_limit_w=400.0,
        nvlinks=12,
        nvlink_speed="25 GB/s",
        topo_link="NV12",
        cpu_affinity=("0-23,48-71", "24-47,72-95"),
        cpus=96,
        efa_devices=P4D_EFA_DEVICES,
        shm_kib=594_393_636,
        nvme_kib=7_499_133_184,
    ),
}

#: Host software versions of the simulated fleet (a plausible DLAMI-based HyperPod image).
VERSIONS: dict[str, str] = {
    "driver": "535.183.01",
    "cuda": "12.2",
    "efa_installer": "1.34.0",
    "efa_module": "2.10.0g",
    "libfabric": "1.22.0amzn4.0",
    "aws_ofi_nccl": "1.11.0-aws",
    "nccl": "2.21.5",
    "fabric_manager": "535.183.01",
}


@dataclass(frozen=True)
class NodeFaults:
    """Faults to plant in one simulated node; the defaults are a healthy node."""

    pcie_width_gpu: int | None = None  # this GPU trains at x8 instead of x16
    xid79: bool = False  # a real "fallen off the bus" Xid 79 line in dmesg
    xid79_gpu: int = 0  # ... for this GPU's PCI id
    efa_port_down: str | None = None  # this EFA device's port reads `1: DOWN`
    governor: str = "performance"  # every CPU's scaling_governor
    gpu_temp_c: int | None = None  # temperature of GPU `gpu_temp_index`
    gpu_temp_index: int = 0
    sm_clock_mhz: int | None = None  # every GPU's SM clock (a node-level fleet outlier)
    iowait_pct: float | None = None  # share of CPU time in iowait between the two /proc/stat reads
    io_pressure_avg10: float | None = None  # PSI io `some avg10`


@dataclass(frozen=True)
class SimulatedNode:
    index: int
    instance_id: str
    hostname: str
    instance_type: str
    faults: NodeFaults
    sections: tuple[tuple[str, str, int], ...] = field(repr=False)
    #: The run's marker nonce, as collector.sh draws one per run (from the seed here: the demo
    #: and the tests are reproducible; a forger still cannot know it before the node prints it).
    nonce: str = ""

    @property
    def text(self) -> str:
        """The snapshot container, as collector.sh would print it (nonce in every marker)."""
        return render_container(list(self.sections), self.nonce or None)


def _drawn_hostname(index: int, seed: int) -> str:
    # bandit B311: simulated values (the same draw simulate_node makes first)
    rng = random.Random(f"hpd-sim:{seed}:{index}")  # nosec B311
    return f"ip-10-1-{rng.randint(16, 127)}-{rng.randint(2, 254)}"


#: seed -> (the names of nodes 0..n-1, the repeats replaced so far)
_unique: dict[int, tuple[list[str], set[str], list[int]]] = {}


def unique_hostname(index: int, seed: int = 0) -> str:
    """Node `index`'s host name, never one an earlier node of the cluster has.

    Why: a VPC's private DNS names (ip-a-b-c-d) are unique, and the metrics stage maps series to
    nodes by host name — drawn at random, 1,024 nodes repeat ~20 of them (a birthday collision), which
    made those nodes unmatchable in the time-to-findings bench. A repeat is replaced by the next name
    of a range no draw reaches (third octet 128 and up); every other name is the draw itself.
    """
    names, taken, repeats = _unique.setdefault(seed, ([], set(), [0]))
    while len(names) <= index:
        name = _drawn_hostname(len(names), seed)
        if name in taken:
            name = f"ip-10-1-{128 + repeats[0] // 253}-{2 + repeats[0] % 253}"
            repeats[0] += 1
        names.append(name)
        taken.add(name)
    return names[index]


def instance_id_for(index: int, seed: int = 0) -> str:
    """`i-0a1b2c3d4e5f60001` for node 0 of seed 0; other seeds get other 13-hex prefixes."""
    prefix = "0a1b2c3d4e5f6" if seed == 0 else hashlib.sha256(f"hpd-sim:{seed}".encode()).hexdigest()[:13]
    return f"i-{prefix}{index + 1:04d}"


def simulate_node(
    index: int,
    *,
    instance_type: str = "ml.p5.48xlarge",
    faults: NodeFaults | None = None,
    seed: int = 0,
) -> SimulatedNode:
    """One node's collector output; `faults` plants problems, `seed` varies the jitter."""
    profile = PROFILES.get(instance_type)
    if profile is None:
        raise ValueError(f"no simulation profile for {instance_type!r}; known: {', '.join(sorted(PROFILES))}")
    faults = faults or NodeFaults()
    _check_faults(faults, profile)
    # bandit B311: simulated values
    rng = random.Random(f"hpd-sim:{seed}:{index}")  # nosec B311
    # A generator of its own: every other simulated value stays what it was before nonces.
    # bandit B311: simulated nonce (seeded)
    nonce = f"{random.Random(f'hpd-sim-nonce:{seed}:{index}').getrandbits(128):032x}"  # nosec B311
    instance_id = instance_id_for(index, seed)
    rng.randint(16, 127), rng.randint(2, 254)  # the host name's draw (unique_hostname): rng's sequence kept
    hostname = unique_hostname(index, seed)
    uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in profile.gpu_bus_ids]
    builders = {
        "meta": lambda: _meta(index, instance_id, hostname, profile, rng) + f"nonce={nonce}\n",
        "gpu-query": lambda: _gpu_query(profile, faults, rng, instance_id, uuids),
        "gpu-topo": lambda: _gpu_topo(profile),
        "nvlink-status": lambda: _nvlink_status(profile, uuids),
        "nvlink-errors": lambda: _nvlink_errors(profile, uuids),
        "xid": lambda: _xid(index, profile, faults),
        "efa-ports": lambda: _efa_ports(profile, faults),
        "efa-counters": lambda: _efa_counters(profile, rng),
        "fi-info": lambda: _fi_info(profile),
        "versions": lambda: "".join(f"{key}={value}\n" for key, value in VERSIONS.items()),
        "cpu-governor": lambda: "".join(f"cpu{n} {faults.governor}\n" for n in range(profile.cpus)),
        "fabric-manager": lambda: "active\n",
        "mounts": lambda: _mounts(),
        "df": lambda: _df(profile, rng),
        "lfs-df": lambda: _lfs_df(),
        "cpu-stat": lambda: _cpu_stat(profile, faults, rng),
        "io-pressure": lambda: _io_pressure(faults, rng),
        "memlock": lambda: "unlimited\n",
        "oom": lambda: "",
        "gpu-pcie": lambda: _gpu_pcie(profile, faults),
        "pcie-aer": lambda: _pcie_aer(profile),
        # HyperPod's Slurm has no topology plugin configured unless the operator adds one
        "slurm-topology": lambda: NO_SLURM_TOPOLOGY,
    }
    sections = tuple((name, builders[name](), 0) for name in SECTION_ORDER)
    return SimulatedNode(index, instance_id, hostname, instance_type, faults, sections, nonce)


def simulate_cluster(
    n: int,
    faults_by_index: Mapping[int, NodeFaults] | None = None,
    *,
    instance_type: str = "ml.p5.48xlarge",
    seed: int = 0,
) -> list[SimulatedNode]:
    """`n` nodes of one type; the nodes named in `faults_by_index` carry those faults."""
    faults_by_index = faults_by_index or {}
    unknown = sorted(i for i in faults_by_index if not 0 <= i < n)
    if unknown:
        raise ValueError(f"faults given for nodes {unknown} outside 0..{n - 1}")
    return [
        simulate_node(i, instance_type=instance_type, faults=faults_by_index.get(i), seed=seed)
        for i in range(n)
    ]


def _check_faults(faults: NodeFaults, profile: InstanceProfile) -> None:
    gpus = len(profile.gpu_bus_ids)
    for label, gpu in (
        ("pcie_width_gpu", faults.pcie_width_gpu),
        ("xid79_gpu", faults.xid79_gpu),
        ("gpu_temp_index", faults.gpu_temp_index),
    ):
        if gpu is not None and not 0 <= gpu < gpus:
            raise ValueError(f"{label}={gpu}: {profile.instance_type} has GPUs 0..{gpus - 1}")
    if faults.efa_port_down is not None and faults.efa_port_down not in profile.efa_devices:
        raise ValueError(
            f"efa_port_down={faults.efa_port_down!r} is not an EFA device of {profile.instance_type}"
        )


def _meta(index: int, instance_id: str, hostname: str, profile: InstanceProfile, rng: random.Random) -> str:
    uptime_s = rng.randint(2, 40) * 86_400 + rng.randint(0, 86_399)
    date = (BASE_TIME + timedelta(seconds=index * 2 + rng.randint(0, 1))).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"collector_version={COLLECTOR_VERSION}\nhostname={hostname}\nkernel=5.15.0-1072-aws\n"
        f"uptime_s={uptime_s}\ndate_utc={date}\ninstance_id={instance_id}\n"
        f"instance_type={profile.instance_type}\ninstance_group=worker-group-1\ntimeout_s=20\n"
    )


def gpu_serial(instance_id: str, gpu: int) -> str:
    """A 13-digit board serial (the form H100 boards print), fixed per node and GPU.

    Derived from a hash, not the node's random stream, so adding the field moved no other value."""
    digest = hashlib.sha256(f"hpd-sim-serial:{instance_id}:{gpu}".encode()).hexdigest()
    return f"{int(digest, 16) % 10**13:013d}"


def _gpu_query(
    profile: InstanceProfile, faults: NodeFaults, rng: random.Random, instance_id: str, uuids: list[str]
) -> str:
    lines = [GPU_QUERY_HEADER]
    for gpu, bus_id in enumerate(profile.gpu_bus_ids):
        temperature = rng.randint(52, 66)
        if faults.gpu_temp_c is not None and gpu == faults.gpu_temp_index:
            temperature = faults.gpu_temp_c
        sm_clock = faults.sm_clock_mhz if faults.sm_clock_mhz is not None else profile.max_sm_clock_mhz
        width = 8 if faults.pcie_width_gpu == gpu else 16
        power = profile.power_limit_w * rng.uniform(0.80, 0.96)
        cells = (
            str(gpu),
            profile.gpu_name,
            bus_id,
            str(temperature),
            f"{sm_clock} MHz",
            f"{profile.max_sm_clock_mhz} MHz",
            str(profile.pcie_gen),
            str(profile.pcie_gen),
            str(width),
            "16",
            "0",
            "0",
            "0",
            "0x0000000000000000",
            f"{power:.2f} W",
            f"{profile.power_limit_w:.2f} W",
            VERSIONS["driver"],
            "No",
            "No",
            "0",
            "0",
            gpu_serial(instance_id, gpu),
            f"GPU-{uuids[gpu]}",
        )
        lines.append(", ".join(cells))
    return "\n".join(lines) + "\n"


def _gpu_topo(profile: InstanceProfile) -> str:
    """The real p5 `topo -m` layout: 8-wide columns, CPU/NUMA affinity, GPU NUMA ID N/A."""
    gpus = len(profile.gpu_bus_ids)
    header = " " * 8 + "".join(f"GPU{g}".ljust(8) for g in range(gpus))
    lines = [header + "CPU Affinity    NUMA Affinity   GPU NUMA ID"]
    for row in range(gpus):
        cells = "".join((" X" if col == row else profile.topo_link).ljust(8) for col in range(gpus))
        numa = 0 if row < gpus // 2 else 1
        lines.append(
            f"GPU{row}".ljust(8) + cells + profile.cpu_affinity[numa].ljust(16) + str(numa).ljust(16) + "N/A"
        )
    return "\n".join(lines) + "\n" + TOPO_LEGEND


def _gpu_title(gpu: int, profile: InstanceProfile, gpu_uuid: str) -> str:
    return f"GPU {gpu}: {profile.gpu_name} (UUID: GPU-{gpu_uuid})"


def _nvlink_status(profile: InstanceProfile, uuids: list[str]) -> str:
    lines: list[str] = []
    for gpu, gpu_uuid in enumerate(uuids):
        lines.append(_gpu_title(gpu, profile, gpu_uuid))
        lines.extend(f"\t Link {link}: {profile.nvlink_speed}" for link in range(profile.nvlinks))
    return "\n".join(lines) + "\n"


def _nvlink_errors(profile: InstanceProfile, uuids: list[str]) -> str:
    lines: list[str] = []
    indent = " " * 9
    for gpu, gpu_uuid in enumerate(uuids):
        lines.append(_gpu_title(gpu, profile, gpu_uuid))
        for link in range(profile.nvlinks):
            if link:
                lines.append("")
            lines.extend(f"{indent}Link {link}: {kind} Errors: 0" for kind in ("Replay", "Recovery", "CRC"))
    return "\n".join(lines) + "\n"


def _dmesg_bus(bus_id: str) -> str:
    """`00000000:B9:00.0` -> `0000:b9:00`, the form the Xid line carries."""
    domain, bus, rest = bus_id.split(":")
    return f"{domain[-4:]}:{bus.lower()}:{rest.split('.')[0]}"


def _xid(index: int, profile: InstanceProfile, faults: NodeFaults) -> str:
    if not faults.xid79:
        return ""
    when = BASE_TIME - timedelta(minutes=37, seconds=index)
    stamp = f"[{when:%a %b} {when.day:>2} {when:%H:%M:%S %Y}]"
    pci = _dmesg_bus(profile.gpu_bus_ids[faults.xid79_gpu])
    return f"{stamp} {XID79_MESSAGE.format(pci=pci)}\n"


def _efa_ports(profile: InstanceProfile, faults: NodeFaults) -> str:
    return "".join(
        f"{device} {'1: DOWN' if device == faults.efa_port_down else '4: ACTIVE'}\n"
        for device in sorted(profile.efa_devices)  # glob order, as the collector lists them
    )


def _efa_counters(profile: InstanceProfile, rng: random.Random) -> str:
    lines: list[str] = []
    for device in sorted(profile.efa_devices):
        tx_pkts = int(1_664_000 * rng.uniform(0.995, 1.005))
        rx_pkts = int(tx_pkts * rng.uniform(0.995, 1.005))
        write_wrs = tx_pkts // 3
        values = {
            "lifespan": 12,
            "rdma_read_bytes": 0,
            "rdma_read_resp_bytes": 0,
            "rdma_read_wrs": 0,
            "rdma_write_wrs": write_wrs,
            "rdma_write_bytes": write_wrs * 65_536,
            "rdma_write_recv_bytes": int(write_wrs * 65_536 * rng.uniform(0.99, 1.01)),
            "recv_wrs": rx_pkts - write_wrs,
            "recv_bytes": (rx_pkts - write_wrs) * 8_256,
            "send_wrs": tx_pkts - write_wrs,
            "send_bytes": (tx_pkts - write_wrs) * 8_256,
            "tx_pkts": tx_pkts,
            "tx_bytes": tx_pkts * 8_320,
            "rx_pkts": rx_pkts,
            "rx_bytes": rx_pkts * 8_320,
        }
        lines.extend(f"{device} {counter} {values.get(counter, 0)}" for counter in EFA_COUNTERS)
    return "\n".join(lines) + "\n"


def _fi_info(profile: InstanceProfile) -> str:
    """`fi_info -p efa` of libfabric 1.22 (provider 122.0): an RDM and a DGRAM entry per device."""
    entries = []
    for device in profile.efa_devices:
        for suffix, endpoint in (("rdm", "FI_EP_RDM"), ("dgrm", "FI_EP_DGRAM")):
            entries.append(
                "provider: efa\n    fabric: efa\n"
                f"    domain: {device}-{suffix}\n    version: 122.0\n"
                f"    type: {endpoint}\n    protocol: FI_PROTO_EFA\n"
            )
    return "".join(entries)


def _mounts() -> str:
    return (
        "/dev/root / ext4 rw,relatime,discard,errors=remount-ro 0 0\n"
        "/dev/nvme1n1 /opt/sagemaker ext4 rw,relatime 0 0\n"
        "/dev/md0 /opt/dlami/nvme ext4 rw,relatime,stripe=256 0 0\n"
        f"{FSX_SOURCE} {FSX_MOUNT} lustre rw,relatime,checksum,flock,nouser_xattr,lruresize,lazystatfs,"
        "nouser_fid2path,verbose,encrypt 0 0\n"
    )


def _df(profile: InstanceProfile, rng: random.Random) -> str:
    """`df -kP` with GNU df's alignment (source column at least 14 wide, numbers right-aligned)."""
    root_total = 101_430_960
    root_used = int(root_total * rng.uniform(0.38, 0.52))
    nvme_used = int(profile.nvme_kib * rng.uniform(0.02, 0.10))
    sagemaker_total = 524_032_000
    sagemaker_used = int(sagemaker_total * rng.uniform(0.001, 0.003))
    fsx_total, fsx_used = 1_181_116_006, 5_767_168
    rows = [
        ("/dev/root", root_total, root_used, "/"),
        ("tmpfs", profile.shm_kib, 0, "/dev/shm"),
        (FSX_SOURCE, fsx_total, fsx_used, FSX_MOUNT),
        ("/dev/md0", profile.nvme_kib, nvme_used, "/opt/dlami/nvme"),
        ("/dev/nvme1n1", sagemaker_total, sagemaker_used, "/opt/sagemaker"),
    ]
    table = [("Filesystem", "1024-blocks", "Used", "Available", "Capacity", "Mounted on")]
    for source, total, used, mount in rows:
        available = total - used
        capacity = -(-used * 100 // total) if used else 0  # df rounds the percentage up
        table.append((source, str(total), str(used), str(available), f"{capacity}%", mount))
    widths = [max(14, *(len(r[0]) for r in table))] + [max(len(r[i]) for r in table) for i in range(1, 5)]
    lines = []
    for row in table:
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, 5)] + [row[5]]
        lines.append(" ".join(cells))
    return "\n".join(lines) + "\n"


def _lfs_df() -> str:
    """`lfs df -h` of a 1.2 TiB FSx for Lustre file system, laid out like the real captures."""
    fs = FSX_SOURCE.rsplit("/", 1)[1]

    def row(name: str, size: str, used: str, avail: str, pct: str, where: str) -> str:
        return f"{name:<20}{size:>12}{used:>12}{avail:>12}{pct:>5} {where}"

    return (
        "\n".join(
            (
                row("UUID", "bytes", "Used", "Available", "Use%", "Mounted on"),
                row(f"{fs}-MDT0000_UUID", "34.4G", "13.2M", "34.4G", "1%", f"{FSX_MOUNT}[MDT:0]"),
                row(f"{fs}-OST0000_UUID", "1.1T", "5.5G", "1.1T", "1%", f"{FSX_MOUNT}[OST:0]"),
                "",
                row("filesystem_summary:", "1.1T", "5.5G", "1.1T", "1%", FSX_MOUNT),
                "",
            )
        )
        + "\n"
    )


def _cpu_stat(profile: InstanceProfile, faults: NodeFaults, rng: random.Random) -> str:
    """Two `cpu ` lines one second apart (USER_HZ 100): the delta carries the iowait share."""
    fields = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"]
    first = {name: 0 for name in fields}
    first.update(
        user=rng.randint(400_000_000, 900_000_000),
        nice=rng.randint(10_000, 90_000),
        system=rng.randint(30_000_000, 60_000_000),
        idle=rng.randint(2_000_000_000, 4_000_000_000),
        iowait=rng.randint(1_000_000, 5_000_000),
        softirq=rng.randint(1_000_000, 3_000_000),
    )
    budget = profile.cpus * 100
    iowait = round(
        budget * (faults.iowait_pct if faults.iowait_pct is not None else rng.uniform(0.2, 1.2)) / 100
    )
    user = round(budget * rng.uniform(0.18, 0.26))
    system = round(budget * rng.uniform(0.02, 0.04))
    softirq = round(budget * 0.003)
    delta = dict.fromkeys(fields, 0)
    delta.update(user=user, system=system, iowait=iowait, softirq=softirq)
    delta["idle"] = max(budget - user - system - iowait - softirq, 0)
    second = {name: first[name] + delta[name] for name in fields}
    return "".join(
        "cpu  " + " ".join(str(values[name]) for name in fields) + "\n" for values in (first, second)
    )


def _io_pressure(faults: NodeFaults, rng: random.Random) -> str:
    some10 = faults.io_pressure_avg10 if faults.io_pressure_avg10 is not None else rng.uniform(0.0, 0.6)
    some60, some300 = some10 * 0.8, some10 * 0.6
    total = rng.randint(50_000_000, 400_000_000)
    return (
        f"some avg10={some10:.2f} avg60={some60:.2f} avg300={some300:.2f} total={total}\n"
        f"full avg10={some10 * 0.7:.2f} avg60={some60 * 0.7:.2f} avg300={some300 * 0.7:.2f} "
        f"total={int(total * 0.7)}\n"
    )


#: PCI device ids (`nvidia-smi -q` "Device Id", sysfs `device`) per GPU model, and the EFA device id.
_GPU_PCI_DEVICE_IDS = {"NVIDIA H100 80GB HBM3": "0x2330", "NVIDIA A100-SXM4-40GB": "0x20b0"}
_EFA_PCI_DEVICE_IDS = {"ml.p5.48xlarge": "0xefa2", "ml.p4d.24xlarge": "0xefa1"}
#: The aer_dev_* error names of a 5.15 kernel (drivers/pci/pcie/aer.c), as the files list them.
_AER_NAMES = {
    "aer_dev_correctable": (
        ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"),
        "TOTAL_ERR_COR",
    ),
    "aer_dev_nonfatal": (
        (
            "Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
            "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
            "PoisonTLPBlocked",
        ),
        "TOTAL_ERR_NONFATAL",
    ),
}  # fmt: skip
_AER_NAMES["aer_dev_fatal"] = (_AER_NAMES["aer_dev_nonfatal"][0], "TOTAL_ERR_FATAL")


def _gpu_pcie(profile: InstanceProfile, faults: NodeFaults) -> str:
    """`nvidia-smi -q -d PCIE`: the real report's header and PCI block (shape of the H100 capture)."""
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        f"{'Timestamp':<42}: {BASE_TIME.strftime('%a %b %d %H:%M:%S %Y')}",
        f"{'Driver Version':<42}: {VERSIONS['driver']}",
        f"{'CUDA Version':<42}: {VERSIONS['cuda']}",
        "",
        f"{'Attached GPUs':<42}: {len(profile.gpu_bus_ids)}",
    ]
    device_id = _GPU_PCI_DEVICE_IDS.get(profile.gpu_name, "0x0000")[2:].upper()
    for gpu, bus_id in enumerate(profile.gpu_bus_ids):
        _, bus, dev_fn = bus_id.split(":")
        width = 8 if faults.pcie_width_gpu == gpu else 16
        rows = [
            (4, "PCI", None),
            (8, "Bus", f"0x{bus}"),
            (8, "Device", f"0x{dev_fn.split('.')[0]}"),
            (8, "Domain", "0x0000"),
            (8, "Device Id", f"0x{device_id}10DE"),
            (8, "Bus Id", bus_id),
            (8, "GPU Link Info", None),
            (12, "PCIe Generation", None),
            (16, "Max", str(profile.pcie_gen)),
            (16, "Current", str(profile.pcie_gen)),
            (12, "Link Width", None),
            (16, "Max", "16x"),
            (16, "Current", f"{width}x"),
            (8, "Replays Since Reset", "0"),
            (8, "Replay Number Rollovers", "0"),
        ]
        out.append(f"GPU {bus_id}")
        out += [
            " " * indent + (name if value is None else f"{name:<{42 - indent}}: {value}")
            for indent, name, value in rows
        ]
        out.append("")
    return "\n".join(out) + "\n"


def _pcie_aer(profile: InstanceProfile) -> str:
    """The collector's pcie-aer section: the GPUs with all-zero AER counters; the EFA functions listed
    without AER files (statistics not exposed: the "not readable" path, never a fault)."""
    devices = [
        (
            f"0000:{bus_id.split(':', 1)[1].lower()}",
            "0x10de",
            _GPU_PCI_DEVICE_IDS.get(profile.gpu_name, "0x0000"),
            "0x030200",
        )
        for bus_id in profile.gpu_bus_ids
    ]
    for name in profile.efa_devices:  # rdmap<bus>s<slot>: the PCI bus number in decimal
        bus, slot = name.removeprefix("rdmap").split("s")
        devices.append(
            (
                f"0000:{int(bus):02x}:{int(slot):02x}.0",
                "0x1d0f",
                _EFA_PCI_DEVICE_IDS[profile.instance_type],
                "0x020000",
            )
        )
    out: list[str] = []
    for bdf, vendor, device, pci_class in sorted(devices):
        out.append(f"== {bdf} vendor={vendor} device={device} class={pci_class}")
        if vendor != "0x10de":
            continue
        for file, (names, total) in _AER_NAMES.items():
            out.append(f"-- {file}")
            out += [f"{name} 0" for name in (*names, total)]
    return "\n".join(out) + "\n"


#: The two example snapshots served to the README and `make demo`.
EXAMPLE_FAULTY_INDEX = 2
EXAMPLE_FAULTS = NodeFaults(
    pcie_width_gpu=3, xid79=True, xid79_gpu=3, efa_port_down="rdmap113s0", governor="powersave"
)


def example_nodes(seed: int = 0) -> list[SimulatedNode]:
    """Node 0 healthy and node 2 with the example faults (x8 GPU 3, Xid 79, EFA down, powersave)."""
    return [
        simulate_node(0, seed=seed),
        simulate_node(EXAMPLE_FAULTY_INDEX, faults=EXAMPLE_FAULTS, seed=seed),
    ]


def write_examples(directory: Path, seed: int = 0) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for node in example_nodes(seed):
        path = directory / f"{node.instance_id}.txt"
        path.write_text(node.text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hyperpod_perf_dev.sim.node", description=__doc__)
    parser.add_argument(
        "--write", type=Path, required=True, metavar="DIR", help="write the example snapshots"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for path in write_examples(args.write, args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
