"""inputs/file_kind: what a file is by its first bytes — gzip, zstd, xz, bzip2, zip, Parquet or plain JSONL,
never by its name — and the refusal of a raw index for anything but plain JSONL."""

import bz2
import gzip
import lzma
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.inputs.file_kind import compression_of, described, head_bytes, refuse_compressed

LINES = b'{"text": "a"}\n{"text": "b"}\n'


def written(tmp_path, kind: str):
    """LINES in ``kind`` under a name that says nothing of it."""
    path = tmp_path / f"{kind}.jsonl"
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("x.jsonl", LINES)
    else:
        path.write_bytes({"plain": lambda data: data, "gzip": gzip.compress, "bzip2": bz2.compress,
                          "xz": lzma.compress, "zstd": lambda data: b"\x28\xb5\x2f\xfd" + data}[kind](LINES))
    return path


@pytest.mark.parametrize("kind", ["plain", "gzip", "bzip2", "xz", "zstd", "zip"])
def test_a_file_is_told_by_its_magic_bytes_and_only_plain_jsonl_may_be_indexed(tmp_path, kind):
    path = written(tmp_path, kind)
    assert compression_of(head_bytes(path)) == (None if kind == "plain" else kind)
    if kind == "plain":
        refuse_compressed(path)
        return
    with pytest.raises(TokenmillError, match=rf"^{path}: {kind}-compressed data: a raw index .* exists only for "
                                             rf"plain JSONL; `tokenmill pack` reads the file directly, or decompress"):
        refuse_compressed(path)


def test_a_parquet_file_is_named_so_and_an_unreadable_one_is_one_line(tmp_path):
    assert compression_of(b"PAR1\x15\x04") == "parquet" and described("parquet") == "a Parquet file"
    assert described("gzip") == "gzip-compressed data"
    with pytest.raises(TokenmillError, match=rf"^{tmp_path / 'missing'}: cannot read \(No such file or directory\)$"):
        head_bytes(tmp_path / "missing")
    (tmp_path / "short").write_bytes(b"\x1f")
    assert head_bytes(tmp_path / "short") == b"\x1f" and compression_of(b"\x1f") is None


@given(text=st.text(max_size=30))
def test_json_text_is_never_taken_for_compressed_data(text):
    # a JSONL line starts with "{" or whitespace; no text of printable JSON starts with a magic number
    assert compression_of(("{" + text).encode()) is None
