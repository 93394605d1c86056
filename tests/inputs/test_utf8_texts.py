"""tokenmill.inputs.utf8_texts: the C parser's texts are orjson's wherever it says good, and it gives up otherwise."""

from __future__ import annotations

import ctypes
import json
import mmap
import sys

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill._kernels import first_risky_code_points
from tokenmill.inputs.utf8_texts import Utf8Texts


def _texts(lines: list[bytes], key: str = "text") -> list[str] | None:
    """The parser's texts of ``lines`` (joined by newlines, as pack reads them), or None where it gave up."""
    block = b"\n".join(lines)
    lengths = np.array([len(line) for line in lines], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    texts = Utf8Texts.from_json_lines(block, starts, lengths, key)
    return None if texts is None else list(texts)


@pytest.mark.parametrize("line, text", [
    (rb'{"text": "plain"}', "plain"),
    (rb'{"text":"q\"b\\s\/n\nr\rt\tb\bf\f"}', 'q"b\\s/n\nr\rt\tb\bf\f'),
    (rb'{"text": "\u00e9\u20AC\ud83d\ude42\u0000"}', "\u00e9\u20ac\U0001f642\x00"),
    ('{"text": "a\u00e9\u20ac\U0001f642\U0010ffff\uffff"}'.encode(), "a\u00e9\u20ac\U0001f642\U0010ffff\uffff"),
    (rb'{"meta": {"text": "nested"}, "text": "top", "list": [{"text": 1}, "text"]}', "top"),
    (rb'{"text": "crlf"}' + b"\r", "crlf"),
    (b' \t{ "id" : -0.5e+10 , "n": [1, 2.25, -3, true, false, null, {}, []], "text" : "ws" } \r', "ws"),
    (rb'{"t\u0065x": 1, "text": "an escaped key that is not the key"}', None),  # any escaped top-level key: give up
    (rb'{"texts": "other", "tex": 1, "text": "x"}', "x"),
])
def test_worked_examples_give_orjsons_text_or_give_up(line, text):
    assert _texts([line]) == ([text] if text is not None else None)
    if text is not None:
        assert orjson.loads(line)["text"] == text


@pytest.mark.parametrize("line", [
    b"", b"   ", b'{"id": 1}', b'{"text": "a", "text": "b"}', b'{"text": 1}', b'{"text": ""}', b'{"text": null}',
    b'["text"]', b'"text"', b'{"text": "a"} {"text": "b"}', b'{"text": "a"}x', b'\xef\xbb\xbf{"text": "a"}',
    b'{"text": "a\xff"}', b'{"text": "\xc0\x80"}', b'{"text": "\xed\xa0\x80"}', b'{"text": "\xf4\x90\x80\x80"}',
    b'{"text": "a\x01"}', b'{"text": "\\ud800"}', b'{"text": "\\udc00x"}', b'{"text": "\\ud800\\u0041"}',
    b'{"text": "\\x41"}', b'{"text": "a", "n": NaN}', b'{"text": "a", "n": -Infinity}', b'{"text": "a", "n": 01}',
    b'{"text": "a", "n": 12345678901234567890}', b'{"text": "a", "n": 1e999}', b'{"text": "a", "n": 1.}',
    b'{"text": "a",}', b'{"text": "a" "b": 1}', b'{"text": "a", "d": ' + b"[" * 70 + b"]" * 70 + b"}",
    b'{"text": "a"\x0b}', b'{"text": "a"', b'{"text": "a\\"}',
])
def test_the_parser_gives_up_on_every_line_it_is_not_sure_of(line):
    assert _texts([line]) is None
    assert _texts([b'{"text": "good"}', line, b'{"text": "good"}']) is None  # one such line: the whole batch


def test_a_key_other_than_text_and_a_batch_of_many_lines():
    lines = [json.dumps({"body": f"line {i} \u00e9\U0001f642", "text": i}).encode() for i in range(500)]
    assert _texts(lines, "body") == [f"line {i} \u00e9\U0001f642" for i in range(500)]
    assert _texts(lines, "text") is None


def test_the_texts_read_as_a_list_of_str_and_take_excerpts_after_them():
    texts = Utf8Texts.from_strings(["a", "\u00e9t\u00e9", "\U0001f642"])
    assert len(texts) == 3 and texts[1] == "\u00e9t\u00e9" and texts[-1] == "\U0001f642"
    assert (texts + ["x", ""]).strings() == ["a", "\u00e9t\u00e9", "\U0001f642", "x", ""]
    with pytest.raises(IndexError):
        texts[3]


_WORDS = ["a", "text", "\u00e9", "\u20ac", "\U0001f642", "e\u0301", "\u0300", "<s>", "<|endoftext|>", "\n", " ", "\x00",
          "\uffff", "\u0100", "\u00ff", "\ufe20", "x" * 20]


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(st.lists(st.sampled_from(_WORDS), max_size=12).map("".join),
                                st.text(st.characters(exclude_categories=["Cs"]), max_size=20)), max_size=30),
       needle=st.sampled_from(["<", "<s>", "<|endoftext|>", "\u00e9", "\U0001f642", "", "tex", "\u0301"]))
def test_the_facts_and_search_of_utf8_texts_are_those_of_their_strs(texts, needle):
    mine = Utf8Texts.from_strings(texts)
    characters, first_risky, widths = mine.code_point_facts()
    positions, kinds = np.empty(len(texts), np.int64), np.empty(len(texts), np.uint8)
    first_risky_code_points(texts, positions, kinds)
    assert characters.tolist() == [len(text) for text in texts]
    assert widths.tolist() == kinds.tolist()
    assert first_risky.tolist() == positions.tolist()
    assert mine.holding(needle).tolist() == [needle in text for text in texts]


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
                     | st.text(max_size=8),
                     lambda inner: (st.lists(inner, max_size=4)
                                    | st.dictionaries(st.text(max_size=5), inner, max_size=4)),
                     max_leaves=12)


@st.composite
def _lines(draw) -> bytes:
    """A JSON object holding (or not) a text, written in one of several styles, then perhaps mutated bytewise."""
    record = draw(st.dictionaries(st.sampled_from(["id", "meta", "text", "tex", "texts", "t\u00e9xt"]), _JSON,
                                  max_size=4))
    if draw(st.sampled_from([True, True, True, False])):
        record["text"] = draw(st.one_of(st.text(), st.lists(st.sampled_from(_WORDS), max_size=8).map("".join)))
    style = draw(st.integers(0, 3))
    line = json.dumps(record, ensure_ascii=style == 1, indent=None if style < 3 else 1,
                      separators=(",", ":") if style == 0 else None).replace("\n", " ").encode("utf-8", "surrogatepass")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        position = draw(st.integers(0, len(line)))
        mutation = draw(st.sampled_from(["delete", "insert", "replace"]))
        byte = draw(st.sampled_from([b'"', b"\\", b"{", b"}", b"[", b",", b":", b" ", b"\r", b"\t", b"\x00", b"\x80",
                                     b"\xc3", b"\xff", b"u", b"n", b"0", b"e", b"-", b".", b"\xed\xa0\x80",
                                     b"\\ud800", b"\\udc00", b"\\u00e9", b"NaN"]))
        if mutation == "delete":
            line = line[:position] + line[position + 1:]
        elif mutation == "insert":
            line = line[:position] + byte + line[position:]
        else:
            line = line[:position] + byte + line[position + 1:]
    return line.replace(b"\n", b" ")


def _orjsons_text(line: bytes) -> str | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    text = record.get("text") if isinstance(record, dict) else None
    return text if isinstance(text, str) and text else None


@settings(max_examples=1500, deadline=None)
@given(lines=st.lists(_lines(), min_size=1, max_size=3))
def test_wherever_the_parser_says_good_orjson_accepts_every_line_and_gives_the_same_text(lines):
    texts = _texts(lines)
    if texts is not None:
        assert texts == [_orjsons_text(line) for line in lines]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes: Linux's libc")
@pytest.mark.parametrize("end", ["\u00e9", "\u20ac", "\U0001f642", "a"])
def test_a_line_cut_inside_its_text_at_the_end_of_the_blocks_memory_is_given_up_without_reading_past_it(end):
    """The last line of a block (no newline after it) cut after a multi-byte character of its text: the parser
    copied 4 bytes of every sequence, reading up to 2 past the line, which here is the end of readable memory
    (the next page made unreadable: a read there is a segfault)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    memory = mmap.mmap(-1, 2 * page)
    address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    assert libc.mprotect(address + page, page, 0) == 0  # PROT_NONE
    try:
        line = b'{"text":"' + ("x" * 100 + end).encode()
        memory[page - len(line):page] = line
        block = np.frombuffer(memory, np.uint8, page)
        texts = Utf8Texts.from_json_lines(block, np.array([page - len(line)]), np.array([len(line)]), "text")
        assert texts is None
        del block
    finally:
        assert libc.mprotect(address + page, page, 3) == 0  # PROT_READ | PROT_WRITE, for munmap's sake
        memory.close()
