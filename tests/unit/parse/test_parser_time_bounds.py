"""Every parser takes linear time on any line, and the patterns rewritten for it read as before.

Why: the collector caps a node's output at 1 MiB, and a node (broken or hostile) chooses what is
in it. A backtracking pattern that is quadratic on one long line would hold the Lambda until its
timeout (an 80 KB line of blanks took ~290 s in parse_efa_ports before the rewrite).

Two kinds of proof:
- time: every `parse_*` function of `hyperpod_perf.parse` (found by introspection, so a new parser
  is covered without editing this file) handles a 1 MiB line of blanks, of `a` and of digits in
  under a second, plus the hostile shapes that were found quadratic, each at the parser it hit.
  Each run is a forked child with a deadline, so a regression fails instead of hanging the suite.
- meaning: each rewritten pattern agrees with the pattern it replaced (kept below as the
  specification) on every string up to six characters over the characters that matter to it.
"""

from __future__ import annotations

import inspect
import itertools
import multiprocessing
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hyperpod_perf.parse import dmesg, efa, lustre, nccl_tests, nvidia_smi, pcie, procfs

MIB = 1024 * 1024
TIME_LIMIT_S = 1.0
#: Forking a child that holds the test's 1 MiB string, beyond the timed parse itself.
FORK_SLACK_S = 3.0

PARSERS: dict[str, Callable[[str], Any]] = {
    f"{module.__name__.rsplit('.', 1)[1]}.{name}": function
    for module in (dmesg, efa, lustre, nccl_tests, nvidia_smi, pcie, procfs)
    for name, function in inspect.getmembers(module, inspect.isfunction)
    if name.startswith("parse_") and function.__module__ == module.__name__
}

LINES = {
    "blanks": " " * MIB,
    "letters": "a" * MIB,
    "digits": "7" * MIB,
}

#: Inputs that took quadratic (or worse) time before the rewrite, at the parser each one hit.
HOSTILE: list[tuple[str, str, str]] = [
    ("pcie.parse_gpu_pcie", "word, blanks, word in a GPU block", "GPU 00000000:53:00.0\nk" + " " * MIB + "z"),
    (
        "pcie.parse_pcie_aer",
        "counter line: word, blanks, word inside a device block",
        "== 0000:53:00.0 vendor=0x10de\n-- aer_dev_fatal\nk" + " " * MIB + "z",
    ),
    ("efa.parse_efa_ports", "device, blanks, word (UNREADABLE_STATE_RE)", "k" + " " * MIB + "z"),
    ("dmesg.parse_oom", "one long word (OOM_INVOKED_RE)", "a" * MIB),
    ("dmesg.parse_oom", "`Out of memory (` repeated, no `)`", "Out of memory (" * (MIB // 15)),
    (
        "dmesg.parse_gpu_kernel_log",
        "Xid, blanks after the comma",
        "NVRM: Xid (PCI:0000:2a:00): 79, pid=" + " " * MIB + "z",
    ),
    ("dmesg.parse_gpu_kernel_log", "indented continuation lines", "NVRM: Xid\n" + " a\n" * (MIB // 3)),
    ("efa.parse_efa_counters", "`x@` word (PROMPT_RE)", "x@" * (MIB // 2)),
    ("efa.parse_efa_counters", "Prometheus labels: one long name", "node_amazonefa_x{" + "a" * MIB + "} 1"),
    ("efa.parse_fi_info", "field, blanks (FI_FIELD_RE)", "provider: a" + " " * MIB + "z"),
    ("procfs.parse_df", "`x@` word (PROMPT_RE)", "x@" * (MIB // 2)),
    ("procfs.parse_df", "prompt, then colons", "user@host:" + ":" * MIB),
    (
        "lustre.parse_lfs_df",
        "unavailable target, blanks",
        "UUID bytes Used\nfs-OST0000_UUID : a" + " " * MIB + "z",
    ),
    ("nvidia_smi.parse_nvlink_status", "GPU line, blanks (GPU_LINE_RE)", "GPU 0: " + " " * MIB + "z"),
    ("nvidia_smi.parse_nvlink_status", "link value, blanks", "GPU 0: x\n  Link 0: a" + " " * MIB + "z"),
    ("nvidia_smi.parse_nvlink_errors", "link counter, blanks", "GPU 0: x\n  Link 0: c: a" + " " * MIB + "z"),
    (
        # one CSV field stays under the csv module's 128 KiB limit, so the value reaches NUMBER_RE
        "nvidia_smi.parse_gpu_query",
        "number, 100 000 blanks, stray character",
        "0, x, 0000:18:00.0, 1" + " " * 100_000 + "!",
    ),
]


def _parse_in_child(parser: Callable[[str], Any], text: str, connection: Any) -> None:
    started = time.monotonic()
    try:
        parser(text)
        result = "a value"
    except ValueError:
        result = "ValueError"
    except Exception as error:  # reported to the parent, which fails the test with it
        result = f"{type(error).__name__}: {error}"[:200]
    connection.send((time.monotonic() - started, result))


def parse_with_deadline(parser: Callable[[str], Any], text: str, seconds: float) -> tuple[float, str] | None:
    """(elapsed, outcome) of `parser(text)` run in a forked child; None when it missed the deadline."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_parse_in_child, args=(parser, text, sender), daemon=True)
    child.start()
    try:
        return receiver.recv() if receiver.poll(seconds + FORK_SLACK_S) else None
    finally:
        child.kill()
        child.join()


def assert_linear(parser_name: str, text: str, outcome: Callable[[str, str], None], case: str) -> None:
    # When the parser reads it (in a child with a hard deadline)
    result = parse_with_deadline(PARSERS[parser_name], text, TIME_LIMIT_S)

    # Then it finishes within the limit, with a value or a ValueError (the engine's contract)
    assert result is not None, f"{parser_name}: no result within {TIME_LIMIT_S + FORK_SLACK_S} s"
    elapsed, result_kind = result
    assert elapsed < TIME_LIMIT_S, f"{parser_name}: {elapsed:.2f} s on {case}"
    assert result_kind in ("a value", "ValueError"), f"{parser_name}: {result_kind}"
    outcome(f"{parser_name}: {case}", f"{result_kind} in {elapsed:.2f} s")


def test_the_parser_list_is_found_by_introspection():
    # Then it holds every parser the engine's sections use (and so any parser added later)
    assert {
        "efa.parse_efa_ports",
        "dmesg.parse_oom",
        "procfs.parse_df",
        "lustre.parse_lfs_df",
        "nvidia_smi.parse_gpu_query",
        "nccl_tests.parse_nccl_tests",
    } <= set(PARSERS)
    assert all(name in PARSERS for name, _, _ in HOSTILE)


@pytest.mark.parametrize("kind", list(LINES))
@pytest.mark.parametrize("parser_name", list(PARSERS))
def test_every_parser_reads_a_1mib_line_within_a_second(parser_name, kind, outcome):
    # Given one 1 MiB line of blanks, of letters or of digits
    assert_linear(parser_name, LINES[kind] + "\n", outcome, f"1 MiB line of {kind}")


@pytest.mark.parametrize(("parser_name", "case", "text"), HOSTILE, ids=[case for _, case, _ in HOSTILE])
def test_the_shapes_once_quadratic_are_read_within_a_second(parser_name, case, text, outcome):
    # Given a ~1 MiB input of the shape that made this parser's old pattern backtrack
    assert_linear(parser_name, text + "\n", outcome, case)


# --- the rewritten patterns mean what the originals meant ---------------------------------------


def strings(alphabet: list[str] | str, max_len: int = 6, prefixes: tuple[str, ...] = ("",)) -> Iterator[str]:
    """Every string of up to `max_len` pieces of `alphabet`, after each prefix."""
    for prefix in prefixes:
        for length in range(max_len + 1):
            for pieces in itertools.product(alphabet, repeat=length):
                yield prefix + "".join(pieces)


def disagreements(old: Callable[[str], Any], new: Callable[[str], Any], texts: Iterator[str]) -> list[str]:
    return [text for text in texts if old(text) != new(text)][:5]


def groups(pattern: re.Pattern[str], *names: str | int, how: str = "match") -> Callable[[str], Any]:
    def read(text: str) -> tuple[Any, ...] | None:
        match = getattr(pattern, how)(text)
        return None if match is None else tuple(match[name] for name in names)

    return read


#: The patterns as first written (quadratic or worse on long lines): the specification.
ORIGINAL = {
    "efa.PROMPT_RE": re.compile(r"^(\S+@\S+[:~][^$#]*[$#]|\[[^\]]+\][$#]|[$#])\s"),
    "procfs.PROMPT_RE": re.compile(r"^\s*(?:\S+@\S+?:[^$#\s]*\s?[$#]|\[[^\]]+\][$#]|[$#])\s"),
    "efa.UNREADABLE_STATE_RE": re.compile(
        r"^(?P<dev>[A-Za-z0-9_.-]+)\s+(?P<error>.*(?:No such file|Permission denied|Input/output error|"
        r"Invalid argument|cannot|<unreadable>).*)$",
        re.I,
    ),
    "efa.PROM_LABEL_RE": re.compile(r'(?P<key>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>[^"]*)"'),
    "efa.FI_FIELD_RE": re.compile(
        r"^\s*(?P<key>provider|fabric|domain|version|type|protocol):\s*(?P<value>.*?)\s*$"
    ),
    "dmesg.XID_RE": re.compile(
        rf"NVRM: Xid \((?:PCI:)?(?P<pci>{dmesg.PCI_RE})\): (?P<code>\d+)(?:,\s*(?P<rest>.*?))?\s*$"
    ),
    "dmesg.SXID_RE": re.compile(
        rf"(?P<switch>nvidia-nvswitch\d+): SXid \(PCI:(?P<pci>{dmesg.PCI_RE})\): (?P<code>\d+)"
        r"(?:,\s*(?P<severity>Non-fatal|Fatal))?(?:,\s*(?P<rest>.*?))?\s*$"
    ),
    "dmesg.OOM_INVOKED_RE": re.compile(r"(?P<name>\S+) invoked oom-killer"),
    "dmesg.OOM_KILLED_RE": re.compile(
        r"(?P<scope>Memory cgroup )?[Oo]ut of memory(?: \([^)]*\))?: Kill(?:ed)? process (?P<pid>\d+) "
        r"\((?P<name>[^)]*)\)"
    ),
    "lustre.UNAVAILABLE_RE": re.compile(r"^(?P<uuid>\S+_UUID)\s*:\s*(?P<reason>.+?)\s*$"),
    "nvidia_smi.NUMBER_RE": re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:[A-Za-z%]+)?\s*$"),
    "nvidia_smi.GPU_LINE_RE": re.compile(
        r"^GPU (?P<index>\d+): (?P<name>.*?)\s*(?:\(UUID: (?P<uuid>[^)]*)\))?\s*$"
    ),
    "nvidia_smi.LINK_STATUS_RE": re.compile(r"^\s*Link (?P<link>\d+): (?P<value>.+?)\s*$"),
    "nvidia_smi.LINK_COUNTER_RE": re.compile(
        r"^\s*Link (?P<link>\d+): (?P<counter>[^:]+?):\s*(?P<value>\S.*?)\s*$"
    ),
}


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: pattern.match(text) is not None


def _labels(pattern: re.Pattern[str]) -> Callable[[str], list[tuple[str, str]]]:
    return lambda text: [(m["key"], m["value"]) for m in pattern.finditer(text)]


def _old_unreadable_device(text: str) -> str | None:
    match = ORIGINAL["efa.UNREADABLE_STATE_RE"].match(text)
    return None if match is None else match["dev"]


def _old_gpu_header(text: str) -> tuple[int, str, str | None] | None:
    match = ORIGINAL["nvidia_smi.GPU_LINE_RE"].match(text)
    return None if match is None else (int(match["index"]), match["name"], match["uuid"])


def _new_gpu_header(text: str) -> tuple[int, str, str | None] | None:
    header = nvidia_smi._gpu_header(text)
    return None if header is None else (header.index, header.name, header.uuid)


XID = ("pci", "code", "rest")
SXID = ("switch", "pci", "code", "severity", "rest")
EQUIVALENCES: list[tuple[str, Callable[[str], Any], Callable[[str], Any], Callable[[], Iterator[str]]]] = [
    (
        "efa.PROMPT_RE",
        _matches(ORIGINAL["efa.PROMPT_RE"]),
        _matches(efa.PROMPT_RE),
        lambda: strings("a@:~$# ["),
    ),
    (
        "procfs.PROMPT_RE",
        _matches(ORIGINAL["procfs.PROMPT_RE"]),
        _matches(procfs.PROMPT_RE),
        lambda: strings("a@:$# \t"),
    ),
    (
        "efa.UNREADABLE_STATE_RE",
        _old_unreadable_device,
        efa._unreadable_device,
        lambda: strings(["a", " ", "\t", "cannot", "No such file", "\u212a", "-", ":"], 5),
    ),
    (
        "efa.PROM_LABEL_RE",
        _labels(ORIGINAL["efa.PROM_LABEL_RE"]),
        _labels(efa.PROM_LABEL_RE),
        lambda: strings('a9_="= '),
    ),
    (
        "efa.FI_FIELD_RE",
        groups(ORIGINAL["efa.FI_FIELD_RE"], "key", "value"),
        groups(efa.FI_FIELD_RE, "key", "value"),
        lambda: strings("a :\t", 5, ("", "provider:", " type: x")),
    ),
    (
        "dmesg.XID_RE",
        groups(ORIGINAL["dmesg.XID_RE"], *XID, how="search"),
        groups(dmesg.XID_RE, *XID, how="search"),
        lambda: strings("a ,1\t", 5, ("NVRM: Xid (PCI:0000:2a:00): 79", "x NVRM: Xid (0000:2a:00.0): 13, ")),
    ),
    (
        "dmesg.SXID_RE",
        groups(ORIGINAL["dmesg.SXID_RE"], *SXID, how="search"),
        groups(dmesg.SXID_RE, *SXID, how="search"),
        lambda: strings(
            ["a", " ", ",", "Fatal", "Non-fatal", "1"], 5, ("nvidia-nvswitch0: SXid (PCI:0000:2a:00.0): 12",)
        ),
    ),
    (
        "dmesg.OOM_INVOKED_RE",
        groups(ORIGINAL["dmesg.OOM_INVOKED_RE"], "name", how="search"),
        groups(dmesg.OOM_INVOKED_RE, "name", how="search"),
        lambda: strings(["a", " ", "\t", " invoked oom-killer", "invoked"]),
    ),
    (
        "dmesg.OOM_KILLED_RE (names up to the 256-character bound)",
        groups(ORIGINAL["dmesg.OOM_KILLED_RE"], "scope", "pid", "name", how="search"),
        groups(dmesg.OOM_KILLED_RE, "scope", "pid", "name", how="search"),
        lambda: strings(["a", " ", "(", ")", "Out of memory", ": Killed process 1 ", "Memory cgroup "], 5),
    ),
    (
        "lustre.UNAVAILABLE_RE",
        groups(ORIGINAL["lustre.UNAVAILABLE_RE"], "uuid", "reason"),
        groups(lustre.UNAVAILABLE_RE, "uuid", "reason"),
        lambda: strings("a :\t", 6, ("fs-OST0001_UUID", "x_UUID ")),
    ),
    (
        "nvidia_smi.NUMBER_RE",
        groups(ORIGINAL["nvidia_smi.NUMBER_RE"], 1),
        groups(nvidia_smi.NUMBER_RE, 1),
        lambda: strings("1 .W%-\t"),
    ),
    (
        "nvidia_smi.GPU_LINE_RE (now GPU_LINE_RE + _gpu_header)",
        _old_gpu_header,
        _new_gpu_header,
        lambda: strings(["a", " ", "(", ")", "(UUID: ", "\t"], 6, ("GPU 0: ", "GPU 12:")),
    ),
    (
        "nvidia_smi.LINK_STATUS_RE",
        groups(ORIGINAL["nvidia_smi.LINK_STATUS_RE"], "link", "value"),
        groups(nvidia_smi.LINK_STATUS_RE, "link", "value"),
        lambda: strings("a \t:", 6, ("  Link 0: ", "Link 12:")),
    ),
    (
        "nvidia_smi.LINK_COUNTER_RE",
        groups(ORIGINAL["nvidia_smi.LINK_COUNTER_RE"], "link", "counter", "value"),
        groups(nvidia_smi.LINK_COUNTER_RE, "link", "counter", "value"),
        lambda: strings("a \t:1", 6, ("  Link 0: ", "Link 1: Replay Errors")),
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "texts"), EQUIVALENCES, ids=[e[0] for e in EQUIVALENCES])
def test_each_rewritten_pattern_reads_every_short_string_as_the_original(name, old, new, texts, outcome):
    # Given every short string over the characters the pattern cares about
    # When read by the pattern as first written and by its linear-time rewrite
    # Then both match the same strings with the same groups
    assert disagreements(old, new, texts()) == [], name
    outcome(f"{name}: every string up to 6 pieces", "same matches and groups as the original")


def test_realistic_prompts_are_still_recognised_and_data_lines_are_not():
    # Given shell prompts pasted with output, and lines of data that contain `@`, `:` and `$`
    prompts = ["ubuntu@ip-10-1-2-3:~$ df -h", "root@node:/fsx# lfs df", "[root@host dir]# cat x", "$ ls"]
    data = ["user@host:/path/without/prompt", "10.1.0.5@tcp:/fsname /fsx lustre rw 0 0", "a@b:c$d e"]

    # Then both prompt patterns skip the prompts and keep the data
    for pattern in (efa.PROMPT_RE, procfs.PROMPT_RE):
        assert [bool(pattern.match(line)) for line in prompts] == [True] * 4
        assert [bool(pattern.match(line)) for line in data] == [False] * 3
    # ... and the efa form also takes a path with blanks before the prompt sign, as it always did
    assert efa.PROMPT_RE.match("user@host:~/my dir$ fi_info -p efa")
    assert not procfs.PROMPT_RE.match("user@host:~/my dir$ df")


def test_oom_kill_names_are_read_up_to_the_bound_and_longer_ones_are_kept_as_mentions():
    # Given a kill record naming a 15-character task (the kernel's limit) and one naming 300 characters
    short = dmesg.parse_oom("Out of memory: Killed process 2481 (pt_main_thread1) total-vm:8kB\n")
    long = dmesg.parse_oom("Out of memory: Killed process 2481 (" + "x" * 300 + ") total-vm:8kB\n")

    # Then the first is a KILLED event with its task; the second, beyond what a kernel prints, is
    # still an OOM event (a mention), not dropped
    assert [(e.kind, e.pid, e.process) for e in short] == [(dmesg.OomKind.KILLED, 2481, "pt_main_thread1")]
    assert [(e.kind, e.pid, e.process) for e in long] == [(dmesg.OomKind.OTHER, None, None)]
