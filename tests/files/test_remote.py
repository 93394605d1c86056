"""The schemes' shared interface (tokenmill.files.remote), against an in-memory scheme whose connections drop
where the test says: worked examples, then properties (any seeks and reads, any drops, give the object's bytes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
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
