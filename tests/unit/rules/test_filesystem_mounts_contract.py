"""fs.lustre_df across several file systems and from `lfs df` output that lacks a part.

The rows are in `lfs df -h`'s own layout (the header and row shapes of test_filesystem_rules, from the
real outputs in tests/fixtures/real); which targets are down and which lines are missing are chosen to
land on each branch: targets named per mount in the summary, a block without a mount path named by
its fsname, a block without its `filesystem_summary:` line.
"""

from __future__ import annotations

from test_filesystem_rules import HEADER, MOUNTS, evaluate

FSX_BLOCK = (
    HEADER
    + "oyuutbev-MDT0000_UUID       34.4G        6.1M       34.4G   0% /fsx[MDT:0]\n"
    + "oyuutbev-OST0000_UUID 1.1T 0.1T 1.0T  10% /fsx[OST:0]\n"
    + "oyuutbev-OST0002_UUID    : inactive device\n"
    + "oyuutbev-OST0003_UUID    : Resource temporarily unavailable (-11)\n"
    + "\nfilesystem_summary:  4.4T 1.0T 3.4T 23% /fsx\n\n"
)


def test_unavailable_targets_are_listed_per_mount_in_the_summary_and_the_evidence():
    # Given /fsx with two targets down and /scratch with one
    scratch = HEADER + (
        "scratch1-MDT0000_UUID       34.4G        6.1M       34.4G   0% /scratch[MDT:0]\n"
        "scratch1-OST0001_UUID    : inactive device\n"
    )
    (finding,), _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", FSX_BLOCK + scratch, 0)])
    # Then the summary separates mounts with "; " and a mount's targets with ", "
    assert finding.summary == (
        "Lustre target(s) unavailable: /fsx OST0002 (inactive device), "
        "OST0003 (Resource temporarily unavailable (-11)); /scratch OST0001 (inactive device)"
    )
    assert finding.evidence == {
        "unavailable": {
            "/fsx": {"OST0002": "inactive device", "OST0003": "Resource temporarily unavailable (-11)"},
            "/scratch": {"OST0001": "inactive device"},
        },
        "rc": 0,
    }


def test_a_block_without_a_mount_path_is_named_by_its_fsname():
    # Given a block that printed only an inactive target (no row carries the mount path)
    text = HEADER + "scratch1-OST0001_UUID    : inactive device\n"
    (finding,), _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", text, 0)])
    assert finding.summary == "Lustre target(s) unavailable: scratch1 OST0001 (inactive device)"
    assert finding.evidence == {"unavailable": {"scratch1": {"OST0001": "inactive device"}}, "rc": 0}


def test_a_block_without_its_summary_line_has_no_used_share_but_keeps_the_ost_maximum():
    # Given /fsx's rows without the `filesystem_summary:` line
    text = (
        HEADER
        + "oyuutbev-MDT0000_UUID       34.4G        6.1M       34.4G   0% /fsx[MDT:0]\n"
        + "oyuutbev-OST0000_UUID 1.1T 0.1T 1.0T  10% /fsx[OST:0]\n"
        + "oyuutbev-OST0001_UUID 1.1T 0.4T 0.7T  37% /fsx[OST:1]\n"
    )
    (finding,), _ = evaluate([("mounts", MOUNTS, 0), ("lfs-df", text, 0)])
    assert (finding.severity.value, finding.summary) == (
        "OK",
        "1 Lustre file system(s): all targets reachable, OSTs below 90%",
    )
    assert finding.evidence == {
        "filesystems": [
            {
                "mount": "/fsx",
                "fsname": "oyuutbev",
                "mdts": 1,
                "osts": 2,
                "max_ost_used_pct": 37,
                "used_pct": None,
            }
        ]
    }
