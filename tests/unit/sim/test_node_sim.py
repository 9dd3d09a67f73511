"""The simulated node: collector-shaped output, planted faults where they belong, and (when
the parsers and rules are present) exactly the planted CONCERNs from the real engine."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import SECTION_ORDER, parse_container, parse_key_values
from hyperpod_perf_dev.sim.node import (
    EXAMPLE_FAULTS,
    GPU_QUERY_HEADER,
    NodeFaults,
    example_nodes,
    main,
    simulate_cluster,
    simulate_node,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real"


def _gpu_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(text.splitlines(), skipinitialspace=True))


def test_healthy_node_round_trips_with_every_section_in_order() -> None:
    # Given a healthy simulated p5 node
    node = simulate_node(0)
    # When its text is parsed as a collector container
    snapshot = parse_container(node.text, f"{node.instance_id}.txt")
    # Then every section is present, in order, complete, rc=0, and the node is named by its id
    assert snapshot.problems == []
    assert list(snapshot.sections) == list(SECTION_ORDER)
    assert all(section.rc == 0 for section in snapshot.sections.values())
    assert node.instance_id == "i-0a1b2c3d4e5f60001"
    assert snapshot.node_name() == node.instance_id
    meta = snapshot.meta
    assert (meta["instance_type"], meta["hostname"]) == ("ml.p5.48xlarge", node.hostname)


def test_p5_shapes_follow_the_real_captures() -> None:
    # Given a simulated p5 node
    sections = parse_container(simulate_node(1).text).sections
    # Then the GPU CSV header uses the header names real nvidia-smi prints (as in the real capture)
    real_header = (REAL / "gpu-query/h100-80gb-hbm3_590.48.01_load_allfields.txt").read_text().splitlines()[0]
    real_columns = {c.strip() for c in real_header.split(",")}
    header = sections["gpu-query"].text.splitlines()[0]
    assert header == GPU_QUERY_HEADER
    assert {c.strip() for c in header.split(",")} <= real_columns
    rows = _gpu_rows(sections["gpu-query"].text)
    assert [r["name"] for r in rows] == ["NVIDIA H100 80GB HBM3"] * 8
    assert {r["clocks.max.sm [MHz]"] for r in rows} == {"1980 MHz"}
    # And the 32 EFA devices are exactly the real p5 set, all ACTIVE
    prom = (REAL / "efa-sysfs/p5_32dev_node-exporter_amazonefa_tx_pkts.prom").read_text()
    real_devices = sorted(set(re.findall(r'device="([^"]+)"', prom)))
    ports = [line.split(" ", 1) for line in sections["efa-ports"].text.splitlines()]
    assert [dev for dev, _ in ports] == real_devices
    assert {state for _, state in ports} == {"4: ACTIVE"}
    # And topo -m has the real p5 rows (NV18 everywhere, the real CPU affinity split)
    real_topo = (REAL / "gpu-topo/p5-48xl_8gpu_no-nics_eks.txt").read_text().splitlines()
    assert sections["gpu-topo"].text.splitlines() == real_topo[1:]  # the real file starts with the prompt
    # And 192 CPUs on the performance governor, a ~1 TiB /dev/shm, the FSx mount, unlimited memlock
    governors = sections["cpu-governor"].text.splitlines()
    assert (
        len(governors) == 192 and governors[0] == "cpu0 performance" and governors[-1] == "cpu191 performance"
    )
    shm = next(line.split() for line in sections["df"].text.splitlines() if line.endswith(" /dev/shm"))
    assert 0.95 * 2**30 < int(shm[1]) < 1.05 * 2**30  # KiB, i.e. about 1 TiB
    assert "10.1.71.197@tcp:/oyuutbev /fsx lustre " in sections["mounts"].text
    assert (
        sections["lfs-df"].text.splitlines()[0]
        == (REAL / "lfs-df/fsx_3ost_mnt-fsx_summary.txt").read_text().splitlines()[0]
    )
    assert sections["memlock"].text == "unlimited\n"
    assert parse_key_values(sections["versions"].text)["driver"] == rows[0]["driver_version"]


def test_faults_appear_in_their_sections() -> None:
    # Given the example faulty node (GPU 3 at x8, Xid 79 on GPU 3, EFA port down, powersave)
    node = simulate_node(2, faults=EXAMPLE_FAULTS)
    sections = parse_container(node.text).sections
    # Then GPU 3's CSV row reads width 8 of 16 and the others 16
    rows = _gpu_rows(sections["gpu-query"].text)
    assert [(r["pcie.link.width.current"], r["pcie.link.width.max"]) for r in rows] == [("16", "16")] * 3 + [
        ("8", "16")
    ] + [("16", "16")] * 4
    # And the Xid line is the real Xid 79 text with GPU 3's PCI id
    real_xid79 = (REAL / "xid/no-prefix_xid79-154-os-reboot_610.43.02.txt").read_text().splitlines()[0]
    xid_lines = sections["xid"].text.splitlines()
    assert len(xid_lines) == 1
    assert xid_lines[0].endswith(real_xid79.replace("0000:01:00", "0000:86:00"))
    assert re.match(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ", xid_lines[0])  # dmesg -T stamp
    assert rows[3]["pci.bus_id"] == "00000000:86:00.0"
    # And the EFA port and the governor
    assert "rdmap113s0 1: DOWN" in sections["efa-ports"].text.splitlines()
    assert sum(" 4: ACTIVE" in line for line in sections["efa-ports"].text.splitlines()) == 31
    assert set(sections["cpu-governor"].text.split()[1::2]) == {"powersave"}


def test_host_and_thermal_faults_land_in_their_numbers() -> None:
    # Given a node with a hot GPU 5, a low SM clock, high iowait and IO pressure
    faults = NodeFaults(
        gpu_temp_c=91, gpu_temp_index=5, sm_clock_mhz=1200, iowait_pct=35.0, io_pressure_avg10=42.5
    )
    sections = parse_container(simulate_node(4, faults=faults).text).sections
    rows = _gpu_rows(sections["gpu-query"].text)
    # Then the values are where the parsers will read them
    assert rows[5]["temperature.gpu"] == "91"
    assert all(int(r["temperature.gpu"]) < 70 for i, r in enumerate(rows) if i != 5)
    assert {r["clocks.current.sm [MHz]"] for r in rows} == {"1200 MHz"}
    first, second = ([int(v) for v in line.split()[1:]] for line in sections["cpu-stat"].text.splitlines())
    delta = [b - a for a, b in zip(first, second, strict=True)]
    assert delta[4] / sum(delta) == pytest.approx(0.35, abs=0.001)  # iowait share of the interval
    assert sections["io-pressure"].text.startswith("some avg10=42.50 ")


def test_deterministic_per_seed_and_distinct_per_node() -> None:
    # Given the same index and seed twice, and other indexes/seeds
    # Then the text is identical for the same inputs and differs otherwise
    assert simulate_node(3, seed=7).text == simulate_node(3, seed=7).text
    assert simulate_node(3, seed=7).text != simulate_node(3, seed=8).text
    cluster = simulate_cluster(4, {1: NodeFaults(governor="powersave")})
    assert len({n.instance_id for n in cluster}) == 4
    assert len({n.hostname for n in cluster}) == 4
    assert [n.faults.governor for n in cluster] == ["performance", "powersave", "performance", "performance"]


def test_invalid_faults_and_types_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"GPUs 0\.\.7"):
        simulate_node(0, faults=NodeFaults(pcie_width_gpu=8))
    with pytest.raises(ValueError, match="not an EFA device"):
        simulate_node(0, faults=NodeFaults(efa_port_down="efa_0"))
    with pytest.raises(ValueError, match="no simulation profile"):
        simulate_node(0, instance_type="ml.g5.8xlarge")
    with pytest.raises(ValueError, match="outside"):
        simulate_cluster(2, {5: NodeFaults()})


def test_p4d_profile_uses_its_own_devices() -> None:
    sections = parse_container(simulate_node(0, instance_type="ml.p4d.24xlarge").text).sections
    assert [line.split()[0] for line in sections["efa-ports"].text.splitlines()] == sorted(
        ["rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"]
    )
    assert len(sections["cpu-governor"].text.splitlines()) == 96


def test_examples_in_the_package_and_fixtures_match_the_generator(tmp_path: Path) -> None:
    # Given the generator's command line
    assert main(["--write", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["i-0a1b2c3d4e5f60001.txt", "i-0a1b2c3d4e5f60003.txt"]
    # Then the committed copies (tests and package) are exactly what it writes today
    package_examples = Path(__file__).resolve().parents[3] / "functions/hyperpod_perf_dev/sim/examples"
    for name in written:
        fresh = (tmp_path / name).read_text()
        assert (FIXTURES / "snapshots" / name).read_text() == fresh
        assert (package_examples / name).read_text() == fresh


def _concerns(text: str, source: str) -> list:
    from hyperpod_perf.rules.engine import evaluate_text  # an import error here is a failure, never a skip

    return [f for f in evaluate_text(text, source) if f.severity.value == "CONCERN"]


def test_engine_finds_no_concern_on_a_healthy_node() -> None:
    healthy = example_nodes()[0]
    assert _concerns(healthy.text, f"{healthy.instance_id}.txt") == []


def test_engine_finds_exactly_the_planted_concerns() -> None:
    faulty = example_nodes()[1]
    concerns = _concerns(faulty.text, f"{faulty.instance_id}.txt")
    assert sorted(f.check for f in concerns) == [
        "efa.port_state",
        "gpu.pcie_width",
        "gpu.xid",
        "host.cpu_governor",
    ]
    by_check = {f.check: f for f in concerns}
    assert all(f.node == "i-0a1b2c3d4e5f60003" for f in concerns)
    assert "GPU 3" in by_check["gpu.pcie_width"].summary and "x8" in by_check["gpu.pcie_width"].summary
    assert "79" in by_check["gpu.xid"].summary and "0000:86:00" in by_check["gpu.xid"].summary
    assert "rdmap113s0" in by_check["efa.port_state"].summary
    assert "powersave" in by_check["host.cpu_governor"].summary


def test_engine_sees_host_faults() -> None:
    node = simulate_node(5, faults=NodeFaults(iowait_pct=35.0, io_pressure_avg10=42.5, gpu_temp_c=91))
    checks = sorted(f.check for f in _concerns(node.text, f"{node.instance_id}.txt"))
    assert checks == ["gpu.temperature", "host.io_pressure", "host.iowait"]


def test_a_1024_node_cluster_has_no_host_name_twice_and_small_clusters_keep_theirs():
    from hyperpod_perf_dev.sim.node import _drawn_hostname, simulate_cluster

    # Given the drawn names repeat at this size (a birthday collision among 112 x 253 addresses)
    drawn = [_drawn_hostname(i, 0) for i in range(1024)]
    assert len(set(drawn)) < 1024
    # When the cluster is simulated
    names = [node.hostname for node in simulate_cluster(1024)]
    # Then every node has its own (the metrics stage maps series to nodes by it), only the repeats
    # were renamed, and the first 64 nodes of the first seeds keep the names they always had
    assert len(set(names)) == 1024
    assert sum(a != b for a, b in zip(names, drawn, strict=True)) == 1024 - len(set(drawn))
    assert names[:64] == drawn[:64]
