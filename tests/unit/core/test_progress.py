"""The CLI's progress line: drawn on a terminal only, rewritten in place, rate-limited, cleared."""

from __future__ import annotations

import io
import os
import threading

from hyperpod_perf.cli.progress import ERASE_LINE, Progress, wanted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_each_update_rewrites_the_one_line_and_the_end_erases_it() -> None:
    # Given a terminal and a clock that moves on between updates
    stream, clock = Terminal(), Clock()
    with Progress(stream, clock=clock) as progress:
        progress.show("describing ml-cluster")
        clock.now += 1
        progress.show("collecting 1/2")
    # Then every update went back to the line's start and erased it; the end erased it once more
    assert stream.getvalue() == (f"{ERASE_LINE}describing ml-cluster{ERASE_LINE}collecting 1/2{ERASE_LINE}")
    assert "\n" not in stream.getvalue()


def test_off_a_terminal_nothing_is_drawn_but_messages_still_are() -> None:
    # Given a pipe (not a terminal)
    pipe = io.StringIO()
    with Progress(pipe) as progress:
        progress.show("collecting 1/2", force=True)
        progress.counter("reading", 3)("a.log")
        progress.note("a story line")
        # a message for stderr is printed whatever stderr is
        progress.say("report written to out/report.json")
    assert pipe.getvalue() == "report written to out/report.json\n"


def test_updates_closer_than_the_interval_are_skipped_but_a_counters_last_tick_is_drawn() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress(stream, clock=clock, min_interval_s=0.1)
    tick = progress.counter("collecting", 3)
    tick("i-1")  # drawn
    tick("i-2")  # the same instant: skipped
    tick("i-3")  # the last: always drawn
    assert stream.getvalue() == f"{ERASE_LINE}collecting 1/3: i-1{ERASE_LINE}collecting 3/3: i-3"


def test_a_note_stays_on_screen_and_a_message_lands_on_its_own_line() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress(stream, clock=clock)
    progress.show("step 1")
    progress.note("execution started")
    progress.show("step 2")  # drawn at once: a note resets the interval
    progress.say("hyperpod-perf: no AWS access")
    progress.clear()
    progress.clear()  # nothing shown: nothing written
    assert stream.getvalue() == (
        f"{ERASE_LINE}step 1{ERASE_LINE}execution started\n{ERASE_LINE}step 2"
        f"{ERASE_LINE}hyperpod-perf: no AWS access\n"
    )


def test_shown_text_loses_control_characters_and_fits_the_width(monkeypatch) -> None:
    # Given a node name carrying an escape sequence and a newline, on a 20-column terminal
    stream = Terminal()
    monkeypatch.setattr(stream, "fileno", lambda: 2, raising=False)
    monkeypatch.setattr(os, "get_terminal_size", lambda fd: os.terminal_size((20, 24)))
    Progress(stream).show("node \x1b[2Ji-1\nand more text than fits")
    # Then the escape is gone, the line is one line, cut to 19 columns (no wrap to rewrite)
    drawn = stream.getvalue().removeprefix(ERASE_LINE)
    assert drawn == "node i-1 and more t"
    assert len(drawn) == 19


def test_a_counter_counts_every_tick_from_many_threads() -> None:
    stream = Terminal()
    progress = Progress(stream, min_interval_s=0)
    tick = progress.counter("collecting", 64)
    threads = [threading.Thread(target=tick, args=(f"i-{n}",)) for n in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stream.getvalue().count(ERASE_LINE) == 64
    assert "collecting 64/64: " in stream.getvalue()


def test_wanted_only_on_a_terminal_that_can_erase() -> None:
    assert wanted(Terminal(), {"TERM": "xterm-256color"})
    assert not wanted(Terminal(), {"TERM": "dumb"})
    assert not wanted(io.StringIO(), {})
