"""Plan pairwise nccl-tests runs. Read-only: it prints commands, it never submits anything.

Full plan: the round-robin (circle) schedule. Fix the first node, rotate the others one step per
round; every round is a set of disjoint pairs that can run at the same time, and every pair
appears exactly once. N-1 rounds for an even N; for an odd N a placeholder "bye" is added, so N
rounds in which one node sits out (N rounds is the minimum: a round holds at most (N-1)/2 pairs).

Quick plan: two (three for an odd N) rounds along a ring (0-1, 2-3, ... then 1-2, 3-4, ...,
last-0), so every node is measured twice with different partners — a bad node is slow in both
of its pairs, a bad pair in one. Then each suspect against two known-good nodes.

Layers plan (`--mode layers`, with the network layers of a topology file): pairs within each
bottom-layer group (a ring, so each node is measured twice beside its closest peers) and, at every
layer, pairs across each boundary between sibling groups (the groups under one parent, in a ring,
`CROSSING_PAIRS` pairs per neighbouring two, each from other nodes): a slow uplink shows as slow
crossing pairs on its group's two boundaries while its group is fast inside. About N + 2 x (groups)
pairs instead of N(N-1)/2 (for 64 and 1,024 nodes see the README).

Rendered as `sbatch` lines for Slurm (logs named `<hostA>__<hostB>.log`, which `nccl analyze`
reads back) or as Kubeflow MPIJob manifests for EKS.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Literal

Pair = tuple[str, str]
Round = list[Pair]

DEFAULT_SBATCH_SCRIPT = "nccl-tests.sbatch"
DEFAULT_LOG_DIR = "nccl-pairs"
DEFAULT_IMAGE = "<your nccl-tests image, e.g. from awsome-distributed-training micro-benchmarks/nccl-tests>"


def round_robin(nodes: Sequence[str]) -> list[Round]:
    """Every pair exactly once, in rounds of disjoint pairs (circle method)."""
    unique = list(dict.fromkeys(nodes))
    if len(unique) < 2:
        return []
    ring: list[str | None] = [*unique, None] if len(unique) % 2 else list(unique)
    size = len(ring)
    rounds: list[Round] = []
    for _ in range(size - 1):
        pairs: Round = []
        for i in range(size // 2):
            a, b = ring[i], ring[size - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def _greedy_rounds(pairs: Sequence[Pair]) -> list[Round]:
    """Put each pair in the first round where neither node is busy yet."""
    rounds: list[Round] = []
    busy: list[set[str]] = []
    for a, b in pairs:
        for index, used in enumerate(busy):
            if a not in used and b not in used:
                rounds[index].append((a, b))
                used.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def quick_plan(
    nodes: Sequence[str], suspects: Sequence[str] = (), good: Sequence[str] = (), partners: int = 2
) -> list[Round]:
    """Ring rounds over all nodes, then each suspect against `partners` known-good nodes."""
    unique = list(dict.fromkeys(nodes))
    rounds: list[Round] = []
    if len(unique) == 2:
        rounds.append([(unique[0], unique[1])])
    elif len(unique) > 2:
        ring = [(unique[i], unique[(i + 1) % len(unique)]) for i in range(len(unique))]
        rounds.extend(_greedy_rounds(ring))
    suspect_list = list(dict.fromkeys(suspects))
    good_list = [n for n in dict.fromkeys(good or unique) if n not in suspect_list]
    checks: list[Pair] = []
    if good_list:
        for index, suspect in enumerate(suspect_list):
            for j in range(min(partners, len(good_list))):
                checks.append((suspect, good_list[(index * partners + j) % len(good_list)]))
    rounds.extend(_greedy_rounds(checks))
    return rounds


CROSSING_PAIRS = 2


def _ring(members: Sequence[str]) -> list[Pair]:
    if len(members) < 2:
        return []
    if len(members) == 2:
        return [(members[0], members[1])]
    return [(members[i], members[(i + 1) % len(members)]) for i in range(len(members))]


def layers_plan(nodes: Sequence[str], layers: Mapping[str, Sequence[str]]) -> list[Round]:
    """Pairs within each bottom group and across each sibling boundary at every layer (see above).

    `layers` maps each node to its network nodes, top first; nodes it does not place are tested
    among themselves in a ring (their boundaries are unknown)."""
    from hyperpod_perf.nccl.analysis.placement import layer_map

    unique = list(dict.fromkeys(nodes))
    placed = layer_map(layers, unique)  # host names match their short form in the topology
    pairs: list[Pair] = []
    depth = max((len(v) for v in placed.values()), default=0)
    leaves: dict[tuple[str, ...], list[str]] = {}
    for node, path in placed.items():
        leaves.setdefault(path, []).append(node)
    for members in leaves.values():
        pairs += _ring(members)
    for layer in range(1, depth + 1):
        groups: dict[tuple[str, ...], list[str]] = {}
        for node, path in placed.items():
            if len(path) >= layer:
                groups.setdefault(path[:layer], []).append(node)
        siblings: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for group in sorted(groups):
            siblings.setdefault(group[:-1], []).append(group)
        for under_one_parent in siblings.values():
            boundaries = list(zip(under_one_parent, under_one_parent[1:] + under_one_parent[:1], strict=True))
            if len(under_one_parent) == 2:
                boundaries = boundaries[:1]
            for g, h in boundaries if len(under_one_parent) > 1 else []:
                a_side, b_side = groups[g], groups[h]
                for k in range(min(CROSSING_PAIRS, len(a_side), len(b_side))):
                    pairs.append((a_side[k], b_side[-1 - k]))
    unplaced = [n for n in unique if n not in placed]
    pairs += _ring(unplaced)
    return _greedy_rounds(list(dict.fromkeys(pairs)))


def _log_name(a: str, b: str) -> str:
    return f"{a}__{b}.log"


def sbatch_template() -> str:
    """The nccl-tests sbatch script the plan's lines submit (shipped with the package)."""
    return files("hyperpod_perf.nccl").joinpath(DEFAULT_SBATCH_SCRIPT).read_text(encoding="utf-8")


def _slurm_header(rounds: list[Round], script: str, title: str) -> list[str]:
    pairs = sum(len(r) for r in rounds)
    return [
        f"# {title or 'nccl-tests pair plan'}: {pairs} pairs in {len(rounds)} rounds",
        "# read-only plan: nothing was submitted",
        f"# {script}: the 2-node all_reduce_perf job these lines submit; `--out DIR` writes it next to",
        "# the plan (one round-N.sh per round). Check NCCL_TESTS_BIN in it before submitting.",
        "# --exclusive makes jobs that share a node queue behind each other, so every line may be",
        "# submitted at once; a round lists the pairs that can run at the same time.",
    ]


def _sbatch_lines(index: int, rounds: list[Round], script: str, log_dir: str) -> list[str]:
    """One round's sbatch lines; every value is shell-quoted (node names come from a file)."""
    count = len(rounds[index - 1])
    lines = [f"# round {index} of {len(rounds)} ({count} pair{'' if count == 1 else 's'})"]
    for a, b in rounds[index - 1]:
        lines.append(
            f"sbatch --exclusive -N 2 -w {shlex.quote(f'{a},{b}')} --job-name=nccl-pair "
            f"--output={shlex.quote(f'{log_dir}/{_log_name(a, b)}')} {shlex.quote(script)}"
        )
    return lines


def render_slurm(
    rounds: list[Round],
    *,
    script: str = DEFAULT_SBATCH_SCRIPT,
    log_dir: str = DEFAULT_LOG_DIR,
    title: str = "",
) -> str:
    lines = [*_slurm_header(rounds, script, title), f"mkdir -p {shlex.quote(log_dir)}"]
    for index in range(1, len(rounds) + 1):
        lines += _sbatch_lines(index, rounds, script, log_dir)
    return "\n".join(lines) + "\n"


def slurm_round_files(
    rounds: list[Round],
    *,
    script: str = DEFAULT_SBATCH_SCRIPT,
    log_dir: str = DEFAULT_LOG_DIR,
    title: str = "",
) -> dict[str, str]:
    """round-N.sh (one per round, run each with `sh round-N.sh`) plus the sbatch script itself."""
    out: dict[str, str] = {}
    for index in range(1, len(rounds) + 1):
        lines = [
            "#!/bin/sh",
            *_slurm_header(rounds, script, title),
            "set -eu",
            'cd "$(dirname "$0")"  # the sbatch script and the logs live next to this file',
            f"mkdir -p {shlex.quote(log_dir)}",
            *_sbatch_lines(index, rounds, script, log_dir),
        ]
        out[f"round-{index}.sh"] = "\n".join(lines) + "\n"
    out[script] = sbatch_template()
    return out


def _k8s_name(*parts: str) -> str:
    """DNS-1123 label: lowercase alphanumerics and '-', at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return name[:63].rstrip("-") or "nccl-pair"


def _eks_header(rounds: list[Round]) -> str:
    pairs = sum(len(r) for r in rounds)
    return (
        f"# nccl-tests pair plan: {pairs} pairs in {len(rounds)} rounds\n"
        "# read-only plan: nothing was applied\n"
        "# With `--out DIR` each round is its own file: kubectl apply -f DIR/round-N.yaml, one round at\n"
        "# a time; keep each launcher's log as <hostA>__<hostB>.log for `hyperpod-perf nccl analyze`.\n"
        "# Adjust image, GPU and EFA counts.\n"
    )


def _eks_round(
    index: int, pairs_in_round: Round, image: str, gpus_per_node: int, efa_per_node: int
) -> list[str]:
    """One MPIJob manifest per pair of the round (node names validated, YAML double-quoted)."""
    total_gpus = 2 * gpus_per_node
    docs = []
    for a, b in pairs_in_round:
        name = _k8s_name("nccl", f"r{index}", a, b)
        docs.append(
            f"""# round {index}: {a} <-> {b}
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: {name}
  labels:
    hyperpod-perf/round: "{index}"
spec:
  slotsPerWorker: {gpus_per_node}
  runPolicy:
    cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: launcher
              image: "{image}"
              command: ["mpirun", "--allow-run-as-root", "--tag-output", "-np", "{total_gpus}",
                        "-x", "FI_PROVIDER=efa", "-x", "NCCL_DEBUG=WARN",
                        "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]
    Worker:
      replicas: 2
      template:
        metadata:
          labels:
            hyperpod-perf/pair: "{name}"
        spec:
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                  - matchExpressions:
                      - key: kubernetes.io/hostname
                        operator: In
                        values: ["{a}", "{b}"]
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                - labelSelector:
                    matchLabels:
                      hyperpod-perf/pair: "{name}"
                  topologyKey: kubernetes.io/hostname
          containers:
            - name: worker
              image: "{image}"
              resources:
                limits:
                  nvidia.com/gpu: {gpus_per_node}
                  vpc.amazonaws.com/efa: {efa_per_node}
"""
        )
    return docs


def render_eks(
    rounds: list[Round], *, image: str = DEFAULT_IMAGE, gpus_per_node: int = 8, efa_per_node: int = 32
) -> str:
    """Kubeflow MPIJob manifests (v2beta1), one per pair, pinned to the two nodes by hostname."""
    docs = [_eks_header(rounds)]
    for index, pairs_in_round in enumerate(rounds, start=1):
        docs += _eks_round(index, pairs_in_round, image, gpus_per_node, efa_per_node)
    return "---\n".join(docs)


def eks_round_files(
    rounds: list[Round], *, image: str = DEFAULT_IMAGE, gpus_per_node: int = 8, efa_per_node: int = 32
) -> dict[str, str]:
    """round-N.yaml, one per round: `kubectl apply -f round-N.yaml` starts exactly that round."""
    return {
        f"round-{index}.yaml": "---\n".join(
            [_eks_header(rounds), *_eks_round(index, pairs, image, gpus_per_node, efa_per_node)]
        )
        for index, pairs in enumerate(rounds, start=1)
    }


Mode = Literal["full", "quick", "layers"]


def plan_rounds(
    nodes: Sequence[str],
    mode: Mode = "full",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
    layers: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[Round], str]:
    """The rounds of the chosen mode and the plan's title."""
    if mode == "layers":
        if not layers:
            raise ValueError("the layers plan needs the nodes' network layers (--topology FILE)")
        return layers_plan(nodes, layers), "layers plan (within and across each network-layer boundary)"
    if mode == "full":
        return round_robin(nodes), "full pairwise plan (round-robin)"
    if mode == "quick":
        return quick_plan(nodes, suspects, good), "quick plan (ring pairs, then suspects vs known-good)"
    raise ValueError(f"unknown plan mode {mode!r} (full|quick|layers)")


def render_plan(
    nodes: Sequence[str],
    mode: Mode = "full",
    scheduler: Literal["slurm", "eks"] = "slurm",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
    layers: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The plan as text for the chosen scheduler."""
    rounds, title = plan_rounds(nodes, mode, suspects, good, layers)
    if scheduler == "slurm":
        return render_slurm(rounds, title=title)
    if scheduler == "eks":
        return render_eks(rounds)
    raise ValueError(f"unknown scheduler {scheduler!r} (slurm|eks)")


def plan_files(
    nodes: Sequence[str],
    mode: Mode = "full",
    scheduler: Literal["slurm", "eks"] = "slurm",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
    layers: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, str]:
    """The plan as files, one per round (Slurm: round-N.sh and the sbatch script; EKS: round-N.yaml)."""
    rounds, title = plan_rounds(nodes, mode, suspects, good, layers)
    if scheduler == "slurm":
        return slurm_round_files(rounds, title=title)
    if scheduler == "eks":
        return eks_round_files(rounds)
    raise ValueError(f"unknown scheduler {scheduler!r} (slurm|eks)")
