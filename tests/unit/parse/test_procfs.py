"""Host parsers on real outputs: CPU governors, df, mounts, iostat; /proc/stat, PSI, memlock."""

from pathlib import Path

import pytest

from hyperpod_perf.parse.procfs import (
    human_to_bytes,
    parse_cpu_governor,
    parse_cpu_stat,
    parse_df,
    parse_io_pressure,
    parse_iostat,
    parse_memlock,
    parse_mounts,
    parse_versions,
)

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GIB = 1024**3


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


# --- CPU governors -----------------------------------------------------------------------------


def test_governor_grep_form_all_performance():
    # Given `grep . .../scaling_governor` on an 8-CPU host
    governors = parse_cpu_governor(
        read("cpu-governor/scaling_governor_grep_8cpu_performance_llama-bench-post.txt")
    )
    # Then every CPU is read with its governor
    assert governors.by_cpu == {f"cpu{n}": "performance" for n in range(8)}
    assert governors.counts() == {"performance": 8}


def test_governor_grep_in_shell_glob_order_with_prompt():
    governors = parse_cpu_governor(
        read("cpu-governor/scaling_governor_grep_glob-order-cpu10-before-cpu1_s19_excerpt.txt")
    )
    assert list(governors.by_cpu)[:4] == ["cpu0", "cpu10", "cpu11", "cpu1"]
    assert governors.counts() == {"performance": 10}


def test_governor_later_reading_replaces_earlier_one():
    # Given a session that lists governors, switches them to ondemand, and lists again (cut after cpu0)
    governors = parse_cpu_governor(
        read("cpu-governor/scaling_governor_grep_performance-then-ondemand_s18_excerpt.txt")
    )
    # Then cpu0 carries its latest governor, the others their only reading; the echoed `ondemand` is ignored
    assert governors.by_cpu["cpu0"] == "ondemand"
    assert governors.counts() == {"ondemand": 1, "performance": 5}


@pytest.mark.parametrize(
    ("name", "governor", "driver"),
    [
        ("cpufreq-info_cpufreq-dt_ondemand-pinned-600MHz_rpi4_excerpt.txt", "ondemand", "cpufreq-dt"),
        ("cpupower-frequency-info_acpi-cpufreq_schedutil_archwiki-es.txt", "schedutil", "acpi-cpufreq"),
        (
            "cpupower-frequency-info_pcc-cpufreq_performance_boost_insights-doc.txt",
            "performance",
            "pcc-cpufreq",
        ),
    ],
)
def test_governor_from_cpupower_and_cpufreq_info_reports(name, governor, driver):
    governors = parse_cpu_governor(read(f"cpu-governor/{name}"))
    assert governors.by_cpu == {"cpu0": governor}
    assert governors.driver == driver


def test_governor_collector_pairs_vm_without_cpufreq_and_garbage():
    assert parse_cpu_governor("cpu0 performance\ncpu1 powersave\n").counts() == {
        "performance": 1,
        "powersave": 1,
    }
    vm = parse_cpu_governor(
        "cat: /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor: No such file or directory\n"
    )
    assert vm.by_cpu == {} and "No such file" in (vm.unavailable or "")
    with pytest.raises(ValueError, match="no CPU governor"):
        parse_cpu_governor("permission denied, try again later\n")


# --- df ----------------------------------------------------------------------------------------


def test_df_h_hyperpod_head_node():
    # Given `df -h` on a HyperPod Slurm head node with FSx for Lustre on /fsx
    rows = parse_df(read("iostat-proc/df-h_hyperpod-slurm-headnode_fsx-lustre_opt-sagemaker.txt"))
    by_mount = {r.mountpoint: r for r in rows}
    # Then all 16 rows are read, sizes in bytes (binary suffixes)
    assert len(rows) == 16
    assert by_mount["/"].filesystem == "/dev/root"
    assert by_mount["/"].size_bytes == 146 * GIB and by_mount["/"].use_pct == 41
    assert by_mount["/dev/shm"].size_bytes == round(3.8 * GIB)
    assert by_mount["/fsx"].filesystem == "10.1.71.197@tcp:/oyuutbev"
    assert by_mount["/fsx"].size_bytes == round(1.2 * 1024**4)
    assert by_mount["/opt/sagemaker"].used_bytes == 711 * 1024**2
    assert by_mount["/snap/core18/2066"].use_pct == 100 and by_mount["/snap/core18/2066"].avail_bytes == 0


def test_df_h_studio_space_lustre_subdir_and_efs():
    rows = parse_df(read("iostat-proc/df-h_sagemaker-studio-space_fsx-lustre-subdir_efs.txt"))
    by_fs = {r.filesystem: r for r in rows}
    assert len(rows) == 10
    assert by_fs["shm"].mountpoint == "/dev/shm" and by_fs["shm"].size_bytes == 392 * 1024**2
    assert by_fs["10.1.53.46@tcp:/ylacfb4v/aman1"].used_bytes == round(7.5 * 1024**2)
    assert by_fs["127.0.0.1:/"].size_bytes == 8 * 1024**6


def test_df_1k_blocks_with_kubectl_prompt_lines():
    # Given plain `df` inside a HyperPod EKS pod, preceded by the prompt lines that ran it
    rows = parse_df(read("iostat-proc/df_1k-blocks_hyperpod-eks-pod_emptydir-nvme_with-prompt.txt"))
    by_mount = {r.mountpoint: r for r in rows}
    # Then the prompts are skipped and 1K-blocks become bytes; trailing spaces do not leak
    assert len(rows) == 8
    assert by_mount["/dev/shm"].size_bytes == 65536 * 1024
    assert by_mount["/cache"].filesystem == "/dev/nvme1n1"
    assert by_mount["/cache"].avail_bytes == 518109368 * 1024
    assert by_mount["/run/secrets/kubernetes.io/serviceaccount"].used_bytes == 12 * 1024
    assert "/sys/firmware" in by_mount


def test_df_kp_posix_form_and_dash_percent():
    text = (
        "Filesystem     1024-blocks     Used Available Capacity Mounted on\n"
        "/dev/nvme0n1p1   104845292 99602448   5242844      95% /\n"
        "none                     0        0         0        - /proc/fs\n"
    )
    rows = parse_df(text)
    assert rows[0].use_pct == 95 and rows[0].size_bytes == 104845292 * 1024
    assert rows[1].use_pct is None and rows[1].used_pct == 0.0
    with pytest.raises(ValueError, match="no df row"):
        parse_df("df: invalid option -- 'z'\n")


def test_human_sizes():
    assert human_to_bytes("0") == 0
    assert human_to_bytes("5.0M") == 5 * 1024**2
    assert human_to_bytes("12", block_bytes=1024) == 12288


# --- mounts ------------------------------------------------------------------------------------


def test_proc_mounts_lustre_lines_with_tcp0_nids():
    mounts = parse_mounts(read("iostat-proc/proc-mounts_lustre-lines_lemur-testfixture.txt"))
    assert [m.fstype for m in mounts] == ["tmpfs", "lustre", "lustre", "lustre"]
    lustre = mounts[1]
    assert (lustre.device, lustre.mountpoint) == ("10.0.2.15@tcp:/lustre", "/mnt/lustre")
    assert lustre.options == ("rw", "flock", "user_xattr")
    assert lustre.lustre_mount_name == "lustre" and lustre.lustre_nid == "10.0.2.15@tcp"
    assert mounts[2].lustre_nid == "10.0.2.15@tcp0"
    assert mounts[0].lustre_mount_name is None


def test_findmnt_table_for_fsx_over_efa():
    (mount,) = parse_mounts(read("iostat-proc/findmnt_fsx-lustre-efa_mount-options_probe-log.txt"))
    assert mount.mountpoint == "/mnt/lustre" and mount.is_lustre
    assert mount.lustre_mount_name == "xeo3rbev"
    assert "lazystatfs" in mount.options and "encrypt" in mount.options


def test_fstab_lines_with_dns_name_source():
    mounts = parse_mounts(read("iostat-proc/fstab_fsx-lustre-dns-name_efa-client_probe-log.txt"))
    assert [m.mountpoint for m in mounts] == ["/boot/efi", "/data/local-nvme", "/mnt/lustre"]
    assert mounts[1].fstype == "xfs"
    assert mounts[2].lustre_mount_name == "xeo3rbev"
    assert mounts[2].lustre_nid == "fs-06b1492e3b7ef0455.fsx.ap-northeast-2.amazonaws.com@tcp"
    assert "x-systemd.automount" in mounts[2].options


def test_mounts_octal_escape_and_garbage():
    (mount,) = parse_mounts("/dev/sdb1 /mnt/my\\040data ext4 rw,relatime 0 0\n")
    assert mount.mountpoint == "/mnt/my data"
    with pytest.raises(ValueError, match="no mount line"):
        parse_mounts("hello world\n")


# --- iostat (informative) ----------------------------------------------------------------------


def test_iostat_x_high_iowait():
    stats = parse_iostat(read("iostat-proc/iostat-x_high-iowait-66pct_idle0.txt"))
    assert len(stats.reports) == 1
    assert stats.last.iowait_pct == 66.84 and stats.last.cpu["idle"] == 0.0
    assert stats.last.devices["vda"]["%util"] == 93.95
    assert stats.last.devices["vda"]["await"] == 583.47
    assert stats.last.devices["vdb"]["r/s"] == 486.5


def test_iostat_rhel6_banner_with_tabs():
    stats = parse_iostat(read("iostat-proc/iostat_1-1_rhel6-sysstat-9.0.4_header-tabs_excerpt.txt"))
    assert stats.banner is not None and stats.banner.endswith("(2 CPU)")
    assert stats.last.iowait_pct == 0.01
    assert list(stats.last.devices) == ["vda", "vdb", "dm-0", "dm-1", "dm-2", "dm-3"]
    assert stats.last.devices["dm-0"]["Blk_read"] == 1161682


def test_iostat_multi_report_last_is_the_latest_interval():
    # Given `iostat 2 3`: the first report is since boot, later ones are 2-second intervals
    stats = parse_iostat(read("iostat-proc/iostat_2-3_multi-report_excerpt.txt"))
    # Then all three reports are kept and `last` is the third one (its device table was cut)
    assert [r.iowait_pct for r in stats.reports] == [0.39, 0.5, 0.0]
    assert stats.reports[1].devices["vda"]["kB_wrtn"] == 448
    assert stats.last.devices == {}
    with pytest.raises(ValueError):
        parse_iostat("nothing here\n")


# --- /proc/stat, PSI, memlock, versions --------------------------------------------------------


def test_cpu_stat_iowait_over_the_interval():
    # Given two /proc/stat samples one second apart: 100 jiffies elapsed, 35 of them iowait
    text = "cpu  1000 0 500 8000 200 0 10 0 0 0\ncpu  1040 0 520 8005 235 0 10 0 0 0\n"
    stat = parse_cpu_stat(text)
    assert stat.interval_jiffies == 100
    assert stat.iowait_pct == 35.0
    assert stat.deltas["user"] == 40


def test_cpu_stat_ignores_guest_time_and_needs_two_samples():
    # guest time is already part of user: counting it again would dilute iowait
    stat = parse_cpu_stat("cpu  100 0 0 100 0 0 0 0 50 0\ncpu  150 0 0 130 20 0 0 0 100 0\n")
    assert stat.interval_jiffies == 100 and stat.iowait_pct == 20.0
    with pytest.raises(ValueError, match="two"):
        parse_cpu_stat("cpu  1 2 3 4 5 6 7 8 9 10\n")
    with pytest.raises(ValueError, match="identical"):
        parse_cpu_stat("cpu  1 2 3 4 5\ncpu  1 2 3 4 5\n")


def test_io_pressure_lines_and_missing_psi():
    text = (
        "some avg10=40.12 avg60=12.00 avg300=3.50 total=123456789\n"
        "full avg10=30.00 avg60=9.00 avg300=2.00 total=99\n"
    )
    psi = parse_io_pressure(text)
    assert psi.some is not None and psi.some.avg10 == 40.12 and psi.some.total_us == 123456789
    assert psi.full is not None and psi.full.avg300 == 2.0
    missing = parse_io_pressure("cat: /proc/pressure/io: No such file or directory\n")
    assert missing.some is None and missing.unavailable is not None
    with pytest.raises(ValueError, match="no PSI"):
        parse_io_pressure("some avg10=bad\n")


def test_memlock_values():
    assert parse_memlock("unlimited\n").unlimited
    limited = parse_memlock("64\n")
    assert not limited.unlimited and limited.kib == 64
    with pytest.raises(ValueError):
        parse_memlock("bash: ulimit: error\n")


def test_versions_key_values():
    assert parse_versions("driver=550.127.05\ncuda=12.4\nnccl=\n") == {
        "driver": "550.127.05",
        "cuda": "12.4",
        "nccl": "",
    }


# --- the ValueError contract on damaged text -----------------------------------------------------


def test_cpu_stat_line_without_an_iowait_column_is_a_value_error():
    # Given two `cpu` lines cut before the iowait column (once a KeyError)
    # Then the parser says which line is damaged
    with pytest.raises(ValueError, match="no iowait column: 'cpu 1 2 3 4'"):
        parse_cpu_stat("cpu 1 2 3 4\ncpu 2 3 4 5\n")
    # ... while full lines still give the iowait share of the interval (4 of 20 jiffies)
    assert parse_cpu_stat("cpu 1 2 3 4 5\ncpu 5 6 7 8 9\n").iowait_pct == 20.0


def test_df_bare_filesystem_word_is_not_a_header():
    # Given a lone `Filesystem` line (once an IndexError on the missing column)
    with pytest.raises(ValueError, match="no df row recognised"):
        parse_df("Filesystem\n/dev/root 10 5 5 50% /\n")
    # ... and before a real header it is only an unrecognised line: the rows are still read
    rows = parse_df(
        "Filesystem\nFilesystem 1K-blocks Used Available Use% Mounted on\n/dev/root 10 5 5 50% /\n"
    )
    assert [(r.filesystem, r.size_bytes, r.use_pct, r.mountpoint) for r in rows] == [
        ("/dev/root", 10 * 1024, 50, "/")
    ]


def test_sizes_beyond_a_float_are_a_value_error():
    # Given a 400-digit size (float() reads it as inf, and round(inf) raised OverflowError)
    with pytest.raises(ValueError, match="size out of range"):
        human_to_bytes("9" * 400 + "G")
    # Then a df row carrying it is not a row, and a df with no other row is refused
    with pytest.raises(ValueError, match="no df row recognised"):
        parse_df("Filesystem Size Used Avail Use% Mounted on\n/dev/root " + "9" * 400 + "G 1G 1G 5% /\n")
    # ... while the largest sizes df prints are still read
    assert human_to_bytes("8.0E") == 8 * 1024**6
