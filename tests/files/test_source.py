"""An input resolved once (:class:`tokenmill.files.source.Source`): a local file or a pinned URL, with its name (a
URL's redacted), size, identity, compression, ranged reads of exactly that version, and its sidecar entry."""

from __future__ import annotations

import gzip
import hashlib
import os

import pytest
from loopback_servers import RangeServer

from tokenmill.errors import TokenmillError
from tokenmill.files import objects
from tokenmill.files.identity import FileIdentity
from tokenmill.files.remote import read_all
from tokenmill.files.source import Source, compression_of

TEXT = b'{"text": "one"}\n{"text": "two"}\n'


@pytest.fixture(autouse=True)
def fresh_pins():
    objects._pinned.clear()
    yield
    objects._pinned.clear()


def test_a_local_file_is_its_path_its_identity_and_its_compression(tmp_path):
    plain, packed = tmp_path / "a.jsonl", tmp_path / "a.jsonl.gz"
    plain.write_bytes(TEXT)
    packed.write_bytes(gzip.compress(TEXT))
    source = Source.resolve(plain)
    assert (source.name, source.size, source.compression, source.is_url) == (str(plain), len(TEXT), None, False)
    assert source.identity == FileIdentity.of(plain)
    assert read_all(source.open(5, 20)) == TEXT[5:20] and read_all(source.open()) == TEXT
    assert source.sidecar_entry() == {"path": str(plain), "bytes": len(TEXT)}
    assert Source.resolve(packed).compression == "gzip"
    with pytest.raises(TokenmillError, match=rf"^{tmp_path / 'none.jsonl'}: input file not found$"):
        Source.resolve(tmp_path / "none.jsonl")


def test_a_local_file_replaced_after_it_was_resolved_is_refused_not_read(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(TEXT)
    source = Source.resolve(path)
    replacement = tmp_path / "b.jsonl"
    replacement.write_bytes(TEXT.replace(b"one", b"ONE"))
    os.replace(replacement, path)
    with pytest.raises(TokenmillError):
        source.open()


def test_a_url_is_its_redacted_name_and_its_pinned_version_and_reads_that_version():
    query = "X-Amz-Credential=AKIAPLANTED&X-Amz-Signature=c0ffee"
    data = gzip.compress(TEXT)
    with RangeServer({"/a.jsonl.gz": data}, credentials=("user", "pw0rd"), query=query) as server:
        url = server.url.replace("http://", "http://user:pw0rd@") + f"/a.jsonl.gz?{query}"
        source = Source.resolve(url)
        name = server.url.replace("http://", "http://***@") + "/a.jsonl.gz?X-Amz-Credential=***&X-Amz-Signature=***"
        assert (source.name, source.size, source.compression, source.is_url) == (name, len(data), "gzip", True)
        assert source.identity.etag == f'"{hashlib.md5(data).hexdigest()}"'
        assert read_all(source.open(2, 10)) == data[2:10]
        assert source.sidecar_entry() == {"path": name, "bytes": len(data), "compression": "gzip",
                                          "object": {"etag": source.identity.etag, "version_id": None,
                                                     "size": len(data), "last_modified": server.modified}}
        server.files["/a.jsonl.gz"] = gzip.compress(TEXT + TEXT)  # replaced: a read of the pinned version stops
        with pytest.raises(TokenmillError, match="changed during the read") as stopped:
            read_all(source.open())
    assert "pw0rd" not in str(stopped.value) and "c0ffee" not in str(stopped.value)


def test_compression_is_told_by_the_first_bytes():
    assert [compression_of(head) for head in (b"\x1f\x8b\x08", b"\x28\xb5\x2f\xfd", b"PAR1", b"BZh9", b'{"t')] == \
        ["gzip", "zstd", "parquet", "bzip2", None]
