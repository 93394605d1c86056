"""Progress of long steps: log lines on a non-terminal, a bar on a terminal."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill, tool_env
from tokenmill import progress as progress_module
from tokenmill.progress import Progress


def test_a_log_line_says_bytes_share_items_rate_and_eta(monkeypatch):
    clock = [100.0]  # start, then two updates 2 s apart
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    with Progress("pack x.jsonl", 100_000_000, stream=out, interval=1.0) as progress:
        clock[0] = 102.0
        progress.update(25_000_000, 1000)
        clock[0] = 104.0
        progress.update(25_000_000, 1500)
    assert out.getvalue().splitlines() == [
        "pack x.jsonl: 25.0/100.0 MB (25 %), 1,000 documents, 12.5 MB/s, ETA 0:00:06",
        "pack x.jsonl: 50.0/100.0 MB (50 %), 2,500 documents, 12.5 MB/s, ETA 0:00:04"]


def test_the_eta_is_unknown_while_nothing_is_done(monkeypatch):
    """A remote read still waiting for its first block (a server that drips) has no rate to tell the time
    left by: its line says so, not "ETA 0:00:00"."""
    clock = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    with Progress("index http://h/a.jsonl", 4_000_000, stream=out, interval=5.0, item_name="lines") as progress:
        clock[0] = 130.0
        assert progress.line() == "index http://h/a.jsonl: 0.0/4.0 MB (0 %), 0.0 MB/s, ETA unknown"
        progress.update(1_000_000, 10)
        assert progress.line() == "index http://h/a.jsonl: 1.0/4.0 MB (25 %), 10 lines, 0.0 MB/s, ETA 0:01:30"


def test_no_line_before_the_interval_has_passed():
    out = io.StringIO()
    with Progress("merge", 10, stream=out, interval=3600) as progress:
        progress.update(10)
    assert out.getvalue() == ""


def test_pack_logs_progress_lines_that_reach_the_whole_file(tmp_path):
    env_seconds = os.environ.get("TOKENMILL_PROGRESS_SECONDS")
    os.environ["TOKENMILL_PROGRESS_SECONDS"] = "0"
    try:
        result = run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--batch-bytes", "500000",
                               "-o", tmp_path / "demo.pbin")
    finally:
        if env_seconds is None:
            del os.environ["TOKENMILL_PROGRESS_SECONDS"]
        else:
            os.environ["TOKENMILL_PROGRESS_SECONDS"] = env_seconds
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"pack {DEMO_JSONL}: ")]
    shares = [int(re.search(r"\((\d+) %\)", line).group(1)) for line in lines]
    documents = [int(re.search(r", ([\d,]+) documents,", line).group(1).replace(",", "")) for line in lines]
    assert len(lines) == 8 and shares == sorted(shares) and shares[-1] == 100
    assert documents[-1] == 2990 and lines[-1].startswith(f"pack {DEMO_JSONL}: 3.6/3.6 MB (100 %)")


def test_on_a_terminal_pack_draws_a_bar(tmp_path):
    text = _screen_of([sys.executable, "-m", "tokenmill.cli", "pack", str(DEMO_JSONL), "--tokenizer", str(GPT2),
                       "--no-eod", "--batch-bytes", "500000", "-o", str(tmp_path / "demo.pbin")], rows=24, columns=120)
    assert re.search(r"pack \S+demo\.jsonl: +\d+%\|", text), text  # tqdm's bar: label, share, |###|
    assert "MB/s, ETA" not in text  # no log lines on a terminal


@pytest.mark.slow
def test_a_step_without_updates_still_logs_every_interval():
    """A batch that takes longer than the interval (a slow tokenizer, a huge document) leaves no silent gap."""
    import time

    out = io.StringIO()
    with Progress("pack slow.jsonl", 100, stream=out, interval=0.2) as progress:
        progress.update(10, 1)
        time.sleep(1.0)  # no update for five intervals
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3  # one per 0.2 s of the 1 s without updates (a loaded machine may skip some)
    assert all(line.startswith("pack slow.jsonl: 0.0/0.0 MB (10 %), 1 documents, ") for line in lines)
    closed = out.getvalue()
    time.sleep(0.5)
    assert out.getvalue() == closed  # nothing after the step is closed


def _screen_of(command: list[str], rows: int, columns: int) -> str:
    """What ``command`` writes to its stderr, a pseudo-terminal that reports ``rows`` x ``columns``."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = tool_env()
    env.pop("COLUMNS", None)  # the terminal's own report decides the width
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=terminal, env=env)
    os.close(terminal)
    screen = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        screen += chunk
    os.close(controller)
    assert process.wait() == 0, screen.decode("utf-8", "replace")
    return screen.decode("utf-8", "replace")


# Ten updates of 100 kB and 250 documents, 0.15 s apart: tqdm redraws at most every 0.1 s, so every
# update after the first is drawn.
_TEN_UPDATES = ("import time\nfrom tokenmill.progress import Progress\n"
                "with Progress('pack x.jsonl', 1_000_000) as progress:\n"
                "    for _ in range(10):\n        progress.update(100_000, 250)\n        time.sleep(0.15)\n")


@pytest.mark.slow
def test_a_terminal_bar_counts_documents():
    text = _screen_of([sys.executable, "-c", _TEN_UPDATES], 24, 120)
    frames = [frame for frame in text.split("\r") if frame.startswith("pack x.jsonl:")]
    assert re.search(r"pack x\.jsonl: +\d+%\|.*\| [\d.]+k?/1\.00M \[.*, 1,250 documents\]", text), text
    assert any(frame.rstrip().endswith("2,250 documents]") for frame in frames), frames


@pytest.mark.slow
def test_a_terminal_of_zero_columns_gets_an_80_column_bar():
    """`stty size` says `0 0` in many CI runners and containers: tqdm alone would draw nothing there."""
    text = _screen_of([sys.executable, "-c", _TEN_UPDATES], 0, 0)
    frames = [frame for frame in text.split("\r") if frame.startswith("pack x.jsonl:")]
    assert len(frames) >= 5, text
    assert all(len(frame.rstrip()) <= 80 for frame in frames) and max(len(frame) for frame in frames) >= 70, frames
    assert any("documents]" in frame for frame in frames), frames


def test_pack_on_a_terminal_of_zero_columns_draws_its_bar(tmp_path):
    text = _screen_of([sys.executable, "-m", "tokenmill.cli", "pack", str(DEMO_JSONL), "--tokenizer", str(GPT2),
                       "--no-eod", "--batch-bytes", "500000", "-o", str(tmp_path / "demo.pbin")], 0, 0)
    assert re.search(r"pack \S+demo\.jsonl: +\d+%\|", text), text
    assert "MB/s, ETA" not in text  # a bar, not log lines


def test_a_console_fd_gets_every_line_that_is_ten_seconds_after_the_last(monkeypatch):
    clock = [0.0]  # updates 5 s apart: the log gets each line, the console every other one
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    read_end, write_end = os.pipe()
    monkeypatch.setenv("TOKENMILL_CONSOLE_FD", str(write_end))
    monkeypatch.delenv("TOKENMILL_CONSOLE_SECONDS", raising=False)
    log = io.StringIO()
    try:
        with Progress("pack x.jsonl", 40_000_000, stream=log, interval=5.0) as progress:
            for _ in range(4):
                clock[0] += 5.0
                progress.update(10_000_000, 100)
        os.close(write_end)
        console = os.read(read_end, 1 << 16).decode().splitlines()
    finally:
        os.close(read_end)
    lines = log.getvalue().splitlines()
    assert len(lines) == 4 and console == [lines[1], lines[3]]
    assert console[0] == "pack x.jsonl: 20.0/40.0 MB (50 %), 200 documents, 2.0 MB/s, ETA 0:00:10"


def test_a_console_fd_that_is_not_open_is_left_alone(monkeypatch):
    read_end, write_end = os.pipe()
    os.close(read_end), os.close(write_end)  # a number that names no open file now
    monkeypatch.setenv("TOKENMILL_CONSOLE_FD", str(write_end))
    log = io.StringIO()
    with Progress("merge", 10, stream=log, interval=0) as progress:
        progress.update(10)
    assert log.getvalue().startswith("merge: 0.0/0.0 MB (100 %)")
