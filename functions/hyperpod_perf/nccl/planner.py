"""Plan pairwise nccl-tests runs. Read-only: it prints commands, it never submits anything.

Full plan: the round-robin (circle) schedule. Fix the first node, rotate the others one step per
round; every round is a set of disjoint pairs that can run at the same time, and every pair
appears exactly once. N-1 rounds for an even N; for an odd N a placeholder "bye" is added, so N
rounds in which one node sits out (N rounds is the minimum: a round holds at most (N-1)/2 pairs).

Quick plan: two (three for an odd N) rounds along a ring (0-1, 2-3, ... then 1-2, 3-4, ...,
last-0), so every node is measured twice with different partners — a bad node is slow in both
of its pairs, a bad pair in one. Then each suspect against two known-good nodes.

Rendered as `sbatch` lines for Slurm (logs named `<hostA>__<hostB>.log`, which `nccl analyze`
reads back) or as Kubeflow MPIJob manifests for EKS.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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


def _log_name(a: str, b: str) -> str:
    return f"{a}__{b}.log"


def render_slurm(
    rounds: list[Round],
    *,
    script: str = DEFAULT_SBATCH_SCRIPT,
    log_dir: str = DEFAULT_LOG_DIR,
    title: str = "",
) -> str:
    pairs = sum(len(r) for r in rounds)
    lines = [
        f"# {title or 'nccl-tests pair plan'}: {pairs} pairs in {len(rounds)} rounds",
        "# read-only plan: nothing was submitted",
        f"# {script}: a 2-node job running all_reduce_perf, e.g.",
        "#   srun --mpi=pmix all_reduce_perf -b 8 -e 16G -f 2 -g 1",
        "# --exclusive makes jobs that share a node queue behind each other, so every line may be",
        "# submitted at once; a round lists the pairs that can run at the same time.",
        f"mkdir -p {log_dir}",
    ]
    for index, pairs_in_round in enumerate(rounds, start=1):
        lines.append(f"# round {index} of {len(rounds)} ({len(pairs_in_round)} pairs)")
        for a, b in pairs_in_round:
            lines.append(
                f"sbatch --exclusive -N 2 -w {a},{b} --job-name=nccl-pair "
                f"--output={log_dir}/{_log_name(a, b)} {script}"
            )
    return "\n".join(lines) + "\n"


def _k8s_name(*parts: str) -> str:
    """DNS-1123 label: lowercase alphanumerics and '-', at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return name[:63].rstrip("-") or "nccl-pair"


def render_eks(
    rounds: list[Round], *, image: str = DEFAULT_IMAGE, gpus_per_node: int = 8, efa_per_node: int = 32
) -> str:
    """Kubeflow MPIJob manifests (v2beta1), one per pair, pinned to the two nodes by hostname."""
    pairs = sum(len(r) for r in rounds)
    docs = [
        f"# nccl-tests pair plan: {pairs} pairs in {len(rounds)} rounds\n"
        "# read-only plan: nothing was applied\n"
        "# Apply one round at a time (kubectl apply -f round-N.yaml) and keep each launcher's log as\n"
        "# <hostA>__<hostB>.log for `hyperpod-perf nccl analyze`. Adjust image, GPU and EFA counts.\n"
    ]
    total_gpus = 2 * gpus_per_node
    for index, pairs_in_round in enumerate(rounds, start=1):
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
    return "---\n".join(docs)


def render_plan(
    nodes: Sequence[str],
    mode: Literal["full", "quick"] = "full",
    scheduler: Literal["slurm", "eks"] = "slurm",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
) -> str:
    """The plan as text for the chosen scheduler."""
    if mode == "full":
        rounds, title = round_robin(nodes), "full pairwise plan (round-robin)"
    elif mode == "quick":
        rounds, title = (
            quick_plan(nodes, suspects, good),
            "quick plan (ring pairs, then suspects vs known-good)",
        )
    else:
        raise ValueError(f"unknown plan mode {mode!r} (full|quick)")
    if scheduler == "slurm":
        return render_slurm(rounds, title=title)
    if scheduler == "eks":
        return render_eks(rounds)
    raise ValueError(f"unknown scheduler {scheduler!r} (slurm|eks)")
