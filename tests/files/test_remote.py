"""The schemes' shared interface (tokenmill.files.remote), against an in-memory scheme whose connections drop
where the test says: worked examples, then properties (any seeks and reads, any drops, give the object's bytes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.files import remote
from tokenmill.files.remote import (ATTEMPTS, MAX_RESUMES, ObjectFile, ObjectIdentity, ObjectStream, key_pattern,
                                    read_all)


class _Scheme:
    """``open_range`` over bytes in memory; each body stops after ``drop_after`` bytes (None: never), by a lost
    connection (``ConnectionError``) or, with ``short``, by ending early."""

    def __init__(self, data: bytes, drops: list[int | None] | None = None, short: bool = False):
        self.data, self.drops, self.short, self.opened = data, list(drops or []), short, []

    def open_range(self, identity: ObjectIdentity, start: int, end: int):
        self.opened.append((start, end))
        drop_after = self.drops.pop(0) if self.drops else None
        return _Body(self.data[start:end], drop_after, self.short)


class _Body:
    def __init__(self, data: bytes, drop_after: int | None, short: bool):
        self.data, self.position, self.drop_after, self.short = data, 0, drop_after, short

    def read(self, size: int) -> bytes:
        if self.drop_after is not None and self.position >= self.drop_after:
            if self.short:
                return b""
            raise ConnectionError("reset by peer")
        stop = len(self.data) if self.drop_after is None else self.drop_after
        chunk = self.data[self.position:min(self.position + size, stop)]
        self.position += len(chunk)
        return chunk

    def close(self) -> None:
        pass


DATA = bytes(range(256)) * 40


def _identity(data: bytes = DATA) -> ObjectIdentity:
    return ObjectIdentity("mem://x", len(data), '"e"')


def test_a_lost_or_short_connection_resumes_where_it_stopped_with_a_request_for_the_rest():
    for short in (False, True):
        scheme = _Scheme(DATA, drops=[1000, 500], short=short)
        assert read_all(ObjectStream(_identity(), 100, 5000, scheme.open_range)) == DATA[100:5000]
        assert scheme.opened == [(100, 5000), (1100, 5000), (1600, 5000)]


def test_a_stream_whose_drops_bring_no_byte_stops_after_the_attempts_in_a_row_with_one_line():
    scheme = _Scheme(DATA, drops=[10] + [0] * ATTEMPTS)
    with pytest.raises(TokenmillError, match=rf"^mem://x: truncated: the stream stopped at byte 10 of "
                                             rf"{len(DATA)} \({ATTEMPTS} attempts\); nothing was written$"):
        read_all(ObjectStream(_identity(), 0, len(DATA), scheme.open_range))


def test_a_stream_that_keeps_dropping_after_some_bytes_stops_after_the_drops_in_all():
    scheme = _Scheme(DATA, drops=[10] * (MAX_RESUMES + 1), short=True)
    with pytest.raises(TokenmillError, match=rf"^mem://x: the connection dropped {MAX_RESUMES + 1} times before byte "
                                             rf"{10 * (MAX_RESUMES + 1)} of {len(DATA)}; nothing was written$"):
        read_all(ObjectStream(_identity(), 0, len(DATA), scheme.open_range))


# ---- The minimum rate, on a clock the bodies move: each arrival of bytes takes the seconds its pace says.


class _Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def drip(position: int) -> tuple[int, float]:
    """64 bytes every half second, the issue's server (128 bytes/s)."""
    return 64, 0.5


def fast(position: int) -> tuple[int, float]:
    return 1 << 16, 0.01


class _PacedScheme:
    """``open_range`` over bytes in memory, whose bodies give their bytes as they arrive (``read1``) at the pace
    of ``paces``, one per connection (then ``fast``): ``pace(position in the body) -> (bytes, seconds)``."""

    def __init__(self, data: bytes, clock: _Clock, paces: list):
        self.data, self.clock, self.paces, self.opened = data, clock, list(paces), []

    def open_range(self, identity: ObjectIdentity, start: int, end: int):
        self.opened.append((start, end))
        return _PacedBody(self.data[start:end], self.clock, self.paces.pop(0) if self.paces else fast)


class _PacedBody:
    def __init__(self, data: bytes, clock: _Clock, pace):
        self.data, self.clock, self.pace, self.position = data, clock, pace, 0

    def read1(self, size: int) -> bytes:
        count, seconds = self.pace(self.position)
        self.clock.now += seconds
        chunk = self.data[self.position:self.position + min(size, count)]
        self.position += len(chunk)
        return chunk

    read = read1

    def close(self) -> None:
        pass


BIG = bytes(range(256)) * 4096  # 1 MiB


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(remote, "time", clock)
    assert (remote.MIN_BYTES_PER_SECOND, remote.RATE_WINDOW_SECONDS) == (10_000, 60)  # the documented minimum
    return clock


def test_a_server_that_drips_is_cut_each_minute_and_fails_after_the_attempts_in_one_line(clock):
    scheme = _PacedScheme(BIG, clock, [drip] * 10)
    with pytest.raises(TokenmillError, match=rf"^mem://x: too slow: 128 bytes/s over the last 60\.0 s at byte 23040 of "
                                             rf"{len(BIG)}, under the minimum of 10,000 bytes/s "
                                             rf"\({ATTEMPTS} attempts\); nothing was written$"):
        read_all(ObjectStream(_identity(BIG), 0, len(BIG), scheme.open_range))
    # each cut connection hands over its 120 drips of 64 bytes; the read fails after 3 minutes
    assert scheme.opened == [(0, len(BIG)), (7680, len(BIG)), (15360, len(BIG))] and clock.now == ATTEMPTS * 60.0


def test_a_drip_on_one_connection_is_resumed_at_full_speed_to_the_same_bytes(clock):
    scheme = _PacedScheme(BIG, clock, [drip])
    assert read_all(ObjectStream(_identity(BIG), 0, len(BIG), scheme.open_range)) == BIG
    assert scheme.opened == [(0, len(BIG)), (7680, len(BIG))]  # what the cut connection received is kept


def test_a_slow_start_is_judged_on_its_whole_first_window_and_a_stall_under_the_read_timeout_passes(clock):
    def slow_start(position: int) -> tuple[int, float]:  # 30 s at the drip's pace, then fast
        return drip(position) if position < 60 * 64 else fast(position)

    def one_stall(position: int) -> tuple[int, float]:  # 20 kB/s, but 19 s without a byte (READ_SECONDS: 20)
        return (2048, 19.0) if position == len(BIG) // 2 else (2048, 0.1)

    for pace in (slow_start, one_stall):
        scheme = _PacedScheme(BIG, clock, [pace])
        assert read_all(ObjectStream(_identity(BIG), 0, len(BIG), scheme.open_range)) == BIG
        assert scheme.opened == [(0, len(BIG))], pace.__name__  # never cut


def test_slow_windows_fail_the_read_only_in_a_row(clock):
    def good_then_drip(position: int) -> tuple[int, float]:  # a first window at 40 kB/s, then a drip
        return (400, 0.01) if position < 60 * 40_000 else drip(position)

    data = bytes(4 << 20)
    scheme = _PacedScheme(data, clock, [drip, drip, good_then_drip, drip, drip, drip])
    with pytest.raises(TokenmillError, match=r"too slow: 128 bytes/s over the last 60\.0 s at byte 24\d{5} of "):
        read_all(ObjectStream(_identity(data), 0, len(data), scheme.open_range))
    # 2 slow; a good window (the count starts again), then a slow one; 2 more slow: 3 in a row
    assert [start for start, _ in scheme.opened][:3] == [0, 7680, 15360] and len(scheme.opened) == 5


def test_the_tag_the_plan_compares_and_the_sidecar_entry():
    s3 = ObjectIdentity("s3://b/k", 3, '"abc"')
    assert (s3.tag, s3.sidecar_entry()) == ('"abc"', {"etag": '"abc"', "version_id": None, "size": 3})  # as before
    web = ObjectIdentity("https://h/f", 3, "", last_modified="Wed, 21 Oct 2026 07:28:00 GMT")
    assert web.tag == "none Last-Modified Wed, 21 Oct 2026 07:28:00 GMT"
    hub = ObjectIdentity("hf://datasets/o/n/f", 3, "1" * 64, revision="c" * 40)
    assert hub.tag == f"{'1' * 64} revision {'c' * 40}" and hub.sidecar_entry()["revision"] == "c" * 40


def test_key_globs():
    assert key_pattern("raw/*.jsonl").fullmatch("raw/a.jsonl") and not key_pattern("raw/*.jsonl").fullmatch(
        "raw/sub/a.jsonl")
    assert key_pattern("raw/**.jsonl").fullmatch("raw/sub/a.jsonl")
    assert key_pattern("raw/[!a]?.x").fullmatch("raw/b1.x") and not key_pattern("raw/[!a]?.x").fullmatch("raw/a1.x")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(DATA) + 10), st.integers(-1, 3000)), min_size=1, max_size=8),
       st.lists(st.one_of(st.none(), st.integers(0, 2000)), max_size=2), st.booleans())
def test_any_seeks_and_reads_of_an_object_file_give_the_object_s_bytes(reads, drops, short):
    scheme = _Scheme(DATA, drops=drops, short=short)
    with ObjectFile(_identity(), scheme.open_range) as file:
        for position, size in reads:
            file.seek(position)
            expected = DATA[position:] if size < 0 else DATA[position:position + size]
            assert file.read(size) == expected
            assert file.tell() == position + len(expected)
