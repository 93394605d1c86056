"""inputs/jsonl: a JSONL input read as whole lines, numbered as in the whole file — a plain file by byte ranges
that tile it (each line to the range it starts in), a compressed one as a stream (gzip, xz, bzip2 read to their
very end), zip refused. The compressed inputs' end-to-end cases (damaged archives, concatenated streams, padding)
are in tests/e2e/test_scale.py."""

import gzip
import json
import hashlib
import lzma
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.inputs.jsonl import (input_compression, iter_lines, lines_in_range, parse_byte_range, source_sha256,
                                    stream_line_batches)
from tokenmill.inputs.raw_index import scan_lines


def test_a_byte_range_is_start_colon_end_and_an_empty_end_is_the_end_of_the_file():
    assert parse_byte_range("0:100") == (0, 100)
    assert parse_byte_range("5:") == (5, 1 << 62)
    for bad in ("5", "-1:4", "9:3", "a:b", ""):
        with pytest.raises(TokenmillError, match=rf"^byte range {bad!r}: give START:END in bytes, 0 <= START <= END$"):
            parse_byte_range(bad)


def test_lines_are_read_plain_gzip_or_xz_alike_numbered_from_one_and_zip_is_refused(tmp_path):
    lines = [b'{"text": "one"}', b'{"text": "two"}', b"", b'{"text": "four"}']
    data = b"\n".join(lines)  # no final newline: the last line is read all the same
    plain, packed, xz = tmp_path / "x.jsonl", tmp_path / "y.jsonl", tmp_path / "z.json"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data[:20]) + gzip.compress(data[20:]))  # two members: read whole
    xz.write_bytes(lzma.compress(data))
    for path, kind in ((plain, None), (packed, "gzip"), (xz, "xz")):
        assert input_compression(path) == kind
        assert list(iter_lines(path)) == list(enumerate(lines, start=1))
    for path in (plain, packed, xz):  # a line over max_line_bytes is given empty, never held whole
        assert list(iter_lines(path, max_line_bytes=15)) == [(1, lines[0]), (2, lines[1]), (3, b""), (4, b"")]
    assert source_sha256({"path": str(packed)}) == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert source_sha256({"path": str(plain), "byte_range": (16, 32)}) == hashlib.sha256(data[16:32]).hexdigest()
    with pytest.raises(TokenmillError, match=rf"^{packed}: a byte range needs a plain JSONL file, not gzip data$"):
        list(iter_lines(packed, byte_range=(0, 10)))
    with zipfile.ZipFile(tmp_path / "a.jsonl", "w") as archive:
        archive.writestr("x.jsonl", data)
    with pytest.raises(TokenmillError, match=r"a.jsonl: a zip archive; tokenmill reads plain JSONL or a "
                                             r"gzip/zstd/xz/bzip2-compressed stream of it, or Parquet$"):
        input_compression(tmp_path / "a.jsonl")


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.binary(max_size=12).map(lambda line: line.replace(b"\n", b"")), min_size=1, max_size=12),
       max_line_bytes=st.integers(0, 14), final_newline=st.booleans())
def test_a_plain_file_gives_the_lines_of_its_gzip_stream_whatever_the_longest_line_allowed(
        tmp_path_factory, lines, max_line_bytes, final_newline):
    data = b"{" + b"\n".join(lines) + (b"\n" if final_newline else b"")  # "{": never a compression's magic
    folder = tmp_path_factory.mktemp("long")
    plain, packed = folder / "x.jsonl", folder / "x.jsonl.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    whole_lines = data.removesuffix(b"\n").split(b"\n")
    expected = [(number, line if len(line) <= max_line_bytes else b"") for number, line in enumerate(whole_lines, 1)]
    assert list(iter_lines(plain, max_line_bytes=max_line_bytes)) == expected
    assert list(iter_lines(packed, max_line_bytes=max_line_bytes)) == expected


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.text(max_size=8).map(lambda text: json.dumps({"text": text}).encode()), min_size=1,
                     max_size=20),
       cuts=st.lists(st.integers(0, 300), max_size=4))
def test_byte_ranges_that_tile_a_file_give_every_line_to_exactly_one_range(tmp_path_factory, lines, cuts):
    path = tmp_path_factory.mktemp("r") / "x.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    edges = [0, *sorted(cut for cut in cuts if cut < path.stat().st_size), 1 << 62]
    ranges = list(zip(edges, edges[1:]))
    assert [line for start, end in ranges for line in iter_lines(path, (start, end))] == \
        list(enumerate(lines, start=1))
    index = scan_lines(path)
    for start, end in ranges:  # the raw index selects the same lines, numbered the same
        first, selected = lines_in_range(index, start, end)
        assert [number for number, _ in iter_lines(path, (start, end))] == \
            list(range(first + 1, first + 1 + len(selected)))


@settings(max_examples=30, deadline=None)
@given(lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       batch_bytes=st.integers(1, 64))
def test_a_stream_is_cut_into_batches_of_whole_lines_whatever_the_batch_size(tmp_path_factory, lines, batch_bytes):
    path = tmp_path_factory.mktemp("s") / "x.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(line + b"\n" for line in lines)))
    digest, got = {}, []
    for first_line, offsets, block in stream_line_batches(path, "gzip", batch_bytes, 1 << 20, digest):
        assert first_line == len(got) + 1
        got += [block[offset:offset + length] for offset, length in offsets.tolist()]
    assert got == lines
    assert digest["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
