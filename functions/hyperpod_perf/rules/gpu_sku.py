"""What each GPU instance type should show: how many GPUs, and how they are linked (`topo -m`).

Why a table: a GPU that fell off the bus can simply vanish from `nvidia-smi` (7 GPUs listed, no
error), and NVLink that failed to train shows up only as `SYS`/`NODE`/`PHB` between GPU pairs in
`nvidia-smi topo -m`. Both need the expected value, which only the instance type gives.

Sources (each row cites one):
- GPU count and model: the Amazon EC2 accelerated-computing instance specifications
  (docs.aws.amazon.com/ec2/latest/instancetypes/ac.html) — p4d/p4de.24xlarge 8x A100,
  p5.48xlarge 8x H100, p5e/p5en.48xlarge 8x H200, p6-b200.48xlarge 8x B200,
  p6e-gb200.36xlarge 4x B200 (GB200 superchips), g5/g6/g6e sizes 1, 4 or 8 GPUs.
- NVLink per GPU pair, as `topo -m` prints it: A100 SXM4 has 12 third-generation NVLinks, all to
  NVSwitches, so every pair reads `NV12` (NVIDIA A100 datasheet; a DGX A100 `topo -m` in GitHub
  issue NVIDIA/DCGM#149 reads NV12 for all 28 pairs); H100/H200 SXM have 18 fourth-generation
  NVLinks -> `NV18` (NVIDIA H100/H200 datasheets; the real p5.48xlarge `topo -m` in
  tests/fixtures/real/gpu-topo reads NV18); B200 has 18 fifth-generation NVLinks -> `NV18`
  (NVIDIA Blackwell datasheet). A10G (g5), L4 (g6) and L40S (g6e) have no NVLink: not judged.
- p6e-gb200: its GPUs reach each other through the rack's NVLink switch trays, and no public
  `topo -m` of one was found, so the pair check is not applied there (count only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSku:
    gpus: int
    model: str
    nvlinks_per_pair: int | None  # the N of `NV<N>` between every GPU pair; None: pairs not judged
    source: str
    has_nvlink: bool = True


_EC2_SPECS = "Amazon EC2 accelerated computing instance specifications"

_EIGHT_NVLINK: dict[str, GpuSku] = {
    "p4d.24xlarge": GpuSku(8, "A100", 12, f"{_EC2_SPECS}; NVIDIA A100 datasheet (12 NVLinks)"),
    "p4de.24xlarge": GpuSku(8, "A100", 12, f"{_EC2_SPECS}; NVIDIA A100 datasheet (12 NVLinks)"),
    "p5.48xlarge": GpuSku(8, "H100", 18, f"{_EC2_SPECS}; NVIDIA H100 datasheet (18 NVLinks)"),
    "p5e.48xlarge": GpuSku(8, "H200", 18, f"{_EC2_SPECS}; NVIDIA H200 datasheet (18 NVLinks)"),
    "p5en.48xlarge": GpuSku(8, "H200", 18, f"{_EC2_SPECS}; NVIDIA H200 datasheet (18 NVLinks)"),
    "p6-b200.48xlarge": GpuSku(8, "B200", 18, f"{_EC2_SPECS}; NVIDIA Blackwell datasheet (18 NVLinks)"),
}

_OTHER: dict[str, GpuSku] = {
    "p5.4xlarge": GpuSku(1, "H100", None, _EC2_SPECS, has_nvlink=False),
    "p6e-gb200.36xlarge": GpuSku(4, "B200", None, _EC2_SPECS),
}

#: g5 (A10G), g6 (L4), g6e (L40S): 1 GPU up to 16xlarge, 4 at 12x/24xlarge, 8 at 48xlarge; no NVLink.
_PCIE_FAMILIES = {"g5": "A10G", "g6": "L4", "g6e": "L40S"}
_PCIE_SIZES = {
    "xlarge": 1,
    "2xlarge": 1,
    "4xlarge": 1,
    "8xlarge": 1,
    "16xlarge": 1,
    "12xlarge": 4,
    "24xlarge": 4,
    "48xlarge": 8,
}

_NV_RE = re.compile(r"^NV(\d+)$")


def gpu_sku(instance_type: str | None) -> GpuSku | None:
    """The expectation for `ml.p5.48xlarge` / `p5.48xlarge`; None when the type is not in the table."""
    if not instance_type:
        return None
    name = instance_type.strip().lower().removeprefix("ml.")
    if name in _EIGHT_NVLINK:
        return _EIGHT_NVLINK[name]
    if name in _OTHER:
        return _OTHER[name]
    family, _, size = name.partition(".")
    if family in _PCIE_FAMILIES and size in _PCIE_SIZES:
        return GpuSku(_PCIE_SIZES[size], _PCIE_FAMILIES[family], None, _EC2_SPECS, has_nvlink=False)
    return None


#: GPU models (as nvidia-smi names them) that are only built as NVLink (SXM / superchip) parts:
#: `A100-SXM4-*`, `Tesla V100-SXM2-*`, `H100 80GB HBM3` (SXM5; the PCIe card is `H100 PCIe`,
#: the NVL one `H100 NVL`), `H200` (not `H200 NVL`), `B200`/`B300`, `GB200`/`GB300` (NVIDIA
#: A100/H100/H200/Blackwell datasheets). Used only where the instance type is unknown, to tell a
#: data-centre GPU that lost its NVLinks from a desktop or PCIe card that never had any.
_NVLINK_ONLY_MODEL_RE = re.compile(r"SXM|HBM3|\bH200\b(?! NVL)|\bG?B[23]00\b", re.IGNORECASE)


def nvlink_expected(instance_type: str | None, gpu_name: str) -> bool | None:
    """Whether this GPU should have NVLink: from the instance type when it is in the table, else
    True for a model only built as an NVLink part, None when nothing says (a PCIe or desktop card
    on an unknown type may or may not carry a bridge)."""
    sku = gpu_sku(instance_type)
    if sku is not None:
        return sku.has_nvlink
    return True if _NVLINK_ONLY_MODEL_RE.search(gpu_name) else None


def nvlink_count(link: str) -> int | None:
    """`NV18` -> 18; `SYS`, `NODE`, `PHB`, `PXB`, `PIX`, `X` -> None (no NVLink on that path)."""
    match = _NV_RE.match(link.strip())
    return int(match.group(1)) if match else None


def gpu_sku_types() -> frozenset[str]:
    """Every instance type (without `ml.`) this table has an expectation for."""
    pcie = {f"{family}.{size}" for family in _PCIE_FAMILIES for size in _PCIE_SIZES}
    return frozenset(_EIGHT_NVLINK) | frozenset(_OTHER) | pcie
