"""The table of URL schemes, and redaction: a URL's secrets (user info, presigned and secret query values) never
leave the process but in the request itself."""

from __future__ import annotations

import json

import pytest

from tokenmill.errors import TokenmillError
from tokenmill.files import urls

PRESIGNED = ("https://bucket.s3.amazonaws.com/raw/a.jsonl?X-Amz-Algorithm=AWS4-HMAC-SHA256"
             "&X-Amz-Credential=AKIAEXAMPLE%2F20261208%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261208T000000Z"
             "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=0123456789abcdef")


@pytest.mark.parametrize(("url", "name"), [
    ("http://alice:s3cret@host:8080/a.jsonl", "http://***@host:8080/a.jsonl"),
    ("https://ghp_token123@host/a.jsonl", "https://***@host/a.jsonl"),
    ("http://bob:p?ss#w@host/a.jsonl?page=1", "http://***@host/a.jsonl?page=1"),  # raw ? and # in a password
    (PRESIGNED, "https://bucket.s3.amazonaws.com/raw/a.jsonl?X-Amz-Algorithm=***&X-Amz-Credential=***"
                "&X-Amz-Date=***&X-Amz-Expires=***&X-Amz-SignedHeaders=***&X-Amz-Signature=***"),
    ("https://storage.googleapis.com/b/k?X-Goog-Credential=sa%40p&X-Goog-Signature=ab12&generation=7",
     "https://storage.googleapis.com/b/k?X-Goog-Credential=***&X-Goog-Signature=***&generation=7"),
    ("https://acct.blob.core.windows.net/c/a.jsonl?sv=2022-11-02&se=2026-12-09&sp=r&sig=abc%3D",
     "https://acct.blob.core.windows.net/c/a.jsonl?sv=2022-11-02&se=***&sp=r&sig=***"),
    ("https://host/a.jsonl?access_token=t1&api_key=k1&Password=p1&page=2#frag",
     "https://host/a.jsonl?access_token=***&api_key=***&Password=***&page=2#frag"),
])
def test_redact_hides_user_info_and_every_secret_query_value_and_keeps_the_rest(url, name):
    assert urls.redact(url) == name
    assert urls.redact(name) == name  # idempotent: a name is its own name


@pytest.mark.parametrize("url", ["s3://bucket/raw/*.jsonl", "gs://b/k.jsonl", "hf://datasets/org/name@main/a.jsonl",
                                 "https://host/a.jsonl?page=2", "data/raw/demo.jsonl"])
def test_a_url_without_secrets_is_its_own_name(url):
    assert urls.redact(url) == url


def test_redact_text_redacts_every_url_of_a_message_and_keeps_its_punctuation():
    message = f"{PRESIGNED}: no such file (HTTP 404); see http://bob:hunter2@mirror/a.jsonl."
    redacted = urls.redact_text(message)
    assert redacted == (f"{urls.redact(PRESIGNED)}: no such file (HTTP 404); see http://***@mirror/a.jsonl.")
    assert "0123456789abcdef" not in redacted and "hunter2" not in redacted


def test_redact_text_keeps_the_line_number_after_a_presigned_url():
    """A bad line's error, ``URL:LINE: reason``, names its line after the URL is redacted, the last query value's
    too (it was taken as part of the signature and hidden with it)."""
    message = f"{PRESIGNED}:9: invalid JSON (unexpected end of data at byte 51)"
    assert urls.redact_text(message) == f"{urls.redact(PRESIGNED)}:9: invalid JSON (unexpected end of data at byte 51)"
    assert urls.redact_text(f"see {PRESIGNED}:12:3: bad") == f"see {urls.redact(PRESIGNED)}:12:3: bad"


def test_user_info_is_taken_out_of_the_address_for_basic_authentication():
    assert urls.user_info("http://al%40ice:p%3Ass@host/a?x=1") == ("http://host/a?x=1", ("al@ice", "p:ss"))
    assert urls.user_info("http://host/a@b") == ("http://host/a@b", None)


def test_a_name_maps_back_to_its_full_url_from_this_process_or_the_jobs_environment(monkeypatch):
    monkeypatch.setattr(urls, "_full_urls", {})
    monkeypatch.delenv(urls.URLS_VARIABLE, raising=False)
    name = urls.redact(PRESIGNED)
    with pytest.raises(TokenmillError) as refused:
        urls.full_url(name)
    said = str(refused.value)
    assert said.startswith(f"{name}: a URL with its secrets redacted") and "0123" not in said
    assert urls.full_url("https://host/a.jsonl") == "https://host/a.jsonl"  # nothing redacted: itself

    variable = urls.urls_variable(["data/raw/a.jsonl", PRESIGNED, "s3://b/k.jsonl"])
    assert json.loads(variable) == [PRESIGNED]  # only the URLs that hold a secret
    monkeypatch.setenv(urls.URLS_VARIABLE, variable)
    assert urls.full_url(name) == PRESIGNED

    monkeypatch.setattr(urls, "_full_urls", {})
    monkeypatch.delenv(urls.URLS_VARIABLE)
    assert urls.remember("http://u:p@h/x") == "http://***@h/x" and urls.full_url("http://***@h/x") == "http://u:p@h/x"


def test_two_urls_of_one_name_are_refused_for_the_jobs_environment_naming_neither_secret():
    """``?key=a.jsonl`` and ``?key=b.jsonl`` (key is a secret word) have one name, which maps back to one URL: a
    workflow job of the dataset of a then read b (refused as changed since planned, a false reason). Refused at
    planning, where the config's URLs become the jobs' environment."""
    one, other = "https://host/dl?key=a.jsonl", "https://host/dl?key=b.jsonl"
    with pytest.raises(TokenmillError) as refused:
        urls.urls_variable(["data/raw/x.jsonl", one, other])
    assert str(refused.value).startswith("https://host/dl?key=***: two different URLs have this name once their "
                                         "secrets are hidden (***)")
    assert "a.jsonl" not in str(refused.value) and "b.jsonl" not in str(refused.value)
    assert json.loads(urls.urls_variable([one, one, PRESIGNED])) == sorted([one, PRESIGNED])  # one URL twice: itself


def test_the_scheme_table_makes_the_url_check_and_the_error_of_another_scheme():
    assert [scheme.prefix for scheme in urls.SCHEMES] == list(urls.PREFIXES)
    assert all(urls.is_url(f"{prefix}x/y") for prefix in urls.PREFIXES) and not urls.is_url("ftp://x/y")
    assert urls.scheme_of("http://h/x").module == "https"
    with pytest.raises(TokenmillError) as refused:
        urls.scheme_of("ftp://user:pw@host/a.jsonl")
    assert str(refused.value) == ("ftp://***@host/a.jsonl: not a URL tokenmill reads (give s3://, gs://, https://, "
                                  "http:// or hf://)")


def test_the_help_and_the_urls_found_in_a_message_come_from_the_scheme_table(monkeypatch):
    help_text = urls.schemes_help()
    assert [part.split(" ")[0] for part in help_text.split("; ")] == list(urls.PREFIXES)
    assert "s3:// an object in S3 or an S3-compatible store (globs allowed)" in help_text
    assert "https:// a file on a web server;" in help_text  # no globs: a web server has no listing
    planted = (*urls.SCHEMES, urls.Scheme("az://", "az", "a blob in Azure", True, "ETag"))
    monkeypatch.setattr(urls, "SCHEMES", planted)
    monkeypatch.setattr(urls, "PREFIXES", tuple(scheme.prefix for scheme in planted))
    assert urls.schemes_help().endswith("; az:// a blob in Azure (globs allowed)")
    assert urls.listed().endswith("hf:// or az://") and urls.is_url("az://c/b.jsonl")
