"""Evaluating many snapshot files over every CPU gives exactly what one process gives."""

from hyperpod_perf.cli.batch import PARALLEL_MIN_FILES, evaluate_files
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster


def _write(tmp_path, count):
    faults = (
        {5: NodeFaults(pcie_width_gpu=1), count - 1: NodeFaults(governor="powersave")} if count > 5 else {}
    )
    nodes = simulate_cluster(count, faults)
    paths = []
    for node in nodes:
        path = tmp_path / f"{node.instance_id}.txt"
        path.write_text(node.text)
        paths.append(path)
    return paths


def test_the_pool_gives_the_same_findings_in_the_same_order_as_one_process(tmp_path):
    # Given more files than the pool threshold, two of them faulty
    paths = _write(tmp_path, PARALLEL_MIN_FILES + 4)
    # When they are evaluated in one process and over two workers
    serial = evaluate_files(paths, workers=1)
    parallel = evaluate_files(paths, workers=2)
    # Then the findings are identical, in file order
    assert parallel == serial
    assert (parallel.usable, len(parallel.signals)) == (len(paths), len(paths))
    concerns = [(f.node, f.check) for f in parallel.findings if f.severity.value == "CONCERN"]
    assert concerns == [
        ("i-0a1b2c3d4e5f60006", "gpu.pcie_width"),
        (paths[-1].stem, "host.cpu_governor"),
    ]


def test_an_unreadable_file_is_its_nodes_concern_and_the_others_are_judged(tmp_path):
    # Given two snapshots and a third path that cannot be read (gone since it was listed)
    paths = _write(tmp_path, 2)
    missing = tmp_path / "i-0fffffffffffffff0.txt"
    # When they are evaluated
    result = evaluate_files([*paths, missing], workers=1)
    # Then the two nodes are judged and the third is a collect.node CONCERN naming the file
    assert result.usable == 2
    assert [line.split(": ")[0] for line in result.unusable] == [str(missing)]
    last = result.findings[-1]
    assert (last.node, last.check, last.severity.value) == ("i-0fffffffffffffff0", "collect.node", "CONCERN")
    assert last.summary.startswith(f"{missing}: cannot read")
    assert last.evidence["reason"] == "SnapshotUnreadable"
