"""fs.lustre_df on rendered snapshots: hung mount, inactive or full OSTs, no Lustre at all."""

from pathlib import Path

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.rules import filesystem
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import Thresholds

REAL = Path(__file__).parents[2] / "fixtures" / "real"
MOUNTS = (
    "/dev/nvme0n1p1 / ext4 rw,relatime,discard 0 0\n"
    "/dev/md0 /opt/dlami/nvme xfs rw,relatime 0 0\n"
    "10.1.71.197@tcp:/oyuutbev /fsx lustre rw,flock,lazystatfs 0 0\n"
)
NO_LUSTRE = "/dev/nvme0n1p1 / ext4 rw,relatime 0 0\n"
HEADER = "UUID                       bytes        Used   Available Use% Mounted on\n"


def lfs_df(ost_used_pct: list[int], extra: str = "") -> str:
    rows = [HEADER, "oyuutbev-MDT0000_UUID       34.4G        6.1M       34.4G   0% /fsx[MDT:0]\n"]
    for index, pct in enumerate(ost_used_pct):
        used = round(1.1 * pct / 100, 2)
        avail = round(1.1 - used, 2)
        rows.append(f"oyuutbev-OST{index:04x}_UUID 1.1T {used}T {avail}T {pct:3d}% /fsx[OST:{index}]\n")
    return "".join(rows) + extra + "\nfilesystem_summary:  4.4T 1.0T 3.4T 23% /fsx\n"


def evaluate(
    sections: list[tuple[str, str, int]], thresholds: Thresholds | None = None
) -> tuple[list[Finding], NodeContext]:
    text = render_container([("meta", "hostname=ip-10-1-2-3\n", 0), *sections])
    ctx = NodeContext(parse_container(text, "node.txt"), thresholds or Thresholds())
    return filesystem.evaluate(ctx), ctx


def test_healthy_lustre_is_one_ok_with_per_filesystem_evidence():
    # Given /fsx mounted and `lfs df -h` showing four OSTs well below 90%
    (finding,), ctx = evaluate([("mounts", MOUNTS, 0), ("lfs-df", lfs_df([10, 12, 9, 11]), 0)])
    # Then one OK fs.lustre_df finding says what was checked
    assert (finding.check, finding.severity, finding.section) == (
        "fs.lustre_df",
        Severity.OK,
        RunbookSection.FILE_SYSTEM,
    )
    assert finding.evidence["filesystems"] == [
        {"mount": "/fsx", "fsname": "oyuutbev", "mdts": 1, "osts": 4, "max_ost_used_pct": 12, "used_pct": 23}
    ]
    assert ctx.collection_findings == []


def test_one_ost_93_percent_full_is_exactly_one_concern():
    (concern,), _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", lfs_df([10, 93, 9, 11]), 0)])
    assert concern.severity is Severity.CONCERN
    assert concern.evidence["full_osts"] == {"/fsx": {"OST0001": 93}}
    assert "OST0001 93%" in concern.summary
    assert concern.threshold == "every OST < 90% used"


def test_lfs_df_timeout_is_a_hung_mount():
    # Given `lfs df` killed by timeout (rc=124) with /fsx mounted
    (concern,), ctx = evaluate([("mounts", MOUNTS, 0), ("lfs-df", "", 124)])
    # Then one CONCERN names the hang and the Lustre mounts it could concern
    assert concern.severity is Severity.CONCERN
    assert "hung Lustre mount" in concern.summary
    assert concern.evidence == {
        "rc": 124,
        "lustre_mounts": [{"mountpoint": "/fsx", "device": "10.1.71.197@tcp:/oyuutbev"}],
    }
    assert ctx.collection_findings == []


def test_inactive_ost_is_a_concern():
    text = lfs_df([10, 12], extra="oyuutbev-OST0002_UUID    : inactive device\n")
    (concern,), _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", text, 0)])
    assert concern.severity is Severity.CONCERN
    assert concern.evidence["unavailable"] == {"/fsx": {"OST0002": "inactive device"}}


def test_inactive_and_full_are_two_concerns():
    text = lfs_df([95, 12], extra="oyuutbev-OST0002_UUID    : inactive device\n")
    findings, _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", text, 0)])
    assert [(f.severity, "unavailable" in f.evidence, "full_osts" in f.evidence) for f in findings] == [
        (Severity.CONCERN, True, False),
        (Severity.CONCERN, False, True),
    ]


def test_no_lustre_mount_is_info_not_present():
    (finding,), _ = evaluate([("mounts", NO_LUSTRE, 0), ("lfs-df", "", 0)])
    assert finding.severity is Severity.INFO and "no Lustre mount" in finding.summary
    (finding,), _ = evaluate([("mounts", NO_LUSTRE, 0)])
    assert finding.severity is Severity.INFO and "no Lustre mount" in finding.summary


def test_lfs_missing_or_not_collected_is_info():
    (finding,), _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", "bash: lfs: command not found\n", 127)])
    assert finding.severity is Severity.INFO and finding.evidence["rc"] == 127
    (finding,), _ = evaluate([])
    assert finding.severity is Severity.INFO and "not present" in finding.summary


def test_real_fsx_outputs_are_ok():
    for name in ("fsx_3ost_mnt-fsx_summary.txt", "fsx-efa_4mdt-6ost_mnt-lustre_probe-log.txt"):
        (finding,), _ = evaluate([("lfs-df", (REAL / "lfs-df" / name).read_text(), 0)])
        assert finding.severity is Severity.OK
    (finding,), _ = evaluate(
        [("lfs-df", (REAL / "lfs-df/fsx-efa_4mdt-6ost_mnt-lustre_probe-log.txt").read_text(), 0)]
    )
    assert finding.evidence["filesystems"][0] == {
        "mount": "/mnt/lustre",
        "fsname": "xeo3rbev",
        "mdts": 4,
        "osts": 6,
        "max_ost_used_pct": 1,
        "used_pct": 1,
    }


def test_real_nersc_output_against_a_lower_threshold():
    # Given four real file systems whose fullest OSTs are at 83% (/scratch2 OST0006, /scratch1 OST0007)
    text = (REAL / "lfs-df/nersc_4fs_1k-blocks_old-summary-format.txt").read_text()
    (ok,), _ = evaluate([("lfs-df", text, 0)])
    assert ok.severity is Severity.OK and len(ok.evidence["filesystems"]) == 4
    # When the limit is lowered to 80%, exactly those two OSTs are flagged
    (concern,), _ = evaluate([("lfs-df", text, 0)], Thresholds(lustre_ost_used_pct=80))
    assert concern.evidence["full_osts"] == {"/scratch2": {"OST0006": 83}, "/scratch1": {"OST0007": 83}}


def test_garbage_lfs_df_is_only_a_collection_finding():
    findings, ctx = evaluate([("mounts", MOUNTS, 0), ("lfs-df", "Segmentation fault\n", 139)])
    assert findings == []
    (problem,) = ctx.collection_findings
    assert problem.evidence["section"] == "lfs-df"
