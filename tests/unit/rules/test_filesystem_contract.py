"""fs.lustre_df findings field by field (reviewed): hung mount, no Lustre, section absent, no target
printed, unavailable and full targets (with the rc noted), and the healthy summary."""

from __future__ import annotations

from test_filesystem_rules import MOUNTS, NO_LUSTRE, evaluate, lfs_df

LUSTRE_MOUNTS = [{"mountpoint": "/fsx", "device": "10.1.71.197@tcp:/oyuutbev"}]


def contract(sections):
    findings, _ = evaluate(sections)
    return [
        (
            f.check,
            f.severity.value,
            f.section.value,
            f.summary,
            f.evidence,
            f.threshold,
            f.next_step,
            f.handoff,
        )
        for f in findings
    ]


def test_hung_lfs_df():
    assert contract([("mounts", MOUNTS, 0), ("lfs-df", "", 124)]) == [
        (
            "fs.lustre_df",
            "CONCERN",
            "B",
            "`lfs df` timed out (rc=124): a hung Lustre mount",
            {"rc": 124, "lustre_mounts": LUSTRE_MOUNTS},
            "lfs df completes within the collector's timeout",
            "I/O to this mount blocks. On the node: `lfs check servers`, `lctl dl | grep -v UP`, and "
            "`dmesg | grep -i lustre` for evictions/timeouts; check the file system's health in the FSx "
            "console and that the security group allows Lustre traffic (TCP 988, 1018-1023).",
            None,
        )
    ]


def test_no_lustre_absent_section_and_no_target_printed_are_info():
    assert contract([("mounts", NO_LUSTRE, 0)]) == [
        (
            "fs.lustre_df",
            "INFO",
            "B",
            "Lustre target usage: not present (no Lustre mount)",
            {"lustre_mounts": []},
            None,
            None,
            None,
        )
    ]
    assert contract([("mounts", MOUNTS, 0)]) == [
        (
            "fs.lustre_df",
            "INFO",
            "B",
            "Lustre target usage (lfs df): not present (section not in snapshot)",
            {"section": "lfs-df", "state": "absent", "rc": None},
            None,
            None,
            None,
        )
    ]
    assert contract([("mounts", MOUNTS, 0), ("lfs-df", "", 1)]) == [
        (
            "fs.lustre_df",
            "INFO",
            "B",
            "`lfs df` printed no target although Lustre is mounted",
            {"rc": 1, "lustre_mounts": LUSTRE_MOUNTS},
            None,
            None,
            None,
        )
    ]


def test_unavailable_and_full_targets_with_the_exit_code():
    text = lfs_df([95, 12], extra="oyuutbev-OST0002_UUID    : inactive device\n")
    assert contract([("mounts", MOUNTS, 0), ("lfs-df", text, 2)]) == [
        (
            "fs.lustre_df",
            "CONCERN",
            "B",
            "Lustre target(s) unavailable: /fsx OST0002 (inactive device)",
            {"unavailable": {"/fsx": {"OST0002": "inactive device"}}, "rc": 2},
            "every MDT/OST reachable (no `inactive device`)",
            "Files striped on that target hang or fail. On the node: `lctl dl` and `lfs check osts`; check "
            "the file system's status in the FSx console; open a support case if it persists.",
            None,
        ),
        (
            "fs.lustre_df",
            "CONCERN",
            "B",
            "Lustre OST(s) at or above 90% used: /fsx OST0000 95%",
            {
                "full_osts": {"/fsx": {"OST0000": 95}},
                "filesystems": [
                    {
                        "mount": "/fsx",
                        "fsname": "oyuutbev",
                        "mdts": 1,
                        "osts": 3,
                        "max_ost_used_pct": 95,
                        "used_pct": 23,
                    }
                ],
            },
            "every OST < 90% used",
            "Writes striped onto a full OST fail with ENOSPC or slow down even while the file system has "
            "room: rebalance hot files (`lfs_migrate`), widen striping for large files, or grow the file "
            "system's storage capacity.",
            None,
        ),
    ]


def test_healthy_lustre_summary():
    assert contract([("mounts", MOUNTS, 0), ("lfs-df", lfs_df([10, 12]), 0)]) == [
        (
            "fs.lustre_df",
            "OK",
            "B",
            "1 Lustre file system(s): all targets reachable, OSTs below 90%",
            {
                "filesystems": [
                    {
                        "mount": "/fsx",
                        "fsname": "oyuutbev",
                        "mdts": 1,
                        "osts": 2,
                        "max_ost_used_pct": 12,
                        "used_pct": 23,
                    }
                ]
            },
            "every target reachable, every OST < 90% used",
            None,
            None,
        )
    ]
