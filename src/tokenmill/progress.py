"""Progress of a long step: a bar on a terminal, a log line every few seconds elsewhere.

A step that knows its size (bytes of input, say) calls :meth:`Progress.update` as it goes. On a
terminal (stderr is a TTY) that drives a tqdm bar with the count of items done::

    pack raw/web.jsonl:  42%|█████▉        | 41.9M/100M [00:01<00:02, 38.2MB/s, 9,071 documents]

A terminal that reports a size of 0 (``stty size`` says ``0 0``: a pty that nobody sized, as in many
CI runners and containers) gets a bar 80 columns wide (or ``$COLUMNS``): tqdm would draw nothing
there. Elsewhere — a Snakemake job's log file — it writes one line at most every ``interval``
seconds::

    pack raw/web.jsonl: 41.9/100.0 MB (42 %), 9,071 documents, 38.2 MB/s, ETA 0:00:02

(``ETA unknown`` while nothing is done: a remote read whose first bytes have not come, say), and nothing
for a step that ends sooner. A job whose log takes its stderr may also name, in
``TOKENMILL_CONSOLE_FD``, a file descriptor it opened on its own console (the workflow's pack rule runs
``(... TOKENMILL_CONSOLE_FD=3 tokenmill pack ...) 3>&2 > log 2>&1``, so fd 3 is the stderr Snakemake gave
the job): the same line then goes there too, at most every ``TOKENMILL_CONSOLE_SECONDS`` (10) seconds, so
that a long pack shows a line on the console as Megatron's ``Processed N documents`` does while its log
keeps every line. Updates arrive when work completes (a batch of documents),
which may be rarer than the interval (a slow tokenizer, a huge document): a timer thread then writes
the line anyway, so a log never falls silent for longer than the interval. Cost: one clock read per
update, one sleeping thread per step.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import timedelta
from typing import TextIO

__all__ = ["Progress"]

# Seconds between log lines; TOKENMILL_PROGRESS_SECONDS changes it (e.g. 60 for a cluster's logs).
_INTERVAL_SECONDS = 5.0
# Seconds between the console's lines (TOKENMILL_CONSOLE_FD), at least the log's; TOKENMILL_CONSOLE_SECONDS changes it.
_CONSOLE_SECONDS = 10.0
# The bar's size on a terminal that reports 0 columns or rows.
_FALLBACK_COLUMNS, _FALLBACK_ROWS = 80, 24


def _console_fd() -> int | None:
    """The open file descriptor that ``TOKENMILL_CONSOLE_FD`` names, or None (unset, not a number, not open)."""
    value = os.environ.get("TOKENMILL_CONSOLE_FD", "")
    if not value.isdigit():
        return None
    try:
        os.fstat(int(value))
    except OSError:
        return None
    return int(value)


def _bar_size(stream: TextIO) -> tuple[int, int] | None:
    """Columns and rows to draw a bar in on ``stream``'s terminal: None to follow its size as it
    changes, or a fixed size where it reports 0 columns or rows ($COLUMNS, else 80; $LINES, else 24).
    tqdm draws nothing at 0 columns, nor at 0 rows (it reserves the last row and keeps none)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no file descriptor, or not a terminal after all
        size = os.terminal_size((0, 0))
    if size.columns > 0 and size.lines > 0:
        return None

    def fallback(reported: int, variable: str, default: int) -> int:
        value = os.environ.get(variable, "")
        return reported or (int(value) if value.isdigit() and int(value) > 0 else default)

    return fallback(size.columns, "COLUMNS", _FALLBACK_COLUMNS), fallback(size.lines, "LINES", _FALLBACK_ROWS)


class Progress:
    """Reports ``done / total`` bytes of a step (plus a count of items, e.g. documents).

    Args:
        label: what is being done, e.g. ``"pack raw/web.jsonl"``.
        total_bytes: the size of the whole step.
        stream: where to report (default stderr); a bar is drawn only if it is a terminal.
        interval: seconds between log lines when it is not (default 5, or TOKENMILL_PROGRESS_SECONDS).
        item_name: what the counted items are (``"documents"``).
    """

    def __init__(self, label: str, total_bytes: int, stream: TextIO | None = None,
                 interval: float | None = None, item_name: str = "documents"):
        self.label, self.total_bytes, self.item_name = label, max(total_bytes, 1), item_name
        self.stream = stream or sys.stderr
        self.interval = interval if interval is not None else float(
            os.environ.get("TOKENMILL_PROGRESS_SECONDS", _INTERVAL_SECONDS))
        self.done_bytes, self.items = 0, 0
        self.started = self.last_report = time.monotonic()
        self._bar, self._timer, self._console = None, None, None
        self._lock, self._closed = threading.Lock(), threading.Event()
        if getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm  # only on a terminal

            columns, rows = _bar_size(self.stream) or (None, None)
            self._bar = tqdm(total=total_bytes, desc=label, unit="B", unit_scale=True, unit_divisor=1000,
                             file=self.stream, leave=False, dynamic_ncols=columns is None, ncols=columns, nrows=rows)
            return
        self._console = _console_fd()
        self.console_interval = max(self.interval, float(os.environ.get("TOKENMILL_CONSOLE_SECONDS", _CONSOLE_SECONDS)))
        self.last_console = self.started
        if self.interval > 0:
            self._timer = threading.Thread(target=self._report_while_silent, name="progress", daemon=True)
            self._timer.start()

    def update(self, done_bytes: int, items: int = 0) -> None:
        """Add ``done_bytes`` and ``items`` to what is done, and report if it is time (a bar shows
        both, a log line both once items were counted)."""
        with self._lock:
            self.done_bytes += done_bytes
            self.items += items
        if self._bar is not None:
            if items:  # shown at the bar's next refresh (tqdm redraws at most ~10 times a second)
                self._bar.set_postfix_str(f"{self.items:,} {self.item_name}", refresh=False)
            self._bar.update(done_bytes)
            return
        self._report_if_due()

    def _report_if_due(self) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self.last_report >= self.interval and not self._closed.is_set():
                self.last_report = now
                line = self.line(now)
                self.stream.write(line + "\n")
                self.stream.flush()
                if self._console is not None and now - self.last_console >= self.console_interval:
                    self.last_console = now
                    try:
                        os.write(self._console, (line + "\n").encode())
                    except OSError:  # the console went away (a closed pipe): the log still has every line
                        self._console = None

    def _report_while_silent(self) -> None:
        """The timer: a line whenever no update has written one for ``interval`` seconds."""
        while not self._closed.wait(max(self.interval - (time.monotonic() - self.last_report), 0.01)):
            self._report_if_due()

    def line(self, now: float | None = None) -> str:
        """The progress as one line of text."""
        elapsed = max((now or time.monotonic()) - self.started, 1e-9)
        rate = self.done_bytes / elapsed
        # Nothing done yet (a first read still waiting for its bytes): no rate to tell the time left by.
        eta = timedelta(seconds=round((self.total_bytes - self.done_bytes) / rate)) if rate > 0 else "unknown"
        items = f", {self.items:,} {self.item_name}" if self.items else ""
        return (f"{self.label}: {self.done_bytes / 1e6:.1f}/{self.total_bytes / 1e6:.1f} MB "
                f"({100 * self.done_bytes / self.total_bytes:.0f} %){items}, {rate / 1e6:.1f} MB/s, ETA {eta}")

    def close(self) -> None:
        """End the step: stop the timer and clear the bar (a finished step leaves no bar behind)."""
        self._closed.set()
        if self._timer is not None:
            self._timer.join()
            self._timer = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
