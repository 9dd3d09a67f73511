"""collector.sh run against a fake node: fake tools on PATH that print real captures, a fake
sysfs/procfs tree, and the container parsed back with parse_container.

Why this way: the collector's job is to pass raw output through unchanged, in order, bounded
and timed out. Running the real script against real captures proves exactly that, without
a GPU node.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hyperpod_perf.collect.local import CollectorError, collector_script_path, run_local_collector
from hyperpod_perf.collect.snapshot import SECTION_ORDER, RawSnapshot, parse_container, parse_key_values

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real"
FAKEBIN = FIXTURES / "fakebin"
INSTANCE_ID = "i-0a1b2c3d4e5f60001"
DOWN_DEVICE = "rdmap113s0"
PROC_STAT_CPU = "cpu  74608 2520 24433 1117073 6176 4054 0 0 0 0\n"
PRESSURE_IO = (
    "some avg10=1.25 avg60=0.80 avg300=0.31 total=91230042\n"
    "full avg10=0.90 avg60=0.52 avg300=0.20 total=70111394\n"
)
RESOURCE_CONFIG = """{
  "ClusterConfig": {"ClusterArn": "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234efgh",
                    "ClusterName": "ml-cluster"},
  "InstanceGroups": [
    {"InstanceType": "ml.m5.xlarge", "Name": "controller-machine",
     "Instances": [{"AgentIpAddress": "172.16.1.10", "CustomerIpAddress": "10.1.1.10",
                    "InstanceId": "i-0ffffffffffff0001", "InstanceName": "controller-machine-1"}]},
    {"InstanceType": "ml.p5.48xlarge", "Name": "worker-group-1",
     "Instances": [{"AgentIpAddress": "172.16.1.20", "CustomerIpAddress": "10.1.71.20",
                    "InstanceId": "i-0a1b2c3d4e5f60001", "InstanceName": "worker-group-1-1"}]}
  ]
}
"""


def _real(relative: str) -> str:
    return (REAL / relative).read_text(encoding="utf-8")


def _p5_efa_tx_pkts() -> dict[str, int]:
    """Device -> tx_pkts from the real p5 node-exporter capture (32 devices)."""
    pattern = re.compile(r'^node_amazonefa_tx_pkts\{device="(?P<dev>[^"]+)",port="1"\} (?P<value>\S+)$')
    values = {}
    for line in _real("efa-sysfs/p5_32dev_node-exporter_amazonefa_tx_pkts.prom").splitlines():
        match = pattern.match(line)
        if match:
            values[match["dev"]] = int(float(match["value"]))
    return values


def _perftest_client_counters() -> dict[str, str]:
    """The full hw_counters listing of a real EFA device (client block of the perftest capture)."""
    text = _real("efa-sysfs/efa0_hw_counters_client-server_2020_perftest-issue113.txt")
    client = text.split("server")[0]
    return dict(line.split(" :") for line in client.splitlines() if " :" in line)


def _kernel_doc_aer_files() -> dict[str, str]:
    """aer_dev_* file name -> contents, from the kernel ABI document's sample output (real)."""
    files: dict[str, list[str]] = {}
    for line in _real("pcie-aer/kernel-abi-doc_aer_dev_samples_4.19-names.txt").splitlines():
        if line.startswith("localhost "):
            current = files.setdefault(line.rsplit(" ", 1)[-1], [])
        else:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


#: PCI functions of the fake node: (bdf, vendor, device, class, has AER files). An EFA device without
#: AER files (not exposed), an ENA NIC (Amazon, not EFA) and an Intel bridge that must be skipped.
PCI_FUNCTIONS = (
    ("0000:00:09.0", "0x10de", "0x2330", "0x030200", True),
    ("0000:00:1f.0", "0x8086", "0x7000", "0x060100", True),
    ("0000:4f:00.0", "0x1d0f", "0xefa2", "0x020000", False),
    ("0000:50:00.0", "0x1d0f", "0xec20", "0x020000", True),
)


def _governor_lines() -> list[tuple[str, str]]:
    """(cpu, governor) from a real `grep . .../scaling_governor` capture, duplicates dropped."""
    pairs = {}
    for line in _real(
        "cpu-governor/scaling_governor_grep_glob-order-cpu10-before-cpu1_s19_excerpt.txt"
    ).splitlines():
        match = re.match(r"^/sys/devices/system/cpu/(cpu\d+)/cpufreq/scaling_governor:(\S+)$", line)
        if match:
            pairs.setdefault(match[1], match[2])
    return list(pairs.items())


@pytest.fixture
def fake_node(tmp_path: Path) -> dict[str, Path]:
    """A fake p5 node: bin/ (fake tools), sys/, proc/, root/ and a private TMPDIR."""
    bin_dir = tmp_path / "bin"
    shutil.copytree(FAKEBIN, bin_dir)
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    sysfs, procfs, root, tmp = (tmp_path / name for name in ("sys", "proc", "root", "tmp"))
    tmp.mkdir()
    counters = _perftest_client_counters()
    for device, tx_pkts in _p5_efa_tx_pkts().items():
        port = sysfs / "class/infiniband" / device / "ports/1"
        (port / "hw_counters").mkdir(parents=True)
        (port / "state").write_text("1: DOWN\n" if device == DOWN_DEVICE else "4: ACTIVE\n")
        for name, value in {**counters, "tx_pkts": str(tx_pkts)}.items():
            (port / "hw_counters" / name).write_text(f"{value}\n")
    for cpu, governor in _governor_lines():
        path = sysfs / "devices/system/cpu" / cpu / "cpufreq/scaling_governor"
        path.parent.mkdir(parents=True)
        path.write_text(f"{governor}\n")
    for bdf, vendor, device, pci_class, has_aer in PCI_FUNCTIONS:
        function = sysfs / "bus/pci/devices" / bdf
        function.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", pci_class)):
            (function / name).write_text(f"{value}\n")
        for name, contents in _kernel_doc_aer_files().items() if has_aer else ():
            (function / name).write_text(contents)
    dmi = sysfs / "devices/virtual/dmi/id"
    dmi.mkdir(parents=True)
    (dmi / "board_asset_tag").write_text(f"{INSTANCE_ID}\n")
    (dmi / "product_name").write_text("p5.48xlarge\n")
    for module, version in (("nvidia", "535.183.01"), ("efa", "2.10.0g")):
        (sysfs / "module" / module).mkdir(parents=True)
        (sysfs / "module" / module / "version").write_text(f"{version}\n")
    (procfs / "sys/kernel").mkdir(parents=True)
    (procfs / "sys/kernel/hostname").write_text("ip-10-1-71-20\n")
    (procfs / "sys/kernel/osrelease").write_text("5.15.0-1072-aws\n")
    (procfs / "uptime").write_text("625429.31 118000231.04\n")
    (procfs / "stat").write_text(PROC_STAT_CPU + "cpu0 380 10 120 5600 30 20 0 0 0 0\nintr 12345\n")
    (procfs / "pressure").mkdir()
    (procfs / "pressure/io").write_text(PRESSURE_IO)
    (procfs / "mounts").write_text(_real("iostat-proc/proc-mounts_lustre-lines_lemur-testfixture.txt"))
    for directory in ("dev/shm", "fsx", "opt/sagemaker", "opt/ml/config", "opt/amazon/ofi-nccl/lib"):
        (root / directory).mkdir(parents=True)
    (root / "opt/ml/config/resource_config.json").write_text(RESOURCE_CONFIG)
    (root / "opt/amazon/efa_installed_packages").write_text(
        "# EFA installer version: 1.30.0\n# Debug packages installed: no\n"
    )
    (root / "opt/amazon/ofi-nccl/lib/libnccl-net.so").write_bytes(
        b"\x7fELF\x00\x00NET/OFI\x00Initializing aws-ofi-nccl 1.11.0-aws\x00\x01\x02"
    )
    (root / "usr/local/cuda-12.2").mkdir(parents=True)
    (root / "usr/local/cuda").symlink_to("cuda-12.2")
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    for version in ("2.18.5", "2.21.5"):
        (root / f"usr/lib/x86_64-linux-gnu/libnccl.so.{version}").write_bytes(b"")
    return {"bin": bin_dir, "sys": sysfs, "proc": procfs, "root": root, "tmp": tmp}


def _env(node: dict[str, Path], **extra: str) -> dict[str, str]:
    path = f"{node['bin']}:/usr/bin:/bin:{Path(sys.executable).parent}"
    return {
        "PATH": path,
        "HPD_SYSFS": str(node["sys"]),
        "HPD_PROCFS": str(node["proc"]),
        "HPD_ROOT": str(node["root"]),
        "HPD_FAKE_REAL": str(REAL),
        "HPD_STAT_INTERVAL": "0",
        "TMPDIR": str(node["tmp"]),
        **extra,
    }


def _collect(node: dict[str, Path], **extra: str) -> tuple[str, RawSnapshot]:
    text = run_local_collector(timeout_s=90, env=_env(node, **extra))
    return text, parse_container(text, f"{INSTANCE_ID}.txt")


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def test_every_section_in_order_with_raw_output_and_rc(fake_node: dict[str, Path]) -> None:
    # Given a fake p5 node whose tools print real captures
    # When the collector runs
    text, snapshot = _collect(fake_node)

    # Then every section appears once, in SECTION_ORDER, complete, with nothing outside them
    assert snapshot.problems == []
    assert list(snapshot.sections) == list(SECTION_ORDER)
    assert re.findall(r"^=== hpd:begin (\S+) nonce=[0-9a-f]{32} ===$", text, re.M) == list(SECTION_ORDER)
    s = snapshot.sections
    # One random nonce for the run, in meta and in every marker, and nowhere else: no tool saw it
    nonce = parse_key_values(s["meta"].text)["nonce"]
    assert snapshot.nonce == nonce and re.fullmatch(r"[0-9a-f]{32}", nonce)
    assert text.count(nonce) == 2 * len(SECTION_ORDER) + 1
    assert {name: s[name].rc for name in SECTION_ORDER} == dict.fromkeys(SECTION_ORDER, 0)

    # meta: node identity from DMI, type and group from HyperPod's resource_config.json
    meta = parse_key_values(s["meta"].text)
    assert list(meta)[:5] == ["collector_version", "hostname", "kernel", "uptime_s", "date_utc"]
    assert meta["hostname"] == "ip-10-1-71-20"
    assert meta["kernel"] == "5.15.0-1072-aws"
    assert meta["uptime_s"] == "625429"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["date_utc"])
    assert meta["instance_id"] == INSTANCE_ID
    assert meta["instance_type"] == "ml.p5.48xlarge"
    assert meta["instance_group"] == "worker-group-1"
    assert snapshot.node_name() == INSTANCE_ID

    # nvidia-smi outputs pass through verbatim (the fake answers only the design's exact commands)
    assert s["gpu-query"].text == _with_newline(
        _real("gpu-query/h100-80gb-hbm3_590.48.01_load_allfields.txt")
    )
    assert s["gpu-topo"].text == _with_newline(_real("gpu-topo/p5-48xl_8gpu_no-nics_eks.txt"))
    assert s["nvlink-status"].text == _with_newline(
        _real("nvlink-status/h100-80gb-hbm3_590.48.01_nvlink-s.txt")
    )
    assert s["nvlink-errors"].text == _with_newline(
        _real("nvlink-status/h100_nvlink-e_error-counters_elided_stas00.txt")
    )

    # dmesg is filtered: only the Xid lines, only the OOM lines
    akash = _real("xid/akash_dmesg-T_xid43-31-94_535.183.01.txt").splitlines()
    assert s["xid"].text.splitlines() == [line for line in akash if "NVRM: Xid" in line]
    assert len(s["xid"].text.splitlines()) == 4  # Xid 43, 43, 31, 94
    assert s["oom"].text.splitlines() == [
        line
        for line in _real("oom/dmesg-T_oom-kill_python_py-autovod-issue7.txt").splitlines()
        if "Out of memory" in line or "oom-kill" in line
    ]

    # EFA: one `<dev> <state>` line per device, one `<dev> <counter> <value>` line per counter
    tx_pkts = _p5_efa_tx_pkts()
    ports = [line.split(" ", 1) for line in s["efa-ports"].text.splitlines()]
    assert [dev for dev, _ in ports] == sorted(tx_pkts)
    assert dict(ports) == {dev: "1: DOWN" if dev == DOWN_DEVICE else "4: ACTIVE" for dev in tx_pkts}
    counter_lines = s["efa-counters"].text.splitlines()
    assert len(counter_lines) == 32 * len(_perftest_client_counters())
    assert "rdmap79s0 tx_pkts 1667468" in counter_lines
    assert "rdmap201s0 rx_drops 0" in counter_lines
    assert s["fi-info"].text == _real("fi-info/p4d_4dev_efa-rdm_libfabric-111.20.txt")

    # versions: every key, read from module/library files; fabric manager absent -> empty
    assert parse_key_values(s["versions"].text) == {
        "driver": "535.183.01",
        "cuda": "12.2",
        "efa_installer": "1.30.0",
        "efa_module": "2.10.0g",
        "libfabric": "1.18.2amzn1.0",
        "aws_ofi_nccl": "1.11.0-aws",
        "nccl": "2.21.5",
        "fabric_manager": "",
    }

    # host: governors in numeric CPU order (not the glob's cpu0, cpu10, cpu11, cpu1 ...)
    assert s["cpu-governor"].text.splitlines() == [
        f"cpu{n} performance" for n in (0, 1, 2, 3, 4, 5, 6, 7, 10, 11)
    ]
    assert s["fabric-manager"].text == "active\n"
    assert s["mounts"].text.splitlines() == [
        line
        for line in _real("iostat-proc/proc-mounts_lustre-lines_lemur-testfixture.txt").splitlines()
        if " lustre " in line
    ]
    df_lines = s["df"].text.splitlines()
    assert df_lines[0].split() == [
        "Filesystem",
        "1024-blocks",
        "Used",
        "Available",
        "Capacity",
        "Mounted",
        "on",
    ]
    assert len(df_lines) == 5  # /, /dev/shm, /fsx, /opt/sagemaker exist; /opt/dlami/nvme does not
    # lfs df -h once per distinct Lustre source (the two tcp0 mounts are the same file system)
    assert s["lfs-df"].text == _real("lfs-df/fsx_3ost_mnt-fsx_summary.txt") * 2
    assert s["cpu-stat"].text == PROC_STAT_CPU * 2
    assert s["io-pressure"].text == PRESSURE_IO
    ulimit = subprocess.run(["bash", "-c", "ulimit -l"], capture_output=True, text=True, check=True).stdout
    assert s["memlock"].text == ulimit

    # PCIe: the replay report verbatim; AER only for NVIDIA and EFA functions, files verbatim
    assert s["gpu-pcie"].text == _with_newline(
        _real("gpu-pcie/h100-80gb-hbm3_590.48.01_idle_q_replays-9.txt")
    )
    aer = _kernel_doc_aer_files()
    assert s["pcie-aer"].text == (
        "== 0000:00:09.0 vendor=0x10de device=0x2330 class=0x030200\n"
        + "".join(
            f"-- {name}\n{aer[name]}" for name in ("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal")
        )
        + "== 0000:4f:00.0 vendor=0x1d0f device=0xefa2 class=0x020000\n"
    )

    # Slurm's topology as scontrol prints it (read-only; Evaluate reads it for the pair analysis)
    assert s["slurm-topology"].text == (
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=ip-10-1-71-[20-21]\n"
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=ip-10-1-71-[20-21] Switches=s0\n"
    )

    # And the private temp dir was removed on exit
    assert list(fake_node["tmp"].iterdir()) == []


def test_instance_type_falls_back_to_dmi_product_name(fake_node: dict[str, Path]) -> None:
    # Given a node without HyperPod's resource_config.json
    (fake_node["root"] / "opt/ml/config/resource_config.json").unlink()
    # When the collector runs
    _, snapshot = _collect(fake_node)
    # Then the EC2 instance type comes from DMI and the group is unknown (empty)
    meta = snapshot.meta
    assert (meta["instance_type"], meta["instance_group"], meta["instance_id"]) == (
        "p5.48xlarge",
        "",
        INSTANCE_ID,
    )


def test_missing_tool_section_still_appears_with_rc_127(fake_node: dict[str, Path]) -> None:
    # Given a node without fi_info
    (fake_node["bin"] / "fi_info").unlink()
    if shutil.which("fi_info", path=_env(fake_node)["PATH"] + ":/usr/sbin:/sbin:/opt/amazon/efa/bin"):
        pytest.skip("this machine has a real fi_info on the collector's PATH")
    # When the collector runs
    _, snapshot = _collect(fake_node)
    # Then the fi-info section is present with rc=127 and the shell's reason, in its place
    assert list(snapshot.sections) == list(SECTION_ORDER)
    assert snapshot.sections["fi-info"].rc == 127
    assert "fi_info" in snapshot.sections["fi-info"].text
    assert parse_key_values(snapshot.sections["versions"].text)["libfabric"] == ""


@pytest.mark.parametrize("hang", ["1", "ignore-term"])
def test_hanging_lfs_df_gives_rc_124_within_the_timeout(fake_node: dict[str, Path], hang: str) -> None:
    # Given an `lfs df` that hangs (and, in one case, ignores SIGTERM) and a 2 s timeout
    started = time.monotonic()
    # When the collector runs
    _, snapshot = _collect(fake_node, FAKE_LFS_HANG=hang, HPD_TIMEOUT="2")
    elapsed = time.monotonic() - started
    # Then lfs-df reports the hang as rc=124, the rest still runs, and nothing waited 1000 s
    assert snapshot.sections["lfs-df"].rc == 124
    assert list(snapshot.sections) == list(SECTION_ORDER)
    assert snapshot.sections["memlock"].rc == 0
    assert elapsed < 20


def test_flooding_dmesg_is_capped_per_section_with_a_visible_note(fake_node: dict[str, Path]) -> None:
    # Given a dmesg printing ~5 MB of matching lines
    # When the collector runs with the default caps
    text, snapshot = _collect(fake_node, FAKE_DMESG_FLOOD="1")
    # Then the output stays under 1 MiB, both dmesg sections say they were truncated, and all sections appear
    assert len(text.encode()) <= 1_048_576
    assert list(snapshot.sections) == list(SECTION_ORDER)
    for name in ("xid", "oom"):
        assert snapshot.sections[name].text.endswith("[hpd: output truncated: first 262144 bytes kept]\n")
        assert snapshot.sections[name].rc == 0
    assert snapshot.problems == []


def test_total_output_is_capped_even_when_sections_are_allowed_more(fake_node: dict[str, Path]) -> None:
    # Given per-section caps above the total budget and a flooding dmesg
    # When the collector runs
    text, snapshot = _collect(fake_node, FAKE_DMESG_FLOOD="1", HPD_SECTION_CAP="900000")
    # Then the total still fits 1 MiB: xid got 900000 bytes, oom only what the budget had left
    assert len(text.encode()) <= 1_048_576
    assert list(snapshot.sections) == list(SECTION_ORDER)
    assert "first 900000 bytes kept" in snapshot.sections["xid"].text
    oom_note = re.search(r"first (\d+) bytes kept", snapshot.sections["oom"].text)
    assert oom_note is not None
    assert int(oom_note[1]) < 900_000


def test_run_local_collector_raises_a_named_error_when_it_cannot_finish(fake_node: dict[str, Path]) -> None:
    # Given a hanging lfs with a long per-command timeout and a short overall limit
    # When the local runner waits
    # Then it raises CollectorError rather than hanging or returning a partial string silently
    with pytest.raises(CollectorError, match="did not finish"):
        run_local_collector(timeout_s=1, env=_env(fake_node, FAKE_LFS_HANG="1", HPD_TIMEOUT="30"))
    # And nothing it started is left running (the hanging fake lfs included)
    if shutil.which("pgrep") is None:
        return
    time.sleep(0.2)
    leftovers = subprocess.run(["pgrep", "-f", str(fake_node["bin"] / "lfs")], capture_output=True, text=True)
    assert leftovers.stdout == ""


def test_collector_script_is_packaged_and_small() -> None:
    # Given the packaged script  Then it exists and stays small enough to embed in an SSM document
    script = collector_script_path()
    assert script.name == "collector.sh"
    assert 0 < script.stat().st_size < 16 * 1024


def test_collector_is_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck); `make lint` runs it too")
    # When shellcheck reads the script  Then it reports nothing
    result = subprocess.run([shellcheck, str(collector_script_path())], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def _code_lines() -> list[str]:
    """Script lines without comments (a `#` after whitespace or at line start)."""
    lines = []
    for line in collector_script_path().read_text(encoding="utf-8").splitlines():
        code = re.sub(r"(^|\s)#.*$", "", line) if not line.startswith("#!") else ""
        if code.strip():
            lines.append(code)
    return lines


def test_collector_is_read_only_by_construction() -> None:
    # Given the script's code (comments stripped)
    lines = _code_lines()
    code = "\n".join(lines)
    # Then the only paths it writes to are /dev/null and files under its mktemp directory
    temp_vars = set(re.findall(r"\b(\w+)=\"\$HPD_TMP/", code)) | {"HPD_TMP"}
    raw_targets = re.findall(r"(?:^|\s)\d*>{1,2}(?!&)\s*(\S+)", code, re.M)
    # a bare path may be followed by the closing `)"` of a command substitution
    targets = [t.rstrip(';)"') if t.startswith("/") else t.rstrip(";)") for t in raw_targets]
    assert '"$sec"' in targets  # the pattern does see the script's redirects
    for target in targets:
        allowed = target == "/dev/null"
        allowed = allowed or any(
            target.startswith(f'"${var}') or target.startswith(f'"${{{var}') for var in temp_vars
        )
        assert allowed, f"write outside the temp dir: > {target}"
    assert re.search(r"HPD_TMP=\$\(mktemp -d ", code)
    # And it never mutates the node: no sudo, no service control, no package or module or sysctl changes
    for forbidden in (
        r"\bsudo\b",
        r"\bsystemctl\s+(?!is-active\b)\S+",
        r"\b(tee|dd|mv|cp|chmod|chown|ln|mkdir|touch|truncate|install)\b",
        r"\b(sysctl|modprobe|rmmod|insmod|reboot|shutdown|apt|apt-get|yum|dnf|pip|curl|wget)\b",
        r"nvidia-smi\s+(-r|-pm|-c|-ac|-pl|-lgc|-rgc|--gpu-reset)\b",
        r"\bkill\s+(?!-0\b|-KILL -- \"-\$tpid\")",
        r"\bpkill\b|\bkillall\b",
    ):
        assert not re.search(forbidden, code), f"forbidden command matched {forbidden!r}"
    # And the only process it kills is the process group of its own `timeout` (leftover children)
    assert [line.strip() for line in lines if re.search(r"\bkill\s+-KILL", line)] == [
        'kill -KILL -- "-$tpid" 2>/dev/null; } |'
    ]
    assert "tpid=$!" in code
    # And `rm` appears only in the EXIT trap that removes the temp dir
    rm_lines = [line for line in lines if re.search(r"\brm\b", line)]
    assert rm_lines == ["trap 'rm -rf -- \"$HPD_TMP\"' EXIT"]


def test_a_zero_timeout_and_an_inherited_nonce_are_refused_and_each_run_draws_its_own(
    fake_node: dict[str, Path],
) -> None:
    # Given HPD_TIMEOUT=0 / 0.0 (GNU `timeout 0` would run a hung tool forever) and an HPD_NONCE
    # from the caller's environment (it would be exported to every tool)
    planted = "a" * 32
    runs = [_collect(fake_node, HPD_TIMEOUT=zero, HPD_NONCE=planted)[1] for zero in ("0", "0.0")]
    # Then the collector uses its 20 s default, as for any other invalid value
    assert [parse_key_values(r.sections["meta"].text)["timeout_s"] for r in runs] == ["20", "20"]
    # And ignores the inherited nonce, drawing a fresh one per run
    assert planted not in {r.nonce for r in runs} and runs[0].nonce != runs[1].nonce
    assert [r.problems for r in runs] == [[], []]
