"""files/identity: nothing is written over its own input (the same path through links, or a hard link), a file
re-opened later is refused if it was replaced or modified since (device, inode, size, mtime), and the sha256 of
a file or of a byte range of it."""

import hashlib
import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity, file_sha256, refuse_inputs_as_outputs


def test_an_output_that_is_an_input_by_path_symlink_or_hard_link_is_refused(tmp_path):
    source = tmp_path / "x.jsonl"
    source.write_bytes(b'{"text": "a"}\n')
    (tmp_path / "sym.jsonl").symlink_to(source)
    os.link(source, tmp_path / "hard.jsonl")
    for output in (source, tmp_path / "sym.jsonl", tmp_path / "hard.jsonl", tmp_path / "sub" / ".." / "x.jsonl"):
        with pytest.raises(TokenmillError, match=rf"^{output}: is the input {source}; refusing to overwrite an input"):
            refuse_inputs_as_outputs([tmp_path / "fine.pbin", output], [source])
    refuse_inputs_as_outputs([tmp_path / "x.pbin", tmp_path / "new" / "x.jsonl"], [source, tmp_path / "missing"])


def test_a_file_replaced_or_modified_since_it_was_opened_is_refused(tmp_path):
    path = tmp_path / "x.pbin"
    path.write_bytes(b"12345")
    opened = FileIdentity.of(path)
    opened.check(path)  # unchanged
    with open(path, "rb") as handle:
        opened.check(path, handle.fileno())
    with open(path, "ab") as handle:
        handle.write(b"6")
    with pytest.raises(TokenmillError, match=rf"^{path}: modified since it was opened \(5 → 6 bytes\); open it again"):
        opened.check(path)
    replacement = tmp_path / "y"
    replacement.write_bytes(b"12345")
    os.replace(replacement, path)
    with pytest.raises(TokenmillError, match=rf"^{path}: replaced since it was opened \(5 → 5 bytes\)"):
        opened.check(path)
    path.unlink()
    with pytest.raises(TokenmillError, match=rf"^{path}: cannot read \(No such file or directory\)"):
        opened.check(path)


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=300), cut=st.tuples(st.integers(0, 320), st.integers(0, 320)))
def test_the_sha256_of_a_file_or_a_byte_range_is_hashlib_s_of_those_bytes(tmp_path_factory, data, cut):
    path = tmp_path_factory.mktemp("h") / "f"
    path.write_bytes(data)
    start, end = min(cut), max(cut)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert file_sha256(path, start, end) == hashlib.sha256(data[start:end]).hexdigest()
    assert file_sha256(path, start) == hashlib.sha256(data[start:]).hexdigest()


def test_a_hash_stops_when_asked(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    stop = threading.Event()
    stop.set()
    assert file_sha256(path, stop=stop) is None
