"""formats/provenance: the input line each document of a .pbin came from (from the sidecar alone: its first
line, its count, its skipped lines) and a field's value on that line, numbers as the line wrote them."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import GPT2, run_tokenmill, write_jsonl_bytes
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.provenance import (document_line, document_lines, field_keys, field_values, tokens_per_source,
                                         value_of)


def test_each_document_is_traced_to_its_line_and_its_id_past_skipped_lines(tmp_path):
    lines = [json.dumps({"text": f"document {i} " + "word " * i, "meta": {"id": f"doc-{i}", "n": i}}).encode()
             for i in range(8)]
    lines[2], lines[5] = b"not json", b'{"no_text": 1}'
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--on-bad-line", "skip", "-o", tmp_path / "x.pbin")
    (record,) = read_sidecar(tmp_path / "x.pbin")["sources"]
    assert document_lines(record) == [1, 2, 4, 5, 7, 8]
    assert field_values(record, [1, 4, 8], ".meta.id") == ["doc-0", "doc-3", "doc-7"]
    assert field_values(record, [8, 1], "meta.n") == ["7", "0"]  # in the order asked, a bare path as .path
    assert field_values(record, [1], ".missing") == [None]
    pbin = PbinFile(tmp_path / "x.pbin")
    assert tokens_per_source([6], pbin.doc_lengths).tolist() == [int(pbin.doc_lengths.sum())]
    assert tokens_per_source([5], pbin.doc_lengths) is None  # the counts do not add up


def test_lines_are_unknown_where_the_sidecar_keeps_only_the_first_skipped_lines():
    source = {"first_line": 11, "lines": 5, "documents": 3,
              "skipped": {"not valid JSON": {"count": 2, "first_lines": [12, 14]}}}
    assert document_lines(source) == [11, 13, 15]  # a shard's lines are numbered as in its whole file
    source["skipped"]["not valid JSON"] = {"count": 2, "first_lines": [12]}
    assert document_lines(source) is None


def test_a_value_is_a_string_as_it_is_and_anything_else_compact_json_with_numbers_as_written():
    line = b'{"a": "text", "b": 12345678901234567890123, "c": 1e2, "d": {"x": [1, 2.50, null]}, "e": -0, "f": true}'
    got = {key: value_of(line, (key,)) for key in "abcdefg"}
    assert got == {"a": "text", "b": "12345678901234567890123", "c": "1e2", "d": '{"x":[1,2.50,null]}', "e": "-0",
                   "f": "true", "g": None}
    assert value_of(b"not json", ("a",)) is None and value_of(b'{"a": 3}', ("a", "b")) is None
    assert field_keys(".meta.domain") == field_keys("meta.domain") == ("meta", "domain")
    with pytest.raises(TokenmillError, match=r"'\.meta\.\.x': not a field path such as \.id or \.meta\.domain"):
        field_keys(".meta..x")


@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                      max_size=3), max_leaves=8))
def test_a_value_read_back_is_the_json_value_of_the_line(value):
    line = json.dumps({"v": value}).encode()
    got = value_of(line, ("v",))
    if value is None or isinstance(value, str):
        assert got == value
    else:
        assert json.loads(got) == value


def test_an_sft_sources_left_out_ranges_give_each_documents_line():
    """An SFT source lists every line it left out (skipped or dropped) as ranges; document k is its k-th line not
    left out, whatever its skipped lists keep (they count only bad lines, and only the first 20 of a reason)."""
    source = {"path": "c.jsonl", "lines": 9, "documents": 5, "left_out": [[1, 3], [4, 5], [8, 9]],
              "skipped": {"bad": {"count": 1, "first_lines": [2]}}}
    assert document_lines(source) == [3, 5, 6, 7, 9]
    assert [document_line(source, k) for k in range(5)] == [3, 5, 6, 7, 9]
    pack = {"path": "x.jsonl", "lines": 5, "documents": 3, "skipped": {"blank": {"count": 2, "first_lines": [2, 4]}}}
    assert document_lines(pack) == [document_line(pack, k) for k in range(3)] == [1, 3, 5]
    pack["skipped"]["blank"]["count"] = 40  # more than the sidecar lists: no line is known
    assert document_lines(pack) is None and document_line(pack, 0) is None
