"""The raw line index: Modalities' create_raw_index format (docs/formats.md §1), byte for byte."""

import hashlib
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEMO_JSONL, run_tokenmill, write_jsonl_bytes
from tokenmill.errors import TokenmillError
from tokenmill.files.source import Source
from tokenmill.inputs import raw_index

# sha256 of Modalities 0.5.0 `create_raw_index data/raw/demo.jsonl`.
MODALITIES_DEMO_IDX_SHA256 = "d426297bb5f43932f9c33df8f2db066785cca26795e77ba7acd529d5d75ce2ea"


def test_demo_index_is_byte_identical_to_modalities(tmp_path):
    out = tmp_path / "demo.idx"
    run_tokenmill("index", DEMO_JSONL, "-o", out)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == MODALITIES_DEMO_IDX_SHA256


def test_worked_example_crlf_blank_line_and_missing_final_newline(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"text":"a"}\r\n' b'\n' b'{"text":"bc"}\n' b'{"text":"d"}')
    lines = raw_index.build_index(path)
    # CRLF keeps the \r (13 bytes); the blank line is indexed with length 0; the last line has no \n.
    assert lines.tolist() == [[0, 13], [14, 0], [15, 13], [29, 12]]
    out = tmp_path / "x.idx"
    raw_index.write_index(lines, out)
    assert out.read_bytes() == pickle.dumps([(0, 13), (14, 0), (15, 13), (29, 12)])


def test_file_ending_in_newline_has_no_extra_entry(tmp_path):
    path = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text":"a"}', b'{"text":"b"}'])
    assert raw_index.build_index(path).tolist() == [[0, 12], [13, 12]]


def test_empty_file_gives_a_valid_empty_index(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    run_tokenmill("index", path)
    assert (tmp_path / "empty.idx").read_bytes() == pickle.dumps([], protocol=4)
    assert raw_index.read_index(tmp_path / "empty.idx").shape == (0, 2)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=60), st.booleans(),
       st.sampled_from([1, 7, 64]))
def test_scan_matches_a_line_by_line_reference_across_block_edges(tmp_path_factory, lines, final_newline,
                                                                  block_bytes):
    path = tmp_path_factory.mktemp("scan") / "x.jsonl"
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path.write_bytes(data)
    expected, offset = [], 0
    for line in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n") if data else []:
        expected.append([offset, len(line)])
        offset += len(line) + 1
    original = raw_index.BLOCK
    raw_index.BLOCK = block_bytes  # small blocks put newlines on every block edge
    try:
        assert raw_index.scan_lines(path).tolist() == expected
    finally:
        raw_index.BLOCK = original


def test_validate_names_the_first_bad_line(tmp_path):
    path = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text":"a"}', b'{"text":', b"{}"])
    result = run_tokenmill("index", "--validate", path, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"tokenmill: error: {path}:2: invalid JSON")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x.idx").exists()


def test_stale_index_pointing_past_the_file_is_refused(tmp_path):
    path = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text":"abc"}'])
    stale = tmp_path / "x.idx"
    stale.write_bytes(pickle.dumps([(0, 14), (15, 100)]))
    with pytest.raises(TokenmillError, match=r"x\.idx: entry 1 ends at byte 115, beyond the 15 bytes"):
        raw_index.read_index(stale, path)


def test_missing_input_is_a_one_line_error(tmp_path):
    result = run_tokenmill("index", tmp_path / "nope.jsonl", check=False)
    assert result.returncode == 1
    assert result.stderr == f"tokenmill: error: {tmp_path / 'nope.jsonl'}: cannot read (No such file or directory)\n"


def test_an_input_the_job_resolved_already_is_indexed_as_its_path_is(tmp_path):
    out_by_path, out_by_source = tmp_path / "path.idx", tmp_path / "source.idx"
    raw_index.index_file(DEMO_JSONL, out_by_path, validate=True)
    source = Source.resolve(DEMO_JSONL)
    assert raw_index.index_file(source, out_by_source, validate=True).tolist() == raw_index.scan_lines(source).tolist()
    assert out_by_source.read_bytes() == out_by_path.read_bytes()
    with pytest.raises(TokenmillError, match="refusing to overwrite an input"):
        raw_index.index_file(source, DEMO_JSONL)
