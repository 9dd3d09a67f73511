"""The simulated account's ids do not change from run to run: a demo run twice reports the same
file system, so `report diff` of the two shows no finding that only changed its id."""

from __future__ import annotations

import re

import boto3
from moto import mock_aws

from hyperpod_perf_dev.sim.account import seed_lustre

REGION = "us-west-2"


def _seed_once() -> tuple[str, dict]:
    with mock_aws():
        fsx = boto3.client("fsx", region_name=REGION)
        fs_id = seed_lustre(fsx, region=REGION, capacity_gib=2400, per_unit=250, mount_name="oyuutbev")
        second = seed_lustre(fsx, region=REGION, capacity_gib=2400, per_unit=250, mount_name="oyuutbev")
        described = {fs["FileSystemId"]: fs for fs in fsx.describe_file_systems()["FileSystems"]}
        assert set(described) == {fs_id, second}  # a second one of the same shape: its own id
        return fs_id, described[fs_id]


def test_a_seeded_lustre_file_system_has_the_same_real_looking_id_in_every_run():
    # When the same file system is seeded in two fresh accounts (two demo runs)
    first_id, first = _seed_once()
    again_id, _ = _seed_once()
    # Then both runs name it alike, as FSx spells ids (fs- and 17 hex digits)
    assert first_id == again_id
    assert re.fullmatch(r"fs-[0-9a-f]{17}", first_id)
    # and everything DescribeFileSystems says about it carries that id
    assert first["ResourceARN"].endswith(f":file-system/{first_id}")
    assert first["DNSName"].startswith(f"{first_id}.fsx.{REGION}.")
    assert first["LustreConfiguration"]["MountName"] == "oyuutbev"
