"""From logs to the pair matrix, field by field (reviewed): what one log gives, which hosts it names,
which logs are ranked, the message size the pairs are compared at and the figure each pair gets there.

Logs are the clearly synthetic nccl-tests 2.18-style log of nccl_synth (sizes 256 MiB, 512 MiB, 1 GiB;
maxBytes 1 GiB) and edits of it.
"""

from __future__ import annotations

from nccl_synth import synthetic_log

from hyperpod_perf.nccl.analysis import (
    LogReport,
    PairMeasurement,
    analyze_logs,
    analyze_measurements,
    hosts_from_name,
    measurements_from_logs,
)

GIB = 1 << 30
MIB = 1 << 20


def without(text: str, *starts: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.lstrip().startswith(starts))


def test_one_complete_log_gives_one_measurement_with_every_field():
    # Given a complete log of n1/n2 whose two largest sizes read 400 GB/s, 3 wrong values at 1 GiB
    (measurement,), (report,) = measurements_from_logs([("logs/n1__n2.log", synthetic_log(400.0, wrong=3))])
    # Then the figure is the larger mean of the two largest sizes; 256 MiB reads 200
    assert measurement == PairMeasurement(
        busbw_gbps=400.0,
        source="logs/n1__n2.log",
        a="n1",
        b="n2",
        wrong=3,
        out_of_bounds_failed=False,
        avg_busbw_gbps=320.0,
        collective="all_reduce_perf",
        sizes=((256 * MIB, 200.0), (512 * MIB, 400.0), (GIB, 400.0)),
        complete=True,
    )
    assert measurement.largest_size == GIB and measurement.key == ("n1", "n2")
    assert (report.source, report.measured_runs, report.problems) == ("logs/n1__n2.log", 1, [])
    assert (report.truncated, report.elided, report.not_ranked, report.usable) == (False, False, None, True)


def test_out_of_bounds_failed_without_wrong_values_is_its_own_flag():
    text = synthetic_log(400.0).replace("# Out of bounds values : 0 OK", "# Out of bounds values : 0 FAILED")
    (measurement,), _ = measurements_from_logs([("a__b.log", text)])
    assert measurement.wrong == 0 and measurement.out_of_bounds_failed is True


def test_a_log_without_summary_that_reached_its_max_bytes_is_complete_and_one_without_header_is_unknown():
    no_summary = without(synthetic_log(400.0), "# Out of bounds", "# Avg bus", "# Collective test concluded")
    (reached,), (report,) = measurements_from_logs([("a__b.log", no_summary)])
    assert reached.complete is True and report.truncated is True
    no_header = without(no_summary, "# nThread")
    (unknown,), _ = measurements_from_logs([("a__b.log", no_header)])
    assert unknown.complete is None


def test_a_table_cut_before_its_max_bytes_is_not_complete():
    cut = without(synthetic_log(400.0), "1073741824")
    (measurement,), (report,) = measurements_from_logs([("a__b.log", cut)])
    assert measurement.complete is False and report.truncated is True
    assert measurement.largest_size == 512 * MIB


def test_hosts_from_rank_lines_or_the_file_name_and_the_problems_said():
    logs = [
        ("n1__n2.log", synthetic_log(400.0, hosts=("n1", "n3"))),  # rank lines win, mismatch said
        ("solo.log", synthetic_log(400.0, hosts=("h1",))),  # one host: not a pair test
        ("tri.log", synthetic_log(400.0, hosts=("h1", "h2", "h3"))),  # three hosts
        ("n5__n6.log", synthetic_log(400.0, hosts=("h1",))),  # one host, but the file name names two
        ("run.log", synthetic_log(400.0)),  # no rank lines, no pair in the name
    ]
    measurements, reports = measurements_from_logs(logs)
    assert [(m.a, m.b) for m in measurements] == [
        ("n1", "n3"),
        ("h1", None),
        (None, None),
        ("n5", "n6"),
        (None, None),
    ]
    assert [r.problems for r in reports] == [
        ["file name names n1/n2 but the rank lines name n1/n3"],
        ["rank lines name a single host (h1): not a pair test"],
        ["rank lines name 3 hosts: not a pair test"],
        [],
        [],
    ]


def test_two_appended_runs_count_twice_and_repeated_problems_are_said_once():
    # Given one file holding the same single-host run twice
    run = synthetic_log(400.0, hosts=("h1",))
    _, (report,) = measurements_from_logs([("solo.log", run + run)])
    assert report.measured_runs == 2
    assert report.problems == ["rank lines name a single host (h1): not a pair test"]


def test_a_log_without_any_table_is_unusable():
    (measurements, (report,)) = measurements_from_logs([("a__b.log", "srun: error: Unable to allocate\n")])
    assert measurements == [] and report.measured_runs == 0 and report.usable is False


def test_hosts_from_name_strips_one_known_suffix_case_blind_and_backslashes():
    assert hosts_from_name("C:\\logs\\ip-1__ip-2.LOG") == ("ip-1", "ip-2")
    assert hosts_from_name("a__b.err") == ("a", "b")
    assert hosts_from_name("a__b.out.txt") == ("a", "b.out")
    assert hosts_from_name("a__b") == ("a", "b")
    assert hosts_from_name("__b.log") is None and hosts_from_name("a__.log") is None


def test_pairs_are_compared_at_the_largest_size_every_log_reached():
    # Given a 2 GiB sweep (100 @ 512 MiB, 110 @ 1 GiB, 130 @ 2 GiB) and a 1 GiB sweep (90, 105)
    long = PairMeasurement(
        130.0, "a__b.log", "a", "b", sizes=((512 * MIB, 100.0), (GIB, 110.0), (2 * GIB, 130.0)), complete=True
    )
    short = PairMeasurement(
        105.0, "a__c.log", "a", "c", sizes=((512 * MIB, 90.0), (GIB, 105.0)), complete=True
    )
    analysis = analyze_measurements([long, short])
    # Then both are read at 1 GiB: the long one at max(100, 110) = 110, the short one as measured
    assert analysis.compared_at_bytes == GIB and analysis.mixed_sizes is False
    assert [(p.a, p.b, p.busbw_gbps) for p in analysis.pairs] == [("a", "b", 110.0), ("a", "c", 105.0)]


def test_the_shared_size_is_the_largest_one_all_logs_measured_when_the_ends_differ():
    # Given ends 2 GiB and 4 GiB where the 4 GiB sweep skipped 2 GiB: shared {512 MiB, 1 GiB} -> 1 GiB
    one = PairMeasurement(
        9.0, "a__b.log", "a", "b", sizes=((512 * MIB, 50.0), (GIB, 60.0), (2 * GIB, 70.0)), complete=True
    )
    two = PairMeasurement(
        9.0, "a__c.log", "a", "c", sizes=((512 * MIB, 52.0), (GIB, 62.0), (4 * GIB, 90.0)), complete=True
    )
    analysis = analyze_measurements([one, two])
    assert analysis.compared_at_bytes == GIB
    assert [p.busbw_gbps for p in analysis.pairs] == [60.0, 62.0]


def test_a_log_without_summary_that_stops_below_the_complete_logs_is_not_ranked_and_said_why():
    complete = PairMeasurement(
        100.0, "a__b.log", "a", "b", sizes=((512 * MIB, 90.0), (GIB, 100.0)), complete=True
    )
    unknown_short = PairMeasurement(40.0, "a__c.log", "a", "c", sizes=((512 * MIB, 40.0),), complete=None)
    unknown_full = PairMeasurement(
        98.0, "b__c.log", "b", "c", sizes=((512 * MIB, 88.0), (GIB, 98.0)), complete=None
    )
    logs = [LogReport("a__b.log", 1), LogReport("a__c.log", 1), LogReport("b__c.log", 1)]
    analysis = analyze_measurements([complete, unknown_short, unknown_full], logs=logs)
    assert [(p.a, p.b) for p in analysis.pairs] == [("a", "b"), ("b", "c")]
    assert analysis.compared_at_bytes == GIB
    assert [log.not_ranked for log in analysis.logs] == [
        None,
        f"no summary line and the table stops at {512 * MIB} B, below the {GIB} B every complete log "
        "reached: cut short",
        None,
    ]


def test_an_unusable_log_is_not_marked_not_ranked():
    cut = PairMeasurement(10.0, "a__c.log", "a", "c", sizes=((512, 10.0),), complete=False)
    ok = PairMeasurement(100.0, "a__b.log", "a", "b", sizes=((1024, 100.0),), complete=True)
    logs = [LogReport("a__c.log", 0), LogReport("a__b.log", 1)]
    analysis = analyze_measurements([cut, ok], logs=logs)
    assert [log.not_ranked for log in analysis.logs] == [None, None]


def test_repeated_runs_of_a_pair_take_the_median_and_name_each_source_once():
    runs = [
        PairMeasurement(100.0, "r1.log", "b", "a"),
        PairMeasurement(90.0, "r1.log", "a", "b"),
        PairMeasurement(80.0, "r2.log", "a", "b"),
        PairMeasurement(70.0, "r3.log", "b", "a"),
    ]
    (pair,) = analyze_measurements(runs).pairs
    assert (pair.a, pair.b, pair.busbw_gbps, pair.runs, pair.sources) == (
        "a",
        "b",
        85.0,
        4,
        ["r1.log", "r2.log", "r3.log"],
    )


def test_analyze_logs_runs_the_whole_chain_and_keeps_the_expected_nodes():
    analysis = analyze_logs(
        [("n1__n2.log", synthetic_log(400.0))], instance_type="ml.p5.48xlarge", expected_nodes=["n3"]
    )
    assert analysis.nodes == ["n1", "n2", "n3"] and analysis.missing_count == 2
    assert analysis.instance_type == "p5.48xlarge" and analysis.expected_gbps == 438.955


def test_a_run_naming_the_same_host_twice_is_a_single_host_run_not_a_pair():
    # Given nodes n1, n2, n3 with n1-n2 measured and a run given as n1/n1 (no pair tested)
    analysis = analyze_measurements(
        [PairMeasurement(100.0, "n1__n2.log", "n1", "n2"), PairMeasurement(100.0, "self.log", "n1", "n1")],
        expected_nodes=["n3"],
    )
    # Then it is listed as n1–? and coverage still misses n1-n3 and n2-n3 (it used to count n1-n1 as
    # a measured pair: "1 of 3 node pairs not measured")
    assert [(p.a, p.b) for p in analysis.pairs] == [("n1", None), ("n1", "n2")]
    assert analysis.missing_count == 2 and analysis.missing_pairs == [("n1", "n3"), ("n2", "n3")]
    (coverage,) = [f for f in analysis.findings if f.check == "nccl.coverage"]
    assert coverage.summary == (
        "2 of 3 node pairs not measured; 1 logs name no host pair (neither rank lines nor "
        "<hostA>__<hostB> file name)"
    )


def test_a_log_is_truncated_or_elided_when_any_of_its_runs_is():
    # Given one file: a run without its summary lines, then the same run complete
    full = synthetic_log(400.0)
    no_summary = without(full, "# Out of bounds", "# Avg bus", "# Collective test concluded")
    measurements, (report,) = measurements_from_logs([("a__b.log", no_summary + full)])
    assert len(measurements) == 2 and report.truncated is True
    assert report.problems == ["no summary line (Avg bus bandwidth / Out of bounds): run was cut short"]
    # Given a run whose table has a `...` elision line, then the same run complete
    lines = full.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("536870912"))
    elided = "".join([*lines[:at], "...\n", *lines[at:]])
    measurements, (report,) = measurements_from_logs([("a__b.log", elided + full)])
    assert len(measurements) == 2 and (report.elided, report.truncated) == (True, False)
    assert report.problems == ["rows elided in the source ('...')"]


def test_the_log_level_problem_of_an_unusable_log_is_kept():
    _, (report,) = measurements_from_logs([("a__b.log", "srun: error: Unable to allocate\n")])
    assert report.problems == ["no nccl-tests output found"]


def test_a_run_naming_one_host_in_either_place_is_listed_under_that_host():
    analysis = analyze_measurements(
        [PairMeasurement(100.0, "b-only.log", None, "n2"), PairMeasurement(90.0, "a-only.log", "n1", None)]
    )
    assert [p.to_dict() for p in analysis.pairs] == [
        {"a": "n2", "b": None, "busbw_gbps": 100.0, "runs": 1, "sources": ["b-only.log"]},
        {"a": "n1", "b": None, "busbw_gbps": 90.0, "runs": 1, "sources": ["a-only.log"]},
    ]


def test_two_runs_of_a_pair_give_their_mean():
    runs = [PairMeasurement(90.0, "r1.log", "a", "b"), PairMeasurement(100.0, "r2.log", "b", "a")]
    (pair,) = analyze_measurements(runs).pairs
    assert (pair.busbw_gbps, pair.runs, pair.sources) == (95.0, 2, ["r1.log", "r2.log"])


def test_a_run_without_rows_is_skipped_and_the_next_run_of_the_file_still_counts():
    # Given one file: a run that printed its banner and summary but no table, then a complete run
    full = synthetic_log(400.0)
    banner_only = "".join(line for line in full.splitlines(keepends=True) if line.startswith("#"))
    (measurement,), (report,) = measurements_from_logs([("a__b.log", banner_only + full)])
    assert (measurement.busbw_gbps, report.measured_runs) == (400.0, 1)
    assert report.problems == ["no measurement rows"]
