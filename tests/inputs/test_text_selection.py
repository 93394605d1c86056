"""TextSelector: one line at a time (every bad line with its reason) and a batch of lines in one parse."""

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.inputs.text_selection import TextSelector

GOOD = [b'{"text": "hello", "id": 1}', '{"text": "caf\\u00e9 \u65e5\u672c", "n": [1, {"a": 2}]}'.encode(),
        b'{"id": 2, "text": "with, commas] and [brackets"}', b'{"text": "trailing space"}  ', b'{"text": "crlf"}\r',
        b'{"text": "a", "text": "last key wins"}', json.dumps({"text": "\n\t\"escaped\""}).encode()]
BAD = {b"": "blank line", b"   ": "blank line", b'{"text": "a"} {"text": "b"}': "invalid JSON: a second value",
       b'{"text": "a"}, {"text": "b"}': "invalid JSON: a second value", b'["text"]': "not a JSON object (a list)",
       b'"text"': "not a JSON object (a str)", b"5": "not a JSON object (a int)", b'{"body": "x"}': "no key 'text'",
       b'{"text": 5}': "text is not a string (a int)", b'{"text": null}': "text is not a string (a NoneType)",
       b'{"text": ""}': "empty text", b'{"text": "\xff"}': "invalid UTF-8", b'{"text": NaN}': "NaN/Infinity",
       b'\xef\xbb\xbf{"text": "bom"}': "byte-order mark", b'{"text": "\\ud800"}': "lone UTF-16 surrogate"}


def block_of(lines: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The lines back to back, one newline after each but the last (as pack reads a batch), and their offsets."""
    lengths = np.array([len(line) for line in lines], np.int64)
    starts = np.cumsum(lengths + 1) - (lengths + 1)
    return b"\n".join(lines), starts, lengths


def test_a_batch_of_good_lines_gives_each_line_s_text_in_one_parse():
    selector = TextSelector(".text")
    block, starts, lengths = block_of(GOOD)
    assert selector.select_lines(block, starts, lengths) == [selector.select(line)[0] for line in GOOD]
    assert selector.select_lines(block, starts, lengths)[-1] == "\n\t\"escaped\""
    assert selector.select_lines(block, starts, lengths)[5] == "last key wins"  # as orjson reads one line


def test_any_bad_line_leaves_the_batch_to_be_read_line_by_line_with_its_reason():
    selector = TextSelector(".text")
    for line, reason in BAD.items():
        lines = [GOOD[0], line, GOOD[1]]
        assert selector.select_lines(*block_of(lines)) is None, line
        text, said = selector.select(line)
        assert text is None and reason in said, (line, said)


def test_lines_that_do_not_tile_the_block_or_another_pattern_are_read_line_by_line():
    block, starts, lengths = block_of(GOOD[:3])
    assert TextSelector(".text").select_lines(block, starts[[0, 2]], lengths[[0, 2]]) is None  # a line left out
    assert TextSelector(".text").select_lines(block + b"\n", starts, lengths) is None  # bytes after the last line
    assert TextSelector(".meta.text").select_lines(block, starts, lengths) is None  # jq: one line at a time
    assert TextSelector(".text").select_lines(b"", starts[:0], lengths[:0]) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(GOOD + list(BAD)), min_size=1, max_size=12))
def test_the_batch_parse_gives_what_the_line_parse_gives(lines):
    selector = TextSelector(".text")
    one_by_one = [selector.select(line) for line in lines]
    batch = selector.select_lines(*block_of(lines))
    if all(reason is None for _, reason in one_by_one):
        assert batch == [text for text, _ in one_by_one]
    else:
        assert batch is None
