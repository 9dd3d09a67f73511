"""nccl.straggler: a straggler planted in real formats is named with its rank, host and process.

The inputs are written by hyperpod_perf_dev/timing_formats.py in each format's real layout (cited
there); the job is 16 ranks on two hosts unless a test says otherwise. Expected values are computed from the
planted durations, not read back from the code under test.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.joblogs import evaluate, scan_logs
from hyperpod_perf.joblogs.crossref import cross_reference
from hyperpod_perf.rules.thresholds import Thresholds
from hyperpod_perf.straggler.flight_recorder import RestrictedUnpickler, UnsafeDump, load_dump
from hyperpod_perf_dev.timing_formats import (
    Job,
    fr_dump,
    fr_json,
    inspector_lines,
    megatron_timers_block,
    nccl_init_lines,
    pickle_like_torch,
)

#: A pickle whose GLOBAL asks for builtins.eval and REDUCE calls it (what a malicious dump does).
EVAL_PICKLE = b"\x80\x02cbuiltins\neval\nq\x00X\x06\x00\x00\x001+1==2q\x01\x85q\x02Rq\x03."
#: A pickle cut off inside its first string.
CUT_PICKLE = b"\x80\x02}q\x00(X\x01"
CONCERN, OK, INFO = Severity.CONCERN, Severity.OK, Severity.INFO


class Log:
    """A log as the readers offer it: its bytes in blocks (cut small, to cross line ends)."""

    def __init__(self, data: bytes, block: int = 4093) -> None:
        self.data, self.block = data, block

    def blocks(self):
        for start in range(0, len(self.data), self.block):
            yield self.data[start : start + self.block]


def inspector_job(job: Job, version: str = "v4.2") -> list[tuple[str, Log]]:
    return [
        (
            f"nccl-inspector-1234/{job.host(r)}-pid{job.pid(r)}.log",
            Log(inspector_lines(job, r, version).encode()),
        )
        for r in range(job.ranks)
    ]


def straggler(logs, **kwargs) -> list[Finding]:
    thresholds = kwargs.pop("thresholds", Thresholds())
    return [f for f in evaluate(scan_logs(logs, **kwargs), thresholds) if f.check == "nccl.straggler"]


def expected_wait_us(job: Job, late: int) -> tuple[float, int]:
    """(summed peer wait in µs, collectives waited on) of the planted durations, computed here."""
    total, waited = 0.0, 0
    for per_rank in job.durations_us():
        shortest = min(per_rank)
        mean = sum(per_rank) / len(per_rank)
        if mean - shortest >= 1000.0 and mean - shortest >= 0.1 * mean and per_rank.index(shortest) == late:
            waited += 1
            total += sum(d - shortest for d in per_rank)
    return total, waited


@pytest.mark.parametrize("version", ["v4.0", "v4.2", "v4.3"])
def test_inspector_names_the_late_rank_with_its_host_pid_and_cost(version):
    # Given 16 ranks' Inspector logs where rank 11 arrives 5 ms late at every all-reduce
    job = Job(late_rank=11)
    logs = inspector_job(job, version)
    # When the job's logs are analysed
    (finding,) = straggler(logs)
    # Then rank 11 on its host and pid is named as a CONCERN, late in every collective
    assert finding.severity is CONCERN
    assert finding.evidence["straggler"] == "rank 11, host ip-10-1-0-11, pid 4011"
    assert finding.evidence["culprit"] == {
        "ranks": [11],
        "hosts": ["ip-10-1-0-11"],
        "method": "collective timings",
    }
    assert finding.evidence["late_in"] == finding.evidence["collectives_waited_on"] == job.collectives
    # and the GPU-hours lost are the peers' summed wait (Inspector rounds to whole µs)
    total_us, waited = expected_wait_us(job, 11)
    assert waited == job.collectives
    assert finding.evidence["gpu_hours_lost"] == pytest.approx(total_us / 3.6e9, rel=0.01)
    # and the share of time lost is the mean wait over the span of the dumps (60 x 250 ms)
    per_peer_ms = finding.evidence["mean_wait_ms"]
    assert 4.5 < per_peer_ms < 5.0
    span_s = (job.collectives - 1) * job.step_ms / 1000.0
    assert finding.evidence["share_of_time_lost"] == pytest.approx(
        per_peer_ms * job.collectives / 1000 / span_s, rel=0.02
    )
    assert "rank 11, host ip-10-1-0-11, pid 4011 arrives late" in finding.summary


def test_inspector_versions_read_the_same():
    job = Job(late_rank=3)
    readings = [straggler(inspector_job(job, v))[0].evidence for v in ("v4.2", "v4.3")]
    for evidence in readings:
        evidence.pop("sources")
    assert readings[0] == readings[1]


def test_the_fast_inspector_reading_equals_the_json_reading_line_for_line():
    # Given one process's records of two communicators interleaved, a record whose metadata keys
    # come in another order, a damaged record, a record with its time last, and a marker
    from hyperpod_perf.straggler.inspector import _Reader
    from hyperpod_perf.straggler.model import TimingState

    job = Job(late_rank=3, collectives=12)
    world = inspector_lines(job, 0, "v4.2").splitlines()
    other = inspector_lines(job, 0, "v4.2", comm_id="0x1111").splitlines()
    lines = [line for pair in zip(world, other, strict=True) for line in pair]
    record = json.loads(world[1])
    record["metadata"] = dict(reversed(list(record["metadata"].items())))
    lines.append(json.dumps(record, separators=(",", ":")))
    lines.append(world[1][: len(world[1]) // 2])  # cut mid-record
    lines.append(world[1].replace('"dump_timestamp_us":', '"dump_timestamp_us":"x'))
    text = "\n".join(lines).encode() + b"\n"
    # When it is read by the fast path and by json alone
    fast, slow = TimingState(), TimingState()
    reader = _Reader(fast, "a.log")
    reader.buffer(text)
    slow_reader = _Reader(slow, "a.log")
    for line in text.split(b"\n"):
        slow_reader.line(line)
    # Then both hold the same collectives, processes, ranks, counts, window and bad lines
    for attribute in ("collectives", "people", "comm_ranks", "records", "first_us", "last_us"):
        assert getattr(fast, attribute) == getattr(slow, attribute), attribute
    assert {k: (c.collectives, c.ops) for k, c in fast.comms.items()} == {
        k: (c.collectives, c.ops) for k, c in slow.comms.items()
    }
    assert fast.timing_sources == slow.timing_sources
    assert reader.bad == slow_reader.bad == 2
    assert len(fast.comms) == 2 and fast.records == 2 * len(world) // 2 + 1


def test_a_healthy_job_is_an_ok_finding_naming_no_one():
    # Given 16 ranks arriving within 0.3 ms of each other (20 ms transfers)
    (finding,) = straggler(inspector_job(Job()))
    # Then timings were read and no rank is late: OK
    assert finding.severity is OK
    assert finding.evidence["collectives_judged"] == 60
    assert "no rank is late" in finding.summary and "culprit" not in finding.evidence


def test_a_slow_host_is_named_when_its_eight_ranks_take_turns_being_last():
    # Given host index 1's eight ranks all about 5 ms late (which of them is last varies)
    job = Job(late_host=1, seed=11)
    (finding,) = straggler(inspector_job(job))
    assert finding.severity is CONCERN
    assert finding.evidence["culprit"]["hosts"] == ["ip-10-1-0-11"]
    assert finding.evidence["culprit"]["ranks"] == list(range(8, 16))
    assert finding.evidence["straggler"].startswith("host ip-10-1-0-11 (8 processes")


def test_dollars_appear_when_the_hourly_price_is_given():
    job = Job(late_rank=11)
    prices = Thresholds(instance_hour_price_usd={"ml.p5.48xlarge": 55.04})
    (with_price,) = straggler(inspector_job(job), instance_type="ml.p5.48xlarge", thresholds=prices)
    assert with_price.evidence["usd"] == round(with_price.evidence["gpu_hours_lost"] / 8 * 55.04, 2)
    assert with_price.evidence["price_source"] == "operator-supplied (thresholds instance_hour_price_usd)"
    (without,) = straggler(inspector_job(job), instance_type="ml.p5.48xlarge")
    assert without.evidence["usd"] is None and "instance_hour_price_usd" in without.evidence["price_note"]


def test_the_straggler_joins_its_nodes_own_findings():
    job = Job(late_rank=11)
    (finding,) = straggler(inspector_job(job))
    node = ClusterNode(
        instance_id="i-0bbb0000000000011", group="w", hostname="ip-10-1-0-11", private_ip="10.1.0.11"
    )
    throttle = Finding(
        node=node.instance_id,
        check="gpu.thermal_throttle",
        severity=CONCERN,
        section=RunbookSection.GPU,
        summary="GPU 3 at 1155 MHz (55 % of max) while 84 C",
    )
    (joined,) = cross_reference([finding], [node], [throttle])
    assert joined.summary.endswith(
        "[node i-0bbb0000000000011 also: gpu.thermal_throttle: GPU 3 at 1155 MHz (55 % of max) while 84 C]"
    )


# --- flight recorder ---------------------------------------------------------------------------


def fr_logs(job: Job, encode, **dump_kwargs) -> list[tuple[str, Log]]:
    logs = [("job/stdout.log", Log(nccl_init_lines(job).encode()))]
    for rank in range(job.ranks):
        logs.append((f"job/fr/nccl_trace_rank_{rank}", Log(encode(fr_dump(job, rank, **dump_kwargs)))))
    return logs


@pytest.mark.parametrize(
    "encode",
    [pickle_like_torch, lambda d: pickle.dumps(d), fr_json],
    ids=["torch-pickler", "python-pickle", "json"],
)
def test_timed_flight_recorder_dumps_name_the_late_rank_and_its_host_from_the_nccl_lines(encode):
    # Given TORCH_NCCL_ENABLE_TIMING=1 dumps of 16 ranks (rank 6 late) and the job's NCCL init lines
    job = Job(late_rank=6)
    (finding,) = straggler(fr_logs(job, encode))
    # Then rank 6 is named, its host taken from NCCL's `Init COMPLETE` line for that rank
    assert finding.severity is CONCERN
    assert finding.evidence["straggler"] == "rank 6, host ip-10-1-0-10"
    assert finding.evidence["culprit"]["ranks"] == [6]
    total_us, _ = expected_wait_us(job, 6)
    assert finding.evidence["gpu_hours_lost"] == pytest.approx(total_us / 3.6e9, rel=0.001)


def test_the_torch_style_pickle_really_uses_torchs_globals_and_loads_to_plain_data():
    dump = fr_dump(Job(ranks=2, collectives=2), 0)
    data = pickle_like_torch(dump)
    assert b"ctorch.jit._pickle\nrestore_type_tag\n" in data and data[:2] == b"\x80\x02"
    loaded = load_dump(data)
    assert loaded["entries"][1]["collective_seq_id"] == 2
    assert loaded["entries"][0]["input_sizes"] == [[1024, 1024]]
    assert loaded["pg_config"]["0"]["desc"] == "default_pg"


def test_a_hang_names_the_rank_that_never_reached_the_collective():
    # Given rank 5 stopped after collective 40 while the other 15 wait in collective 41
    job = Job(collectives=41)
    logs = [("job/stdout.log", Log(nccl_init_lines(job).encode()))]
    for rank in range(job.ranks):
        dump = (
            fr_dump(job, rank, timed=False, stop_at=40)
            if rank == 5
            else fr_dump(job, rank, timed=False, waiting_at=41)
        )
        logs.append((f"job/fr/nccl_trace_rank_{rank}", Log(pickle_like_torch(dump))))
    findings = straggler(logs)
    (hang,) = [f for f in findings if f.summary.startswith("hang")]
    assert hang.severity is CONCERN
    assert hang.summary.startswith(
        "hang: rank 5 (ip-10-1-0-10) never reached collective #41 (nccl:all_reduce)"
    )
    assert hang.evidence["behind"] == {"5": 40} and len(hang.evidence["waiting"]) == 15
    # and the dumps carried no duration_ms: said so
    (untimed,) = [f for f in findings if "duration_ms" in f.summary]
    assert untimed.severity is INFO and untimed.evidence["dumps_without_duration"] == 16


class _Payload:
    """What an attacker would put in a dump: unpickling it runs a shell command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_pickle_is_refused_and_never_runs(tmp_path):
    # Given a "dump" whose unpickling would run `touch <marker>` (a __reduce__ payload)
    marker = tmp_path / "pwned"
    data = pickle.dumps({"version": "2.4", "entries": [_Payload(marker)]})
    assert b"system" in data
    # When it is read as a flight-recorder dump among the job's logs
    logs = [("job/fr/nccl_trace_rank_0", Log(data))]
    findings = evaluate(scan_logs(logs))
    # Then nothing ran, and the refusal is a CONCERN naming the file and the global it wanted
    assert not marker.exists()
    (refused,) = [f for f in findings if f.evidence.get("refused")]
    assert refused.severity is CONCERN and refused.check == "nccl.joblog_coverage"
    assert "job/fr/nccl_trace_rank_0" in refused.summary and "system" in refused.summary
    with pytest.raises(UnsafeDump):
        load_dump(data)


@pytest.mark.parametrize(
    "payload",
    [
        EVAL_PICKLE,  # GLOBAL eval + REDUCE
        # STACK_GLOBAL os.getcwd, then REDUCE
        b"\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06getcwd\x94\x93\x94)R\x94.",
        b"\x80\x02X\x01\x00\x00\x00aq\x00Q.",  # BINPERSID: a persistent id (tensor storage)
        b"\x80\x02\x82\x01.",  # EXT1: an extension-registry code
    ],
    ids=["global-eval", "stack-global-os", "persistent-id", "extension-code"],
)
def test_every_way_a_pickle_reaches_code_is_refused(payload):
    with pytest.raises((UnsafeDump, ValueError)):
        load_dump(payload)
    with pytest.raises(Exception):  # noqa: B017 - the restricted reader itself refuses
        RestrictedUnpickler(__import__("io").BytesIO(payload)).load()


def test_a_corrupt_dump_is_reported_not_raised():
    logs = [("job/fr/nccl_trace_rank_3", Log(b"\x80\x02}q\x00(X\x01\x00"))]
    findings = evaluate(scan_logs(logs))
    (note,) = [f for f in findings if f.check == "nccl.joblog_coverage" and "timing file" in f.summary]
    assert note.severity is INFO and "not a readable pickle" in note.summary


# --- trainer lines ---------------------------------------------------------------------------


def test_megatron_timers_for_every_rank_name_the_slow_rank_and_the_iteration_cost():
    # Given `--timing-log-option all` blocks where rank 13's compute takes 230 ms instead of 180 ms,
    # and the last rank's iteration lines (250 ms per iteration, iterations 100..500)
    job = Job()
    text = ""
    for iteration in range(100, 600, 100):
        text += (
            f" [2025-06-02 10:00:00.000000] iteration {iteration:8d}/  500000 | consumed samples: "
            f"{iteration * 512:12d} | elapsed time per iteration (ms): 250.0 | learning rate: 3.0E-04 |\n"
        )
        text += megatron_timers_block(job, {13: 230.0})
    (finding,) = straggler([("train.log", Log((nccl_init_lines(job) + text).encode()))])
    assert finding.severity is CONCERN
    assert finding.evidence["straggler"] == "rank 13, host ip-10-1-0-11"
    assert finding.evidence["excess_ms_per_iteration"] == pytest.approx(50.0)
    assert finding.evidence["share_of_time_lost"] == pytest.approx(50.0 / 250.0)
    # 50 ms x 15 waiting ranks x 400 iterations
    assert finding.evidence["gpu_hours_lost"] == pytest.approx(50.0 * 15 * 400 / 3.6e6, rel=1e-3)


def test_megatron_straggler_detector_lines_name_the_max_rank_as_an_upper_bound():
    line = (
        " [2025-06-02 10:00:{s:02d}] | MnRtt/Rnk: 3478.91ms/0 | MxRtt/Rnk: 3980.43ms/3 | "
        "MnPwr/Rnk: 601000.00mW/4 | MxPwr/Rnk: 698000.00mW/0 | MnTmp/Rnk: 41.00C/6 | "
        "MxTmp/Rnk: 64.00C/3 | MnUtl/Rnk: 97.00%/1 | "
        "MxUtl/Rnk: 100.00%/0 | MnClk/Rnk: 1755.00MHz/3 | MxClk/Rnk: 1980.00MHz/0 | MnDRtt/Rnk: 0.95ms/2 | "
        "MxDRtt/Rnk: 14.55ms/7 | MnEtpt/Rnk: 380.10TF/3 | MxEtpt/Rnk: 401.23TF/0\n"
    )
    text = "".join(line.format(s=s) for s in range(5))
    (finding,) = straggler([("train.log", Log(text.encode()))])
    assert finding.evidence["straggler"] == "rank 3" and finding.evidence["exact"] is False
    assert "at most 501.5 ms per iteration" in finding.summary


def test_nvidia_resiliency_ext_warning_and_scores_name_the_rank_and_node():
    text = (
        "[NeMo W 2025-06-02 10:00:00 straggler_det_callback:125] STRAGGLER DETECTION WARNING: Some GPUs "
        "have worse relative performance. Affected ranks: {StragglerId(rank=3, node='node-1')}\n"
        "[NeMo I 2025-06-02 10:00:00 straggler_det_callback:162] \n"
        "GPU relative performance:\n"
        " Worst performing 2/16 ranks:\n"
        "  Rank=3 Node=node-1 Score=0.62\n"
        "  Rank=9 Node=node-2 Score=0.97\n"
        " Best performing 2/16 ranks:\n"
        "  Rank=0 Node=node-0 Score=1.00\n"
        "  Rank=1 Node=node-0 Score=0.99\n"
    )
    (finding,) = straggler([("train.log", Log(text.encode()))])
    assert finding.severity is CONCERN
    assert finding.evidence["ranks"] == [3] and finding.evidence["nodes"] == {"3": "node-1"}
    assert finding.evidence["scores"] == {"3": 0.62}
    assert finding.evidence["culprit"]["hosts"] == ["node-1"]


def test_iteration_lines_alone_say_that_no_per_rank_timing_was_logged():
    text = "".join(
        f" [2025-06-02 10:00:00.000000] iteration {i:8d}/  500000 | consumed samples: {i:12d} | "
        "elapsed time per iteration (ms): 3412.5 | global batch size:  1024 |\n"
        for i in range(10, 60, 10)
    )
    (finding,) = straggler([("train.log", Log(text.encode()))])
    assert finding.severity is INFO and finding.evidence["median_step_ms"] == 3412.5


def test_no_timing_source_gives_no_straggler_finding():
    assert straggler([("train.log", Log(b"hello\nworld\n"))]) == []


def test_parallel_parts_merge_to_the_same_finding():
    # Given the job's logs scanned in two halves (as the CLI's workers and the Distributed Map do)
    job = Job(late_rank=11)
    logs = inspector_job(job)
    whole = straggler(logs)[0].evidence
    left, right = scan_logs(logs[:7]), scan_logs(logs[7:])
    merged = next(f for f in evaluate(left.merge(right)) if f.check == "nccl.straggler").evidence
    for evidence in (whole, merged):
        evidence.pop("sources")
    assert merged == whole


def test_a_real_inspector_v4_record_in_another_key_order_is_read():
    # the DataDog agent's test payload, "copied verbatim from the NCCL Inspector dump" (SOURCES.md):
    # metadata keys in another order than the plugin's README shows, read by the json path
    path = Path(__file__).parents[2] / "fixtures" / "real" / "timings" / "inspector-datadog-v4.0-record.jsonl"
    scan = scan_logs([(path.name, Log(path.read_bytes()))])
    state = scan.timings
    assert state.records == 1 and state.people[0].host == "nanogpt-nccl-test-worker-0"
    assert state.people[0].pid == "48"
    (((key, seq), agg),) = state.collectives.items()
    assert key == ("inspector", "0xad56c683b0c4ef") and seq == 8995 and agg[2] == 5663.0
    assert state.comms[key].n_ranks == 3


def test_inspector_readme_examples_are_read(tmp_path):
    path = (
        Path(__file__).parents[2] / "fixtures" / "real" / "timings" / "inspector-nccl-readme-examples.jsonl"
    )
    scan = scan_logs([(path.name, Log(path.read_bytes()))])
    seqs = sorted(seq for (_key, seq) in scan.timings.collectives)
    assert seqs == [129, 1231, 1407]
    assert json.loads(path.read_text().splitlines()[0])["metadata"]["inspector_output_format_version"]


def test_cli_names_the_straggler_with_its_cost_in_dollars(tmp_path, capsys):
    from hyperpod_perf.cli import main

    job = Job(late_rank=11)
    for name, log in inspector_job(job):
        (tmp_path / Path(name).name).write_bytes(log.data)
    code = main(
        [
            "logs",
            "analyze",
            str(tmp_path),
            "--instance-type",
            "ml.p5.48xlarge",
            "--price-per-hour",
            "55.04",
            "--format",
            "json",
        ]
    )
    (finding,) = [
        f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "nccl.straggler"
    ]
    assert code == 1 and finding["severity"] == "CONCERN"
    assert finding["evidence"]["instance_hour_price_usd"] == 55.04
    assert finding["summary"].endswith(f"GPU-hours (${finding['evidence']['usd']:,.2f}) lost")
    assert main(["logs", "analyze", str(tmp_path), "--price-per-hour", "55"]) == 2
    assert "--price-per-hour needs --instance-type" in capsys.readouterr().err


def test_cli_does_not_cut_a_large_inspector_file_into_parts(tmp_path, monkeypatch):
    import hyperpod_perf.cli.logs as cli_logs

    path = tmp_path / "ip-10-1-0-10-pid4000.log"
    path.write_text(inspector_lines(Job(), 0, "v4.3"))
    monkeypatch.setattr(cli_logs, "PART_BYTES", 1024)
    assert [[name for name, _ in part] for part in cli_logs._parts([path])] == [[str(path)]]


@pytest.mark.parametrize("collector_on", [True, False])
def test_reading_a_dump_leaves_the_garbage_collector_as_it_found_it(collector_on: bool):
    # Given the collector on (or off, as a caller may have it), and dumps that load, are refused
    # as unsafe, are corrupt pickles or corrupt JSON (the loader pauses it while it builds a dump)
    import gc

    job = Job(ranks=2, collectives=3)
    dumps = [
        pickle_like_torch(fr_dump(job, 0)),
        EVAL_PICKLE,
        CUT_PICKLE,
        b'{"comm_lib_version": ',
    ]
    was = gc.isenabled()
    try:
        (gc.enable if collector_on else gc.disable)()
        for data in dumps:
            # When each is loaded
            try:
                loaded = load_dump(data)
            except (UnsafeDump, ValueError):
                loaded = None
            # Then the collector is on exactly when it was before
            assert gc.isenabled() is collector_on
        assert loaded is None
        assert len(load_dump(dumps[0])["entries"]) == 3
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("collector_on", [True, False])
def test_a_dump_is_walked_with_the_collector_paused_and_left_as_found(collector_on: bool):
    # Given the collector on (or off), a timed dump, one refused as unsafe and a corrupt one,
    # and a state that notes whether the collector runs while the dump's durations are added
    import gc

    from hyperpod_perf.straggler.flight_recorder import read_dump
    from hyperpod_perf.straggler.model import TimingState

    collecting_while_added: list[bool] = []

    class Watched(TimingState):
        def add_all(self, records, who, scale):
            collecting_while_added.append(gc.isenabled())
            super().add_all(records, who, scale)

    job = Job(ranks=2, collectives=3)
    dumps = {
        "nccl_trace_rank_0": pickle_like_torch(fr_dump(job, 0)),
        "nccl_trace_rank_1": EVAL_PICKLE,
        "nccl_trace_rank_2": CUT_PICKLE,
    }
    state = Watched()
    was = gc.isenabled()
    try:
        (gc.enable if collector_on else gc.disable)()
        for name, data in dumps.items():
            # When each is read into the state
            read_dump(data, name, state)
            # Then the collector is on afterwards exactly when it was before
            assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was else gc.disable)()
    # and it was off while the timed dump's durations were added, which were all read
    assert collecting_while_added == [False]
    assert state.records == 3
    assert len(state.problems) == 2


def test_a_dumps_durations_added_at_once_aggregate_as_one_by_one():
    # Given one process's durations of several collectives of two communicators, ties and a
    # state whose collective cap is reached half-way
    from hyperpod_perf.straggler import model

    a, b = ("flight recorder", "0"), ("flight recorder", "1")
    records = [(a, 1, 20.5), (a, 2, 21.0), (b, 1, 19.0), (a, 1, 20.5), (a, 1, 18.0), (b, 2, 30.0)]
    one_by_one, at_once = model.TimingState(), model.TimingState()
    for state in (one_by_one, at_once):
        state.add(a, 1, 0, 25_000.0)  # another process's earlier record of collective (a, 1)
    for key, seq, ms in records:
        one_by_one.add(key, seq, 3, ms * 1000.0)
    # When they are added at once
    at_once.add_all(records, 3, 1000.0)
    # Then the aggregates (count, sum, shortest and who, longest) are the same
    assert at_once.collectives == one_by_one.collectives
    assert at_once.collectives[(a, 1)] == [4, 25_000.0 + 20_500.0 * 2 + 18_000.0, 18_000.0, 3, 25_000.0]


def test_durations_past_the_collective_cap_are_dropped_and_counted_at_once_as_one_by_one(monkeypatch):
    from hyperpod_perf.straggler import model

    monkeypatch.setattr(model, "MAX_COLLECTIVES", 2)
    key = ("flight recorder", "0")
    records = [(key, seq, 1.0) for seq in (1, 2, 3, 1, 4)]
    one_by_one, at_once = model.TimingState(), model.TimingState()
    for k, seq, ms in records:
        one_by_one.add(k, seq, 0, ms * 1000.0)
    at_once.add_all(records, 0, 1000.0)
    assert sorted(at_once.collectives) == [(key, 1), (key, 2)]
    assert at_once.collectives == one_by_one.collectives
    assert at_once.dropped == one_by_one.dropped == {"collectives": 2}
