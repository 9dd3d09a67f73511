"""`lfs df` parser on real outputs: FSx -h forms, 1K-blocks with the old summary, several file systems."""

from pathlib import Path

import pytest

from hyperpod_perf.parse.lustre import parse_lfs_df

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GIB, TIB = 1024**3, 1024**4


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_fsx_over_efa_four_mdts_six_osts_with_log_marker():
    # Given `lfs df -h` from a probe log (with its `--- lfs df -h ---` marker), 4 MDTs and 6 OSTs
    report = parse_lfs_df(read("lfs-df/fsx-efa_4mdt-6ost_mnt-lustre_probe-log.txt"))
    # Then one file system with every target and the summary is read
    (fs,) = report.filesystems
    assert fs.mount == "/mnt/lustre" and fs.fsname == "xeo3rbev" and fs.unit == "bytes"
    assert [t.name for t in fs.mdts] == ["MDT0000", "MDT0001", "MDT0002", "MDT0003"]
    assert [t.index for t in fs.osts] == [0, 1, 2, 3, 4, 5]
    assert fs.osts[0].size_bytes == round(4.5 * TIB)
    assert fs.osts[0].used_bytes == 10 * 1024**2
    assert fs.mdts[0].size_bytes == round(549.9 * GIB)
    assert fs.summary is not None and fs.summary.size_bytes == 27 * TIB and fs.summary.use_pct == 1


def test_fsx_one_ost_with_prompt_and_space_only_blank_lines():
    (fs,) = parse_lfs_df(read("lfs-df/fsx_1ost_awsdocs_s3-linking.txt")).filesystems
    assert fs.mount == "/fsx" and fs.fsname == "3rnxfbmv"
    assert len(fs.mdts) == 1 and len(fs.osts) == 1
    assert fs.osts[0].use_pct == 0 and fs.osts[0].used_bytes == round(4.5 * 1024**2)
    assert fs.summary is not None and fs.summary.size_bytes == round(1.1 * TIB)


def test_fsx_three_osts_summary():
    (fs,) = parse_lfs_df(read("lfs-df/fsx_3ost_mnt-fsx_summary.txt")).filesystems
    assert fs.mount == "/mnt/fsx" and fs.fsname == "fsx"
    assert [t.used_bytes for t in fs.osts] == [round(4.5 * 1024**2), round(4.5 * 1024**2), 187 * 1024**2]
    assert fs.mdts[0].use_pct == 4
    assert fs.summary is not None and fs.summary.used_bytes == 196 * 1024**2


def test_annotated_hot_ost_without_summary():
    # Given `lfs df -h` with a root prompt and a `<-----` arrow the author pasted after OST0000
    (fs,) = parse_lfs_df(read("lfs-df/fsx_4ost_hot-ost0_annotated.txt")).filesystems
    # Then the arrow is not taken for a state flag and the hot OST's usage is read
    assert fs.summary is None
    assert fs.osts[0].used_bytes == 10 * GIB and fs.osts[0].use_pct == 1 and fs.osts[0].state_flags == ""
    assert [t.used_bytes for t in fs.osts[1:]] == [round(4.6 * 1024**2)] * 3


def test_nersc_four_file_systems_1k_blocks_old_summary():
    # Given plain `lfs df` (1K-blocks) over four Cray file systems with `filesystem summary:` lines
    report = parse_lfs_df(read("lfs-df/nersc_4fs_1k-blocks_old-summary-format.txt"))
    # Then every file system is split out with its OSTs (hex UUID index vs decimal bracket index)
    assert [fs.mount for fs in report.filesystems] == [
        "/scratch2",
        "/scratch3",
        "/global/cscratch1",
        "/scratch1",
    ]
    assert [len(fs.osts) for fs in report.filesystems] == [24, 36, 248, 24]
    assert [len(fs.mdts) for fs in report.filesystems] == [1, 1, 5, 1]
    scratch2 = report.filesystem("/scratch2")
    assert scratch2 is not None and scratch2.unit == "1K-blocks" and scratch2.fsname == "snx11035"
    ost10 = scratch2.osts[10]
    assert ost10.uuid == "snx11035-OST000a_UUID" and ost10.index == 10 and ost10.name == "OST000a"
    assert scratch2.osts[0].size_bytes == 90767651352 * 1024
    assert max(t.use_pct or 0 for t in scratch2.osts) == 83
    assert scratch2.summary is not None and scratch2.summary.use_pct == 74
    assert scratch2.summary.used_bytes == 1590005655436 * 1024
    cscratch = report.filesystem("/global/cscratch1")
    assert cscratch is not None and cscratch.summary is not None and cscratch.summary.use_pct == 45


def test_inactive_and_failing_targets_get_the_block_mount():
    # Given lfs's own wording for a deactivated OST and for one that returned an error
    text = (
        "UUID                       bytes        Used   Available Use% Mounted on\n"
        "fsx-MDT0000_UUID          102.8G        4.4G       98.5G   4% /fsx[MDT:0]\n"
        "fsx-OST0000_UUID            1.1T      1.0T       100.0G  93% /fsx[OST:0]\n"
        "fsx-OST0001_UUID    : inactive device\n"
        "fsx-OST0002_UUID    : Resource temporarily unavailable\n"
        "fsx-OST0003_UUID            1.1T        4.5M        1.1T   0% /fsx[OST:3] D\n"
        "\n"
        "filesystem_summary:         2.2T        1.0T        1.2T  46% /fsx\n"
    )
    (fs,) = parse_lfs_df(text).filesystems
    # Then they are targets with a reason and the block's mount; state flags are kept
    assert [(t.name, t.unavailable) for t in fs.osts if t.inactive] == [
        ("OST0001", "inactive device"),
        ("OST0002", "Resource temporarily unavailable"),
    ]
    assert all(t.mount == "/fsx" for t in fs.targets)
    assert fs.osts[0].use_pct == 93
    assert fs.osts[3].state_flags == "D"


def test_empty_output_and_garbage():
    assert parse_lfs_df("").filesystems == ()
    with pytest.raises(ValueError, match="no lfs df target row"):
        parse_lfs_df("lfs: cannot find a Lustre filesystem mounted\n")


def test_a_size_beyond_a_float_is_a_value_error():
    # Given an OST row with a 400-digit size (once an OverflowError from round(inf))
    text = (
        "UUID bytes Used Available Use% Mounted on\nfs-OST0000_UUID " + "9" * 400 + "T 1T 1T 5% /fsx[OST:0]\n"
    )
    # Then the parser refuses it with a ValueError naming the size
    with pytest.raises(ValueError, match="size out of range"):
        parse_lfs_df(text)


def test_unavailable_target_reason_keeps_its_inner_blanks():
    # Given an unavailable target whose reason is padded and has blanks inside
    text = "UUID bytes Used Available Use% Mounted on\nfsx-OST0002_UUID   :   Resource   busy\n"
    (fs,) = parse_lfs_df(text).filesystems
    # Then the reason is read from its first to its last non-blank character
    assert [(t.name, t.unavailable) for t in fs.targets] == [("OST0002", "Resource   busy")]
