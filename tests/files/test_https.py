"""``https://`` (and ``http://``) inputs, against a static file server with Range support on 127.0.0.1
(tests/files/loopback_servers.py: the standard library's ``http.server``, started per test). The same client
code serves both schemes (urllib); the loopback server speaks plain HTTP, so the URLs here are ``http://``.
"""

from __future__ import annotations

import gzip
import hashlib

import pytest
from fault_proxy import FAULTS, FaultProxy
from loopback_servers import RangeServer, nothing_listening

from url_inputs import (CHAT, FAULTED, PACK, assert_a_broken_get_resumes, assert_a_get_broken_every_time_fails,
                        pack_equal, sft_equal, tokenmill)

from conftest import MIXED_JSONL
from tokenmill.files import https, objects, remote, urls

@pytest.fixture(autouse=True)
def fresh_pins():
    objects._pinned.clear()
    yield
    objects._pinned.clear()


def _parquet(path) -> bytes:
    pytest.importorskip("pyarrow", reason="the [parquet] extra is not installed")
    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table({"text": [f"row {i}: {'word ' * i}" for i in range(300)]})
    pyarrow.parquet.write_table(table, path, row_group_size=100)
    return path.read_bytes()


def test_files_on_a_web_server_pack_to_the_bytes_of_the_same_files_on_disk(tmp_path, capsys):
    from backports import zstd

    text = MIXED_JSONL.read_bytes()
    local = {"plain.jsonl": text, "gz.jsonl.gz": gzip.compress(text), "zst.jsonl.zst": zstd.compress(text),
             "rows.parquet": _parquet(tmp_path / "rows.parquet")}
    for name, content in local.items():
        (tmp_path / name).write_bytes(content)
    names = sorted(local)
    with RangeServer({f"/raw/{name}": content for name, content in local.items()}) as server:
        urls = [f"{server.url}/raw/{name}" for name in names]
        sidecar, _ = pack_equal(tmp_path, [tmp_path / name for name in names], urls, capsys, "--on-bad-line", "skip")
        parquet_reads = [headers.get("Range") for method, path, headers in server.requests
                         if method == "GET" and path == "/raw/rows.parquet"]
    # Parquet by ranged reads (the footer first, then column chunks), not one GET of the whole file
    assert parquet_reads and all(parquet_reads) and parquet_reads[0] != f"bytes=0-{len(local['rows.parquet']) - 1}"
    sources = sidecar["sources"]
    assert [source["path"] for source in sources] == urls
    for source, name in zip(sources, names):
        assert source["sha256"] == hashlib.sha256(local[name]).hexdigest()
        assert source["object"] == {"etag": f'"{hashlib.md5(local[name]).hexdigest()}"', "version_id": None,
                                    "size": len(local[name]), "last_modified": server.modified}


def test_a_byte_range_shard_reads_its_range_through_the_raw_index_and_verify_finds_a_replaced_file(tmp_path,
                                                                                                   capsys):
    with RangeServer({"/mixed.jsonl": MIXED_JSONL.read_bytes()}) as server:
        url = f"{server.url}/mixed.jsonl"
        assert tokenmill("index", url, "-o", tmp_path / "web.idx", capsys=capsys)[0] == 0
        assert tokenmill("index", MIXED_JSONL, "-o", tmp_path / "local.idx", capsys=capsys)[0] == 0
        assert (tmp_path / "web.idx").read_bytes() == (tmp_path / "local.idx").read_bytes()
        middle = MIXED_JSONL.stat().st_size // 2
        for where, source in (("web", url), ("local", MIXED_JSONL)):
            code, said = tokenmill("pack", source, "--index", tmp_path / f"{where}.idx", "--byte-range",
                                   f"{middle}:", *PACK, "-o", tmp_path / f"{where}.pbin", "--on-bad-line", "skip",
                                   capsys=capsys)
            assert code == 0, said
        assert (tmp_path / "web.pbin").read_bytes() == (tmp_path / "local.pbin").read_bytes()
        ranges = [headers.get("Range") for _, _, headers in server.requests]
        assert ranges[-1].startswith("bytes=") and int(ranges[-1][6:].partition("-")[0]) >= middle  # its range only

        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "whole.pbin", "--on-bad-line", "skip",
                               capsys=capsys)
        assert code == 0, said
        assert tokenmill("verify", tmp_path / "whole.pbin", capsys=capsys)[0] == 0
        before = objects.object_identity(url)
        server.files["/mixed.jsonl"] = MIXED_JSONL.read_bytes() + b'{"text": "one more"}\n'
        assert objects.object_identity(url).tag != before.tag  # a changed input for the plan
        code, said = tokenmill("verify", tmp_path / "whole.pbin", capsys=capsys)
        assert code == 1 and f"source {url} has changed since it was packed (ETag" in said


def test_a_file_replaced_during_a_read_stops_it_with_one_line():
    with RangeServer({"/a.jsonl": b'{"text": "old"}\n' * 1000}) as server:
        url = f"{server.url}/a.jsonl"
        with objects.open_object(objects.pin(url)) as stream:
            assert stream.read(100) == (b'{"text": "old"}\n' * 7)[:100]
            server.files["/a.jsonl"] = b'{"text": "new"}\n' * 1000
            stream._body.close()  # the connection drops: the read resumes pinned to the first ETag
            with pytest.raises(objects.TokenmillError, match=rf"^{url}: the file changed during the read"):
                stream.read()


def test_a_missing_file_and_a_refused_connection_are_one_line_each(tmp_path, capsys):
    with RangeServer({}) as server:
        url = f"{server.url}/none.jsonl"
        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
        assert (code, said) == (1, f"tokenmill: error: {url}: no such file (HTTP 404)\n")
    with nothing_listening() as address:
        url = f"{address}/a.jsonl"
        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert (code, said) == (1, f"tokenmill: error: {url}: the server {address[7:]} does not answer (3 attempts: "
                               f"ConnectionRefusedError) while reading its metadata\n")
    assert list(tmp_path.iterdir()) == []


def test_a_redirect_is_followed_and_a_redirect_loop_ends_in_one_line(tmp_path, capsys):
    with RangeServer({"/raw/mixed.jsonl": MIXED_JSONL.read_bytes()}) as server:
        server.redirects = {"/moved.jsonl": "/raw/mixed.jsonl", "/a.jsonl": "/b.jsonl", "/b.jsonl": "/a.jsonl"}
        pack_equal(tmp_path, [MIXED_JSONL], [f"{server.url}/moved.jsonl"], capsys, "--on-bad-line", "skip")
        url = f"{server.url}/a.jsonl"
        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "out" / "x.pbin", capsys=capsys)
    assert (code, said) == (1, f"tokenmill: error: {url}: the server's redirects go round in a loop (HTTP 302; given "
                               f"up after 10 redirects or 4 to one address) while reading its metadata\n")
    assert not (tmp_path / "out").exists()


# ---- A server that ignores Range (python -m http.server): every GET answered 200 with the whole file


def _ignored(start: int) -> str:
    return (f"the server ignores range requests (HTTP 200 to a Range from byte {start}), so it cannot be read in "
            f"parts (Parquet, a byte-range shard) nor resume a dropped read; download it and give the local file")


def test_a_whole_jsonl_file_packs_from_a_server_that_ignores_range_as_the_local_file(tmp_path, capsys):
    from backports import zstd

    text = MIXED_JSONL.read_bytes()
    local = {"plain.jsonl": text, "gz.jsonl.gz": gzip.compress(text), "zst.jsonl.zst": zstd.compress(text)}
    for name, content in local.items():
        (tmp_path / name).write_bytes(content)
    names = sorted(local)
    with RangeServer({f"/{name}": content for name, content in local.items()}, ranges=False) as server:
        urls = [f"{server.url}/{name}" for name in names]
        sidecar, _ = pack_equal(tmp_path, [tmp_path / name for name in names], urls, capsys, "--on-bad-line", "skip")
        gets = [headers.get("Range") for method, _, headers in server.requests if method == "GET"]
    assert "bytes=0-7" in gets and all(rng.startswith("bytes=0-") for rng in gets)  # the sniff, then the stream
    for source, name in zip(sidecar["sources"], names):  # pinned as from a server with ranges
        assert source["object"] == {"etag": f'"{hashlib.md5(local[name]).hexdigest()}"', "version_id": None,
                                    "size": len(local[name]), "last_modified": server.modified}


def test_a_server_that_ignores_range_is_refused_in_one_line_for_parquet_and_a_shard(tmp_path, capsys):
    files = {"/rows.parquet": _parquet(tmp_path / "rows.parquet"), "/mixed.jsonl": MIXED_JSONL.read_bytes()}
    (tmp_path / "rows.parquet").unlink()
    assert tokenmill("index", MIXED_JSONL, "-o", tmp_path / "m.idx", capsys=capsys)[0] == 0
    middle = MIXED_JSONL.stat().st_size // 2
    with RangeServer(files, ranges=False) as server:
        parquet, jsonl = f"{server.url}/rows.parquet", f"{server.url}/mixed.jsonl"
        for url, options in ((parquet, ()), (jsonl, ("--index", tmp_path / "m.idx", "--byte-range", f"{middle}:"))):
            code, said = tokenmill("pack", url, *options, *PACK, "-o", tmp_path / "out" / "x.pbin", capsys=capsys)
            assert code == 1 and said.startswith(f"tokenmill: error: {url}: the server ignores range requests")
            assert said.count("\n") == 1, said
        start = int(said.partition("from byte ")[2].partition(")")[0])
        assert start >= middle and said == f"tokenmill: error: {jsonl}: {_ignored(start)}\n"  # its range's start
    assert list((tmp_path / "out").iterdir()) == []  # nothing written


def test_a_file_replaced_on_a_server_that_ignores_range_stops_its_read_on_the_pinned_etag():
    with RangeServer({"/a.jsonl": b'{"text": "old"}\n' * 1000}, ranges=False) as server:
        url = f"{server.url}/a.jsonl"
        pinned = objects.pin(url)
        server.files["/a.jsonl"] = b'{"text": "new"}\n' * 1000  # the same size: the ETag tells
        with pytest.raises(objects.TokenmillError, match=rf"^{url}: the file changed during the read"):
            objects.read_object_range(pinned, 0, 100)


def test_a_read_dropped_mid_body_from_a_server_that_ignores_range_fails_in_one_line_not_a_loop(monkeypatch,
                                                                                                tmp_path, capsys):
    with RangeServer({"/raw/mixed.jsonl": FAULTED.read_bytes()}, ranges=False) as server, \
            FaultProxy(server.url) as proxy:
        monkeypatch.setattr(https, "READ_SECONDS", 1)
        monkeypatch.setattr(remote, "PIECE_BYTES", 4096)
        url = f"{proxy.url}/raw/mixed.jsonl"
        proxy.inject("truncate", after=6000, times=1000)  # (the GET sniffing the kind reads 8 bytes, then closes)
        output = tmp_path / "out" / "url.pbin"
        output.parent.mkdir()
        code, said = tokenmill("pack", url, *PACK, "--on-bad-line", "skip", "-o", output, capsys=capsys)
        assert (code, said) == (1, f"tokenmill: error: {url}: {_ignored(6000)}\n")
        assert len([exchange for exchange in proxy.exchanges if exchange.method == "GET"]) == 3  # sniff, read, resume
    assert list(output.parent.iterdir()) == []


def test_sft_reads_a_file_on_a_web_server_as_the_local_file(tmp_path, capsys):
    with RangeServer({"/chat.jsonl": CHAT.read_bytes()}) as server:
        source = sft_equal(tmp_path, f"{server.url}/chat.jsonl", capsys)
    assert source["object"]["last_modified"] == server.modified and source["bytes"] == CHAT.stat().st_size


def test_the_plan_of_a_config_with_a_file_on_a_web_server_names_its_etag_and_date_and_sees_them_change():
    from conftest import GPT2
    from tokenmill.config import validate_config
    from tokenmill.plan import Plan

    with RangeServer({"/a.jsonl": MIXED_JSONL.read_bytes()}) as server:
        url = f"{server.url}/a.jsonl"
        config = {"tokenizers": {"gpt2": {"path": str(GPT2), "eod": "<|endoftext|>"}},
                  "datasets": {"web": {"tokenizer": "gpt2", "inputs": [url]}}}
        before = Plan(validate_config(config, "my.yaml"))
        assert (before.units.unit_inputs("web"), before.units.unit_local_inputs("web")) == ([url], [])  # read by URL
        identity = before.commands.file_identity("web")
        assert identity == (f"{url}: {MIXED_JSONL.stat().st_size} bytes, ETag "
                            f'"{hashlib.md5(MIXED_JSONL.read_bytes()).hexdigest()}" Last-Modified {server.modified}')
        server.modified = "Thu, 22 Oct 2026 07:28:00 GMT"  # the same bytes, touched: a changed input
        objects._pinned.clear()
        assert Plan(validate_config(config, "my.yaml")).commands.file_identity("web") != identity


# ---- Faults mid-GET: a loopback proxy (tests/fault_proxy.py) between tokenmill's client and the server


@pytest.fixture
def proxied(monkeypatch):
    """A :class:`FaultProxy` in front of a web server holding tests/data/mixed.jsonl at ``proxy.file_url`` (a URL
    through the proxy); tokenmill reads response bodies in 4 KiB pieces instead of 8 MiB, and finds a stall out
    after 1 s instead of 20."""
    with RangeServer({"/raw/mixed.jsonl": FAULTED.read_bytes()}) as server, FaultProxy(server.url) as proxy:
        monkeypatch.setattr(https, "READ_SECONDS", 1)
        monkeypatch.setattr(remote, "PIECE_BYTES", 4096)
        proxy.file_url = f"{proxy.url}/raw/mixed.jsonl"
        yield proxy


@pytest.mark.parametrize("fault", FAULTS)
def test_a_get_broken_mid_body_resumes_from_the_last_byte_received_to_the_same_bytes(proxied, fault, tmp_path,
                                                                                      capsys):
    assert_a_broken_get_resumes(proxied, proxied.file_url, fault, tmp_path, capsys)


@pytest.mark.parametrize("fault", FAULTS)
def test_a_get_that_breaks_every_time_fails_in_one_line_naming_the_file_with_nothing_written(proxied, fault,
                                                                                              tmp_path, capsys):
    assert_a_get_broken_every_time_fails(proxied, proxied.file_url, fault, tmp_path, capsys)


# ---- Secrets in a URL: user info (basic authentication) and a presigned query, sent and written nowhere else


def _written(folder) -> bytes:
    return b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())


def test_a_url_with_user_and_password_authenticates_and_names_neither(tmp_path, capsys):
    text = MIXED_JSONL.read_bytes()
    with RangeServer({"/a.jsonl": text}, credentials=("alice", "Pa55word!")) as server:
        url = server.url.replace("http://", "http://alice:Pa55word%21@") + "/a.jsonl"
        name = server.url.replace("http://", "http://***@") + "/a.jsonl"
        sidecar, said = pack_equal(tmp_path / "pack", [MIXED_JSONL], [url], capsys, "--on-bad-line", "skip")
        assert sidecar["sources"][0]["path"] == name
        assert all(headers.get("Authorization") for _, _, headers in server.requests)  # basic auth, every request
        assert all("alice" not in path for _, path, _ in server.requests)  # never in the address
        wrong = url.replace("Pa55word%21", "wrong")
        code, refused = tokenmill("pack", wrong, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    # one true line (it was "the server does not answer (gaierror)", with the password in it)
    assert (code, refused) == (1, f"tokenmill: error: {name}: permission denied (HTTP 401) while reading its "
                                  f"metadata\n")
    for output in (said.encode(), _written(tmp_path)):
        assert b"Pa55word" not in output and b"alice" not in output


class _KeyServer(RangeServer):
    """A download endpoint that names the file by a query parameter, ``/dl?key=NAME``: key is a secret word."""

    def answer(self, handler, head: bool) -> None:
        from urllib.parse import parse_qs, urlsplit

        data = self.files.get("/" + parse_qs(urlsplit(handler.path).query).get("key", [""])[0])
        if data is None:
            return self.reply(handler, 404, b"not found", head)
        self.serve_bytes(handler, data, head, f'"{hashlib.md5(data).hexdigest()}"', self.modified)


def test_two_urls_that_differ_only_in_a_hidden_value_are_refused_never_one_read_for_both(tmp_path, capsys):
    """``pack URL?key=a URL?key=b --allow-duplicate-inputs`` packed b twice and a never, exit 0: both have the name
    ``URL?key=***``, which maps back to the URL given last. Refused in one line before anything is read."""
    lines = MIXED_JSONL.read_bytes().splitlines(keepends=True)
    with _KeyServer({"/a.jsonl": b"".join(lines[:5]), "/b.jsonl": b"".join(lines[5:])}) as server:
        one, other = f"{server.url}/dl?key=a.jsonl", f"{server.url}/dl?key=b.jsonl"
        code, refused = tokenmill("pack", one, other, "--allow-duplicate-inputs", *PACK, "-o", tmp_path / "x.pbin",
                                  capsys=capsys)
    assert code == 1 and refused.startswith(f"tokenmill: error: {server.url}/dl?key=***: two different URLs have "
                                            f"this name once their secrets are hidden"), refused
    assert not server.requests and not list(tmp_path.iterdir())


def test_a_presigned_url_reads_and_every_output_names_it_without_its_signature(tmp_path, capsys, monkeypatch):
    query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAPLANTED%2Fus-east-1&X-Amz-Signature=feedc0ffee42"
    text = MIXED_JSONL.read_bytes()
    with RangeServer({"/a.jsonl": text}, query=query) as server:
        url = f"{server.url}/a.jsonl?{query}"
        name = f"{server.url}/a.jsonl?X-Amz-Algorithm=***&X-Amz-Credential=***&X-Amz-Signature=***"
        sidecar, said = pack_equal(tmp_path / "pack", [MIXED_JSONL], [url], capsys, "--on-bad-line", "skip")
        assert sidecar["sources"][0]["path"] == name
        code, refused = tokenmill("pack", url.replace("feedc0ffee42", "badc0ffee000"), *PACK, "-o",
                                  tmp_path / "x.pbin", capsys=capsys)
        assert (code, refused) == (1, f"tokenmill: error: {name}: permission denied (HTTP 403) while reading its "
                                      f"metadata\n")
        code, missing = tokenmill("pack", url.replace("a.jsonl", "b.jsonl"), *PACK, "-o", tmp_path / "x.pbin",
                                  capsys=capsys)
        assert code == 1 and "AKIAPLANTED" not in missing and "feedc0ffee42" not in missing
        # verify in a new process: the sidecar's name alone cannot be read; the full URL given, it is
        monkeypatch.setattr(urls, "_full_urls", {})
        objects._pinned.clear()
        code, unread = tokenmill("verify", tmp_path / "pack/url.pbin", capsys=capsys)
        assert code == 1 and f"{name}: a URL with its secrets redacted (***); give the full URL" in unread, unread
        code, verified = tokenmill("verify", tmp_path / "pack/url.pbin", "--inputs", url, capsys=capsys)
        assert code == 0, verified
        said += unread + verified
    for output in (said.encode(), _written(tmp_path)):
        assert b"AKIAPLANTED" not in output and b"feedc0ffee42" not in output


def test_a_file_replaced_after_the_plan_looked_is_refused_by_its_pinned_job_in_one_line(tmp_path, capsys):
    with RangeServer({"/a.jsonl": b'{"text": "planned"}\n'}) as server:
        url = f"{server.url}/a.jsonl"
        planned = objects.object_identity(url).tag  # what the workflow's params and --pin carry
        server.files["/a.jsonl"] = b'{"text": "replaced since"}\n'
        now = objects.object_identity(url).tag
        code, said = tokenmill("pack", url, "--pin", url, planned, *PACK, "-o", tmp_path / "a.pbin", capsys=capsys)
    assert (code, said) == (1, f"tokenmill: error: {url}: changed since the workflow planned it (then {planned}; now "
                               f"{now}); nothing was written, run the workflow again to plan the new version\n")
    assert list(tmp_path.iterdir()) == []


# ---- A server that drips: the body whole, but 32 bytes every 0.1 s (320 bytes/s). The minimum rate is made
# 1,000 bytes/s over windows of 0.5 s (instead of 10,000 over 60 s), so each test takes a second or two.


@pytest.fixture
def slow_minimum(proxied, monkeypatch):
    monkeypatch.setattr(remote, "MIN_BYTES_PER_SECOND", 1000)
    monkeypatch.setattr(remote, "RATE_WINDOW_SECONDS", 0.5)
    return proxied


def test_a_get_that_drips_after_a_fast_start_is_cut_a_window_later_and_resumed_to_the_same_bytes(slow_minimum,
                                                                                                  tmp_path, capsys):
    # 5,000 bytes at once: the first window is well over the minimum; the next one, the drip alone, is not
    slow_minimum.inject("drip", after=5000, drip_bytes=32, drip_seconds=0.1)
    pack_equal(tmp_path, [FAULTED], [slow_minimum.file_url], capsys, "--on-bad-line", "skip")
    ranges = [exchange.headers.get("range") for exchange in slow_minimum.exchanges
              if exchange.method == "GET" and exchange.headers.get("range") != "bytes=0-7"]
    last = FAULTED.stat().st_size - 1
    assert len(ranges) == 2 and ranges[0] == f"bytes=0-{last}" and ranges[1].endswith(f"-{last}"), ranges
    assert 5000 < int(ranges[1].removeprefix("bytes=").partition("-")[0]) < last  # after what the slow one gave


def test_a_get_that_always_drips_fails_in_one_line_naming_the_byte_the_rate_and_the_minimum(slow_minimum,
                                                                                             tmp_path, capsys):
    import re

    slow_minimum.inject("drip", after=100, times=1000, drip_bytes=32, drip_seconds=0.1)
    url = slow_minimum.file_url
    output = tmp_path / "out" / "url.pbin"
    output.parent.mkdir()
    code, said = tokenmill("pack", url, *PACK, "--on-bad-line", "skip", "-o", output, capsys=capsys)
    assert code == 1 and re.fullmatch(rf"tokenmill: error: {re.escape(url)}: too slow: (\d+) bytes/s over the last "
                                      rf"[\d.]+ s at byte (\d+) of 9907, under the minimum of 1,000 bytes/s "
                                      rf"\(3 attempts\); nothing was written\n", said), said
    rate, _, byte = re.search(r"too slow: (\d+) bytes/s over the last ([\d.]+) s at byte (\d+)", said).groups()
    assert 100 <= int(rate) < 1000 and 300 <= int(byte) < 9907  # each connection's bytes kept: 100 fast, then drips
    assert len(slow_minimum.faults_hit()) == 3 and list(output.parent.iterdir()) == []
