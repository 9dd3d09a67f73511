"""One progress line on stderr for long work: on a terminal only, rewritten in place, cleared at the end.

Why: `diagnose` of 64 nodes takes about 35 s and of 1,024 nodes minutes; that long a silence reads
as a hang. Why only on a terminal: a pipe, a log file or `-q` gets the result, not the
play-by-play (kubectl and the AWS CLI do the same), so a script reading stderr sees the tool's
messages alone. Why one line: it is rewritten with a carriage return and erased with EL
(ECMA-48 "Erase in Line", `CSI K`), so when the command ends the scrollback holds the result and
nothing of the progress. Plain standard library: the CLI adds no dependency.

Every command uses it the same way::

    with Progress() as progress:           # stderr, if it is a terminal (not with -q: main()
        progress.show("describing ...")     #   silences stderr, which then is no terminal)
        tick = progress.counter("collecting", len(nodes))
        ...                                 # tick(node) from any thread as each node finishes
    # the line is gone here, even after an exception

Node and file names shown are stripped of control characters (`domain.escaping.one_line`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from hyperpod_perf.domain import escaping

#: Back to the line's start and erase it (CR, then ECMA-48 EL: CSI 0 K, "erase to the end").
ERASE_LINE = "\r\x1b[K"
#: Redraws at most this often: a counter ticked 1,024 times in a second costs ten writes.
MIN_INTERVAL_S = 0.1
#: When the terminal's width cannot be read.
FALLBACK_COLUMNS = 80


def wanted(stream: object, environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """On a terminal that understands the erase sequence (not TERM=dumb)."""
    if environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or FALLBACK_COLUMNS
    except (AttributeError, OSError, ValueError):
        return FALLBACK_COLUMNS


class Progress:
    """The progress line of one command. Disabled (every call a no-op) off a terminal."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        min_interval_s: float = MIN_INTERVAL_S,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self._stream) if enabled is None else enabled
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._shown = False
        self._last = float("-inf")

    def show(self, text: str, *, force: bool = False) -> None:
        """Replace the line with `text` (cut to the terminal's width: a wrapped line could not be
        rewritten). Skipped when the last redraw was under MIN_INTERVAL_S ago, unless `force`."""
        if not self.enabled:
            return
        with self._lock:
            now = self._clock()
            if not force and now - self._last < self._min_interval_s:
                return
            self._last = now
            line = escaping.one_line(text)[: max(1, _columns(self._stream) - 1)]
            self._write(ERASE_LINE + line)
            self._shown = True

    def counter(self, what: str, total: int | None = None) -> Callable[[str], None]:
        """A tick function, safe from several threads: each call counts one item done and shows
        `what 3/64: <detail>` (`what 3: <detail>` without a total); the last one is always drawn."""
        done = 0
        lock = threading.Lock()

        def tick(detail: str = "") -> None:
            nonlocal done
            with lock:
                done += 1
                count = done
            of = f"{count}/{total}" if total else str(count)
            self.show(f"{what} {of}" + (f": {detail}" if detail else ""), force=count == total)

        return tick

    def note(self, text: str) -> None:
        """A line that stays (a step of a story worth keeping on screen): the progress line is
        erased first, and the next `show` draws below it."""
        if not self.enabled:
            return
        with self._lock:
            self._write((ERASE_LINE if self._shown else "") + escaping.one_line(text) + "\n")
            self._shown = False
            self._last = float("-inf")

    def say(self, text: str) -> None:
        """A message for stderr whatever it is (a pipe too): the progress line, if any, is erased
        first so the message does not land in the middle of it."""
        with self._lock:
            erase = ERASE_LINE if self.enabled and self._shown else ""
            self._shown = False
            self._last = float("-inf")
            try:
                self._stream.write(erase + text + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                self.enabled = False

    def clear(self) -> None:
        """Erase the line (nothing is written when none is shown)."""
        if not self.enabled:
            return
        with self._lock:
            if self._shown:
                self._write(ERASE_LINE)
                self._shown = False

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on without it
            self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.clear()
