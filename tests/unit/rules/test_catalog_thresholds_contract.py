"""The messages an operator reads when a check id is not catalogued or a thresholds file is invalid
(reviewed): the exact id list, and the dotted path of the bad key."""

from __future__ import annotations

import pytest

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.rules.catalog import UnknownCheckError, ensure_catalogued, lookup
from hyperpod_perf.rules.thresholds import ThresholdsError, load_thresholds


def finding(check: str) -> Finding:
    return Finding(check=check, severity=Severity.OK, section=RunbookSection.NCCL, summary="s")


def test_lookup_of_an_unknown_id_names_it():
    assert lookup("efa.counters").id == "efa.counters"
    with pytest.raises(UnknownCheckError) as raised:
        lookup("efa.countres")
    assert str(raised.value) == "check id 'efa.countres' is not in the check catalog (rules/catalog.py)"


def test_ensure_catalogued_lists_every_unknown_id_once_sorted():
    ensure_catalogued([finding("efa.counters"), finding("gpu.temperature")])
    with pytest.raises(UnknownCheckError) as raised:
        ensure_catalogued([finding("gpu.tmp"), finding("efa.counters"), finding("efa.x"), finding("gpu.tmp")])
    assert str(raised.value) == "check ids not in the check catalog (rules/catalog.py): efa.x, gpu.tmp"


def test_an_invalid_nested_threshold_names_its_dotted_path(tmp_path):
    # Given a counter list whose second entry is not a string
    path = tmp_path / "t.json"
    path.write_text('{"efa_error_counters": ["rx_drops", 3]}', encoding="utf-8")
    with pytest.raises(ThresholdsError) as raised:
        load_thresholds(path)
    assert (
        str(raised.value) == f"{path}: invalid threshold efa_error_counters.1: Input should be a valid string"
    )


def test_a_non_ascii_thresholds_file_is_read_as_utf8(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text("# température\ngpu_temperature_c = 85\n", encoding="utf-8")
    assert load_thresholds(path).gpu_temperature_c == 85.0
