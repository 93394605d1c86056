"""files/s3: the s3:// scheme through boto3, against a moto S3 API server on 127.0.0.1 (tests/files/moto_server.py)
— URLs split into bucket and key, each failure one line naming the URL (no such object or bucket, a bad URL, a
silent endpoint, refused credentials, never the secret), every read pinned to the ETag first seen."""

from __future__ import annotations

import os
import time

import pytest

from moto_server import SECRET, free_port, moto_endpoint, s3_bucket, start_moto, use  # noqa: F401 (fixtures)
from tokenmill.errors import TokenmillError
from tokenmill.files import objects
from tokenmill.files.s3 import split_url
from url_inputs import PACK, tokenmill

pytest.importorskip("boto3", reason="the [s3] extra is not installed")


def test_an_s3_url_is_a_bucket_and_a_key():
    assert split_url("s3://corpora/raw/a b/x.jsonl") == ("corpora", "raw/a b/x.jsonl")
    for bad in ("s3://bucket-only", "s3://bucket-only/", "s3:///key"):
        with pytest.raises(TokenmillError, match=rf"^{bad}: not an object URL; give s3://BUCKET/KEY$"):
            split_url(bad)


def test_an_object_replaced_during_a_read_stops_it_with_one_line(s3):
    s3.put_object(Bucket=s3.bucket, Key="raw/a.jsonl", Body=b'{"text": "old"}\n' * 1000)
    url = f"s3://{s3.bucket}/raw/a.jsonl"
    identity = objects.pin(url)
    with objects.open_object(identity) as stream:
        assert stream.read(100) == (b'{"text": "old"}\n' * 7)[:100]
        s3.put_object(Bucket=s3.bucket, Key="raw/a.jsonl", Body=b'{"text": "new"}\n' * 1000)
        stream._body.close()  # the connection drops: the read resumes pinned to the first version's ETag
        with pytest.raises(objects.TokenmillError, match=rf"^{url}: the object changed during the read"):
            stream.read()


def test_missing_objects_empty_globs_bad_urls_and_a_silent_endpoint_are_one_line_each(s3, tmp_path, monkeypatch,
                                                                                      capsys):
    bucket = s3.bucket
    cases = [
        ((f"s3://{bucket}/raw/none.jsonl",), f"tokenmill: error: s3://{bucket}/raw/none.jsonl: no such object"),
        ((f"s3://{bucket}/raw/*.jsonl",), f"tokenmill: error: s3://{bucket}/raw/*.jsonl: matches no object"),
        (("s3://no-such-bucket-here/x/*.jsonl",), "tokenmill: error: s3://no-such-bucket-here/x/*.jsonl: "
                                                  "no such bucket"),
        (("s3://bucket-only",), "tokenmill: error: s3://bucket-only: not an object URL; give s3://BUCKET/KEY"),
        (("s3://no-such-bucket-here/a.jsonl",), "tokenmill: error: s3://no-such-bucket-here/a.jsonl: no such bucket"),
    ]
    for inputs, expected in cases:
        code, said = tokenmill("pack", *inputs, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
        assert (code, said.strip().splitlines()[-1]) == (1, expected)
    assert list(tmp_path.iterdir()) == []
    code, said = tokenmill("pack", "s3://Bad_Bucket!/x.jsonl", *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert code == 1 and said.startswith("tokenmill: error: s3://Bad_Bucket!/x.jsonl: ParamValidationError while "
                                         "reading its metadata: Parameter validation failed: Invalid bucket name")
    assert said.count("\n") == 1

    use(monkeypatch, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    started = time.monotonic()
    code, said = tokenmill("pack", f"s3://{bucket}/raw/a.jsonl", *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert code == 1 and said.strip() == (f"tokenmill: error: s3://{bucket}/raw/a.jsonl: the endpoint "
                                          f"{os.environ['AWS_ENDPOINT_URL'][7:]} does not answer (3 attempts) while "
                                          f"reading its metadata")
    assert time.monotonic() - started < 30 and list(tmp_path.iterdir()) == []


def test_a_store_that_refuses_the_credentials_is_named_and_the_secret_is_not(monkeypatch, tmp_path, capsys):
    process, url = start_moto({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})  # moto checks keys against its IAM
    try:
        use(monkeypatch, url, key_id="AKIAUNKNOWNKEY000000")
        code, said = tokenmill("pack", "s3://corpora/raw/a.jsonl", *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    finally:
        process.terminate()
        process.wait(10)
    assert code == 1 and said.startswith("tokenmill: error: s3://corpora/raw/a.jsonl: permission denied (")
    assert "check the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE)" in said and SECRET not in said
