"""`nccl plan` as an operator runs it: names validated, values quoted, one file per round."""

from __future__ import annotations

import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hyperpod_perf.cli import main
from hyperpod_perf.nccl.commands import NODE_NAME_RE, read_node_list

NODES = ["ip-10-1-0-1", "ip-10-1-0-2", "i-0123456789abcdef0", "node-4.cluster.internal"]


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str, *mentions: str) -> None:
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("hyperpod-perf: ")
    for mention in mentions:
        assert mention in line, line


@pytest.fixture
def node_file(tmp_path: Path) -> Path:
    path = tmp_path / "nodes.txt"
    path.write_text("# job nodes\n" + "\n".join(NODES) + "\n")
    return path


@pytest.mark.parametrize(
    ("content", "mentions"),
    [
        ("ip-10-1-0-1\nx;echo PWNED\n", ["line 2", "'x;echo'"]),
        ("ip-10-1-0-1\n$(id)\n", ["line 2", "'$(id)'"]),
        ("ip-10-1-0-1 `reboot`\n", ["line 1", "'`reboot`'"]),
        ("ip-10-1-0-1\n-rf\n", ["line 2", "'-rf'"]),
        ("node_1\n", ["line 1", "'node_1'"]),
    ],
)
def test_names_that_are_no_host_name_or_instance_id_exit_2_naming_file_and_line(
    capsys, tmp_path, content, mentions
):
    # Given a node file holding a name no scheduler uses (shell syntax, an option, an underscore)
    path = tmp_path / "nodes.txt"
    path.write_text(content)

    code, out, err = run(capsys, "nccl", "plan", "--node-file", path)

    # Then nothing is printed into a command: exit 2, one line naming the file and the line
    assert (code, out) == (2, "")
    one_line(err, str(path), *mentions)


def test_a_binary_file_is_refused_naming_it(capsys, tmp_path):
    # Given a binary (here: the Python interpreter itself)
    binary = Path(sys.executable).resolve()

    code, out, err = run(capsys, "nccl", "plan", "--node-file", binary)

    assert (code, out) == (2, "")
    one_line(err, str(binary), "binary")


def test_suspect_and_good_must_be_valid_names_in_the_list(capsys, node_file):
    code, _, err = run(
        capsys, "nccl", "plan", "--node-file", node_file, "--mode", "quick", "--suspect", "ip-9"
    )
    assert code == 2
    one_line(err, "--suspect ip-9", "not in the node list (4 nodes)")
    code, _, err = run(capsys, "nccl", "plan", "--node-file", node_file, "--good", "$(id)")
    assert code == 2
    one_line(err, "--good '$(id)'", "not a host name or instance id")


def test_nodes_is_kept_as_a_deprecated_alias_of_node_file(capsys, node_file):
    code_alias, out_alias, _ = run(capsys, "nccl", "plan", "--nodes", node_file)
    code, out, _ = run(capsys, "nccl", "plan", "--node-file", node_file)
    assert (code_alias, out_alias) == (code, out) == (0, out)


def test_every_value_in_an_sbatch_line_is_a_single_shell_word(capsys, node_file):
    # When the plan is printed
    code, out, _ = run(capsys, "nccl", "plan", "--node-file", node_file)

    # Then each sbatch line splits (as a shell would) into exactly the expected words
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("sbatch ")]
    assert len(lines) == 6
    for line in lines:
        words = shlex.split(line)
        assert words[:5] == ["sbatch", "--exclusive", "-N", "2", "-w"]
        a, b = words[5].split(",")
        assert {a, b} <= set(NODES)
        assert words[6:] == ["--job-name=nccl-pair", f"--output=nccl-pairs/{a}__{b}.log", "nccl-tests.sbatch"]


def test_out_writes_one_shell_file_per_round_and_the_sbatch_script(capsys, node_file, tmp_path):
    out_dir = tmp_path / "plan"

    code, out, err = run(capsys, "nccl", "plan", "--node-file", node_file, "--out", out_dir)

    # Then N-1 = 3 round files, each with the disjoint pairs of its round, plus the sbatch script,
    # named on stderr (stdout stays empty: the plan is in DIR)
    assert code == 0
    assert out == ""
    assert (
        err.splitlines()[0] == f"written to {out_dir}/: round-1.sh, round-2.sh, round-3.sh, nccl-tests.sbatch"
    )
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "nccl-tests.sbatch",
        "round-1.sh",
        "round-2.sh",
        "round-3.sh",
    ]
    assert f"sh {out_dir}/round-1.sh" in err
    pairs = set()
    for k in (1, 2, 3):
        text = (out_dir / f"round-{k}.sh").read_text()
        assert text.startswith("#!/bin/sh\n")
        round_pairs = [shlex.split(line)[5] for line in text.splitlines() if line.startswith("sbatch ")]
        assert len(round_pairs) == 2
        assert len({n for p in round_pairs for n in p.split(",")}) == 4  # disjoint
        pairs |= {frozenset(p.split(",")) for p in round_pairs}
        assert (out_dir / f"round-{k}.sh").stat().st_mode & stat.S_IXUSR
        # and it is valid shell (parsed, not run)
        assert subprocess.run(["sh", "-n", str(out_dir / f"round-{k}.sh")], check=False).returncode == 0
    assert len(pairs) == 6  # every pair once
    sbatch = (out_dir / "nccl-tests.sbatch").read_text()
    assert "#SBATCH --nodes=2" in sbatch and "all_reduce_perf" in sbatch
    assert subprocess.run(["bash", "-n", str(out_dir / "nccl-tests.sbatch")], check=False).returncode == 0


def test_out_for_eks_writes_one_manifest_file_per_round(capsys, node_file, tmp_path):
    out_dir = tmp_path / "eks"

    code, _, err = run(
        capsys, "nccl", "plan", "--node-file", node_file, "--scheduler", "eks", "--out", out_dir
    )

    # Then round-N.yaml per round (so `kubectl apply -f round-N.yaml` applies exactly that round):
    # each parses as YAML and holds that round's MPIJobs only, pinned to their two nodes
    assert code == 0
    assert f"kubectl apply -f {out_dir}/round-1.yaml" in err
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == ["round-1.yaml", "round-2.yaml", "round-3.yaml"]
    for k in (1, 2, 3):
        docs = [d for d in yaml.safe_load_all((out_dir / f"round-{k}.yaml").read_text()) if d]
        assert len(docs) == 2
        assert {d["metadata"]["labels"]["hyperpod-perf/round"] for d in docs} == {str(k)}
        for doc in docs:
            affinity = doc["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"]
            values = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"
            ][0]["matchExpressions"][0]["values"]
            assert len(values) == 2 and set(values) <= set(NODES)


def test_node_name_forms() -> None:
    # Host names (short, FQDN) and instance ids pass; shell syntax, options, underscores and
    # overlong labels do not
    for good in ("ip-10-1-0-1", "i-0123456789abcdef0", "a", "gpu-st-p5-1.cluster.local", "IP-10-1-0-1"):
        assert NODE_NAME_RE.match(good), good
    for bad in ("x;y", "$(id)", "-n", "a_b", "a..b", "a" * 64, "a/b", "a b", ""):
        assert not NODE_NAME_RE.match(bad), bad
    assert read_node_list("n1, n2 # rack\n\nn1\n") == ["n1", "n2"]


def test_suspect_may_name_a_listed_node_in_another_spelling(capsys, node_file):
    # Given a node list of host names; When the suspect is typed as its IP, in upper case, or
    # as an FQDN
    for typed in ("10.1.0.2", "IP-10-1-0-2", "ip-10-1-0-2.ec2.internal"):
        code, out, err = run(
            capsys, "nccl", "plan", "--node-file", node_file, "--mode", "quick", "--suspect", typed
        )
        # Then the plan tests the listed node (as the list spells it, what srun -w takes)
        assert code == 0, err
        assert "ip-10-1-0-2" in out and typed.lower() not in out.replace("ip-10-1-0-2", "")


def test_an_unknown_suspect_names_the_closest_listed_node(capsys, node_file):
    code, _, err = run(capsys, "nccl", "plan", "--node-file", node_file, "--suspect", "ip-10-1-0-3")
    assert code == 2
    one_line(err, "--suspect ip-10-1-0-3: not in the node list (4 nodes); closest: ip-10-1-0-2, ip-10-1-0-1")
