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
from tokenmill.files.source import (Source, as_source, compression_of, expand, input_key, is_missing_file,
                                    local_paths, resolve_inputs)

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
    assert (source.name, source.size, source.compression, source.is_url) == (str(plain), len(TEXT), None, False)
    assert Source.resolve(packed).compression == "gzip"
    with pytest.raises(TokenmillError, match="cannot read"):
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
        assert (source.name, source.size, source.compression, source.is_url) == (name, len(data), "gzip", True)
        assert source.identity.sidecar_entry() == {"etag": source.identity.etag, "version_id": None,
                                                   "size": len(data), "last_modified": server.modified}
        server.files["/a.jsonl.gz"] = gzip.compress(TEXT + TEXT)  # replaced: a read of the pinned version stops
        with pytest.raises(TokenmillError, match="changed during the read") as stopped:
            read_all(source.open())
    assert "pw0rd" not in str(stopped.value) and "c0ffee" not in str(stopped.value)


def test_compression_is_told_by_the_first_bytes():
    assert [compression_of(head) for head in (b"\x1f\x8b\x08", b"\x28\xb5\x2f\xfd", b"PAR1", b"BZh9", b'{"t')] == \
        ["gzip", "zstd", "parquet", "bzip2", None]


def test_a_job_s_inputs_are_resolved_once_each_after_its_outputs_are_found_to_be_none_of_them(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    first.write_bytes(TEXT)
    second.write_bytes(gzip.compress(TEXT))
    sources = resolve_inputs([str(first), str(second), str(first)], [tmp_path / "out.pbin"])
    assert [(source.name, source.compression) for source in sources] == [(str(first), None), (str(second), "gzip"),
                                                                         (str(first), None)]
    assert sources[0] is sources[2]  # named twice, resolved once (and packed twice: no hint given)
    with pytest.raises(TokenmillError, match=rf"^{first}: is the input {first}; refusing to overwrite an input"):
        resolve_inputs([str(first)], [first])
    with pytest.raises(TokenmillError, match=r"tokenizer.json: is the input .*tokenizer.json"):
        resolve_inputs([str(first)], [tmp_path / "tokenizer.json"], also_read=[tmp_path / "tokenizer.json"])
    with pytest.raises(TokenmillError, match=rf"^{tmp_path / 'none.jsonl'}: input file not found$"):
        resolve_inputs([str(first), str(tmp_path / "none.jsonl")], [tmp_path / "out.pbin"])
    os.link(first, tmp_path / "link.jsonl")
    with pytest.raises(TokenmillError, match=rf"^{tmp_path / 'link.jsonl'}: is the input {first} again and would "
                                             rf"be packed twice \(say so\)$"):
        resolve_inputs([str(first), str(tmp_path / "link.jsonl")], [tmp_path / "out.pbin"], twice_hint="say so")


def test_a_layer_given_a_source_reads_it_and_given_a_path_resolves_it(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(TEXT)
    source = Source.resolve(path)
    assert as_source(source) is source and as_source(path) == source


def test_paths_not_yet_resolved_are_told_apart_here_and_nowhere_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a1.jsonl", "a2.jsonl", "b[1].jsonl"):
        (tmp_path / name).write_bytes(TEXT)
    assert expand(["a*.jsonl", "b[1].jsonl"]) == ["a*.jsonl", "b[1].jsonl"]  # no local globs unless asked
    assert expand(["a*.jsonl", "b[1].jsonl"], local_globs=True) == ["a1.jsonl", "a2.jsonl", "b[1].jsonl"]
    assert local_paths(["a1.jsonl", "s3://bucket/a.jsonl", "hf://datasets/o/n/a.jsonl"]) == ["a1.jsonl"]
    assert [is_missing_file(path) for path in ("a1.jsonl", "none.jsonl", "gs://bucket/none.jsonl")] == \
        [False, True, False]
    os.symlink("a1.jsonl", "link.jsonl")
    assert input_key("link.jsonl") == input_key("a1.jsonl") != input_key("a2.jsonl")
    assert input_key("https://user:pw0rd@host/a.jsonl") == ("https://***@host/a.jsonl",)
