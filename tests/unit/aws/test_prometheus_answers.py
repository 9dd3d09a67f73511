"""Prometheus API answers to the project's named errors, and matrices read sample by sample.

The error bodies are the shapes Prometheus' HTTP API documents (`{"status": "error", "errorType":
"bad_data", "error": ...}` with 400 / 422 / 503)."""

from __future__ import annotations

import json

import pytest

from hyperpod_perf.aws.prometheus import parse_matrix
from hyperpod_perf.domain.errors import AccessDenied, InvalidRequest, NotFound, Throttled, TransientError


def matrix(*series: dict) -> bytes:
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": list(series)}}
    ).encode()


def test_a_matrix_keeps_labels_and_drops_nan_inf_and_garbled_samples():
    raw = matrix(
        {
            "metric": {"Hostname": "ip-1"},
            "values": [[1.0, "5"], [61.0, "NaN"], [121.0, "+Inf"], [181.0, "x"], [241.0, "7.5"]],
        }
    )
    [series] = parse_matrix(200, raw, "ctx")
    assert series.labels == {"Hostname": "ip-1"}
    assert series.points == [(1.0, 5.0), (241.0, 7.5)]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, InvalidRequest),
        (422, InvalidRequest),
        (429, Throttled),
        (503, TransientError),
        (403, AccessDenied),
        (404, NotFound),
    ],
)
def test_status_codes_become_named_errors_with_the_servers_words(status, error):
    body = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}).encode()
    with pytest.raises(error) as raised:
        parse_matrix(status, body, "query_range http://p:9090")
    assert str(raised.value) == f"query_range http://p:9090: bad_data: parse error at char 3 [{status}]"


def test_an_html_error_page_is_quoted_not_parsed():
    with pytest.raises(TransientError, match="Bad Gateway"):
        parse_matrix(502, b"<html>502 Bad Gateway</html>", "ctx")


def test_a_vector_answer_is_refused():
    raw = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
    with pytest.raises(InvalidRequest, match="expected a matrix, got 'vector'"):
        parse_matrix(200, raw, "ctx")
