"""Property tests: truncated, prefixed and garbled nccl-tests output never makes an exception escape."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nccl_synth import DATA, REAL

from hyperpod_perf.nccl.analysis import analyze_logs
from hyperpod_perf.parse.nccl_tests import NcclTestsParseError, parse_nccl_tests, parse_nccl_tests_strict

TEXTS = [p.read_text(encoding="utf-8") for p in sorted([*REAL.iterdir(), *DATA.iterdir()]) if p.is_file()]
PREFIXES = ["", "0: ", "  3: ", "[1,0]<stdout>:", "[1,1]<stderr>:", "[pod/l/m] ", "# ", "\t"]
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.sampled_from(TEXTS), st.data())
def test_any_truncation_parses_and_keeps_only_rows_it_saw(text, data):
    # Given a real output cut at an arbitrary character
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    truncated = text[:cut]
    # When parsed (total and strict)
    log = parse_nccl_tests(truncated)
    full = parse_nccl_tests(text)
    # Then no exception escaped, and the cut text never has more rows than the whole one
    assert sum(len(r.rows) for r in log.runs) <= sum(len(r.rows) for r in full.runs)
    try:
        parse_nccl_tests_strict(truncated)
    except NcclTestsParseError:
        assert not log.measured_runs


@FAST
@given(st.sampled_from(TEXTS), st.lists(st.sampled_from(PREFIXES), min_size=1, max_size=40))
def test_launcher_prefixes_do_not_change_the_figure(text, prefixes):
    # Given a real output whose lines get a launcher prefix (one kind per run, as a launcher does)
    prefix = prefixes[0]
    if prefix in ("# ", "\t"):
        prefixed = "\n".join(prefix + line for line in text.splitlines())
        parse_nccl_tests(prefixed)  # garbling prefixes: only "no exception" is promised
        return
    prefixed = "\n".join(prefix + line for line in text.splitlines())
    # Then the figure is the same as without the prefix
    plain = [r.pair_busbw_gbps for r in parse_nccl_tests(text).runs]
    assert [r.pair_busbw_gbps for r in parse_nccl_tests(prefixed).runs] == plain


@FAST
@given(st.text(max_size=400), st.sampled_from(TEXTS))
def test_arbitrary_text_mixed_in_never_raises(noise, text):
    lines = text.splitlines()
    middle = len(lines) // 2
    mixed = "\n".join([*lines[:middle], noise, *lines[middle:]])
    log = parse_nccl_tests(mixed)
    assert isinstance(log.problems, list)
    # And the analysis on top of it neither
    analysis = analyze_logs([(str(Path("x__y.log")), mixed)])
    assert all(f.check.startswith("nccl.") for f in analysis.findings)


@FAST
@given(st.text(alphabet=st.sampled_from(list("0123456789 .#-:[]<>NA/abcdefOKFAILED\n\t")), max_size=600))
def test_tokens_that_look_like_rows_never_raise(text):
    parse_nccl_tests(text)
