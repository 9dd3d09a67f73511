import json

import pytest

from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, ThresholdsError, load_thresholds


def test_defaults_are_the_runbooks():
    assert DEFAULT_THRESHOLDS.gpu_temperature_c == 88
    assert DEFAULT_THRESHOLDS.iowait_pct == 20
    assert DEFAULT_THRESHOLDS.nccl_pair_slow_pct == 5
    assert DEFAULT_THRESHOLDS.openzfs_iops_utilization_pct == 80


def test_json_and_toml_override_only_named_keys(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps({"gpu_temperature_c": 85}))
    (tmp_path / "t.toml").write_text("iowait_pct = 30.5\n")
    assert load_thresholds(tmp_path / "t.json").gpu_temperature_c == 85
    loaded = load_thresholds(tmp_path / "t.toml")
    assert loaded.iowait_pct == 30.5 and loaded.gpu_temperature_c == 88


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "cannot read thresholds"),
        ('{"gpu_temp": 1}', "invalid threshold gpu_temp"),
        ('{"iowait_pct": "high"}', "invalid threshold iowait_pct"),
        ("[1, 2]", "must be an object"),
    ],
)
def test_bad_files_give_one_clear_error(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(ThresholdsError, match=message):
        load_thresholds(path)
