"""files/objects: inputs by URL through the one interface every scheme shares — packed to the bytes of the same
files on disk, byte-range shards by ranged GETs, globs, a replaced object found by verify and the workflow, a
broken GET resumed — against a real S3 API server on 127.0.0.1 (the scheme's own cases: test_s3; the others:
test_gs, test_https, test_hf).

The server is moto's (``moto_server``, from the ``[test]`` extra; tests/files/moto_server.py), started per module
on a free loopback port and stopped after: no traffic leaves the machine. tokenmill reaches it as any
S3-compatible store, through ``AWS_ENDPOINT_URL`` and the ``AWS_*`` credentials, in-process (``cli.main``).
"""

from __future__ import annotations

import gzip
import hashlib

import pytest

from conftest import MIXED_JSONL
from fault_proxy import FAULTS, FaultProxy
from moto_server import SECRET, moto_endpoint, s3_bucket  # noqa: F401 (fixtures)
from tokenmill import cli
from tokenmill.files import objects, remote, s3 as s3_scheme
from tokenmill.formats.pbin import read_sidecar
from url_inputs import (CHAT, FAULTED, PACK, assert_a_broken_get_resumes, assert_a_get_broken_every_time_fails,
                        assert_a_local_builds_bytes, pack_equal, sft_equal, tokenmill)

boto3 = pytest.importorskip("boto3", reason="the [s3] extra is not installed")


def test_objects_pack_to_the_bytes_of_the_same_files_on_disk_plain_gzip_zstd_and_parquet(s3, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    import pyarrow
    import pyarrow.parquet
    from backports import zstd

    text = MIXED_JSONL.read_bytes()
    local = {"plain.jsonl": text, "gz.jsonl.gz": gzip.compress(text), "zst.jsonl.zst": zstd.compress(text)}
    table = pyarrow.table({"text": [f"row {i}: {'word ' * i}" for i in range(300)]})
    pyarrow.parquet.write_table(table, tmp_path / "rows.parquet", row_group_size=100)
    local["rows.parquet"] = (tmp_path / "rows.parquet").read_bytes()
    for name, content in local.items():
        (tmp_path / name).write_bytes(content)
        s3.put_object(Bucket=s3.bucket, Key=f"raw/{name}", Body=content)
    names = sorted(local)
    sidecar, said = pack_equal(tmp_path, [tmp_path / name for name in names], [f"s3://{s3.bucket}/raw/*"], capsys,
                               "--on-bad-line", "skip")
    sources = sidecar["sources"]
    assert [source["path"] for source in sources] == [f"s3://{s3.bucket}/raw/{name}" for name in names]
    for source, name in zip(sources, names):
        assert source["sha256"] == hashlib.sha256(local[name]).hexdigest()
        assert source["object"] == {"etag": f'"{hashlib.md5(local[name]).hexdigest()}"', "version_id": None,
                                    "size": len(local[name])}
    local_sources = read_sidecar(tmp_path / "local.pbin")["sources"]
    assert [source["documents"] for source in sources] == [source["documents"] for source in local_sources]
    assert SECRET not in (tmp_path / "url.pbin.meta.json").read_text() and SECRET not in said
    capsys.readouterr()
    assert cli.main(["inspect", str(tmp_path / "url.pbin")]) == 0
    shown = capsys.readouterr().out
    assert f"source: s3://{s3.bucket}/raw/" in shown and "not found" not in shown  # URLs: not looked up on disk


def test_a_byte_range_shard_of_an_object_is_read_with_a_ranged_get_through_its_raw_index(s3, tmp_path, capsys):
    s3.put_object(Bucket=s3.bucket, Key="raw/mixed.jsonl", Body=FAULTED.read_bytes())
    url = f"s3://{s3.bucket}/raw/mixed.jsonl"
    assert tokenmill("index", url, capsys=capsys) == (1, f"tokenmill: error: {url}: give -o for an object's raw "
                                                         f"index (it is written here, not in the bucket)\n")
    assert tokenmill("index", url, "-o", tmp_path / "s3.idx", capsys=capsys)[0] == 0
    assert tokenmill("index", MIXED_JSONL, "-o", tmp_path / "local.idx", capsys=capsys)[0] == 0
    assert (tmp_path / "s3.idx").read_bytes() == (tmp_path / "local.idx").read_bytes()
    middle = MIXED_JSONL.stat().st_size // 2
    for name, byte_range in (("a", f"0:{middle}"), ("b", f"{middle}:")):
        for where, source in (("s3", url), ("local", MIXED_JSONL)):
            code, said = tokenmill("pack", source, "--index", tmp_path / f"{where}.idx", "--byte-range", byte_range,
                                   *PACK, "-o", tmp_path / f"{where}-{name}.pbin", "--on-bad-line", "skip",
                                   capsys=capsys)
            assert code == 0, said
        assert (tmp_path / f"s3-{name}.pbin").read_bytes() == (tmp_path / f"local-{name}.pbin").read_bytes()
        s3_source, local_source = (read_sidecar(tmp_path / f"{where}-{name}.pbin")["sources"][0]
                                   for where in ("s3", "local"))
        for key in ("byte_range", "first_line", "sha256", "lines", "documents"):
            assert s3_source[key] == local_source[key], key

    code, said = tokenmill("pack", url, "--byte-range", "0:100", *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert code == 1 and said.strip().endswith("a byte range of an object needs its raw index (--index; "
                                               "tokenmill index URL -o FILE.idx writes it)")


def test_verify_finds_an_object_replaced_under_the_same_key(s3, tmp_path, capsys):
    s3.put_object(Bucket=s3.bucket, Key="raw/mixed.jsonl", Body=FAULTED.read_bytes())
    url = f"s3://{s3.bucket}/raw/mixed.jsonl"
    assert tokenmill("pack", url, *PACK, "-o", tmp_path / "a.pbin", "--on-bad-line", "skip", capsys=capsys)[0] == 0
    code, said = tokenmill("verify", tmp_path / "a.pbin", capsys=capsys)
    assert code == 0, said
    # the same bytes uploaded in parts: another ETag, the same sha256, no change
    upload = s3.create_multipart_upload(Bucket=s3.bucket, Key="raw/mixed.jsonl")
    part = s3.upload_part(Bucket=s3.bucket, Key="raw/mixed.jsonl", UploadId=upload["UploadId"], PartNumber=1,
                          Body=MIXED_JSONL.read_bytes())
    s3.complete_multipart_upload(Bucket=s3.bucket, Key="raw/mixed.jsonl", UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
    assert objects.object_identity(url).etag != read_sidecar(tmp_path / "a.pbin")["sources"][0]["object"]["etag"]
    code, said = tokenmill("verify", tmp_path / "a.pbin", capsys=capsys)
    assert code == 0, said
    s3.put_object(Bucket=s3.bucket, Key="raw/mixed.jsonl", Body=MIXED_JSONL.read_bytes() + b'{"text": "one more"}\n')
    code, said = tokenmill("verify", tmp_path / "a.pbin", capsys=capsys)
    assert code == 1 and f"source {url} has changed since it was packed (ETag" in said


def test_globs_stay_within_one_level_unless_doubled(s3):
    for key in ("raw/a.jsonl", "raw/b.jsonl", "raw/sub/c.jsonl", "raw/d.txt", "other/e.jsonl"):
        s3.put_object(Bucket=s3.bucket, Key=key, Body=b"{}\n")
    base = f"s3://{s3.bucket}/"
    assert objects.expand_url(f"{base}raw/*.jsonl") == [f"{base}raw/a.jsonl", f"{base}raw/b.jsonl"]
    assert objects.expand_url(f"{base}raw/**.jsonl") == [f"{base}raw/a.jsonl", f"{base}raw/b.jsonl",
                                                         f"{base}raw/sub/c.jsonl"]
    assert objects.expand_url(f"{base}raw/[ab].jsonl") == [f"{base}raw/a.jsonl", f"{base}raw/b.jsonl"]
    assert objects.expand_url(f"{base}*/?.jsonl") == [f"{base}other/e.jsonl", f"{base}raw/a.jsonl",
                                                      f"{base}raw/b.jsonl"]
    assert objects.expand_url(f"{base}raw/d.txt") == [f"{base}raw/d.txt"]  # no wildcard: no listing


def test_the_workflow_plans_objects_by_listing_and_reruns_a_pack_only_when_an_object_is_replaced(s3, workflow_dir):
    import yaml

    from conftest import DEMO_JSONL, run_snakemake

    half = len(DEMO_JSONL.read_bytes().splitlines(keepends=True)) // 2
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    parts = {"raw/part-0.jsonl": b"".join(lines[:half]), "raw/part-1.jsonl": gzip.compress(b"".join(lines[half:]))}
    for key, content in parts.items():
        s3.put_object(Bucket=s3.bucket, Key=key, Body=content)
        (workflow_dir / "data" / key).write_bytes(content)
    config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
    s3.put_object(Bucket=s3.bucket, Key="sft/chat.jsonl", Body=(workflow_dir / "data/raw/chat.jsonl").read_bytes())
    config["sft"]["chat"]["inputs"] = [f"s3://{s3.bucket}/sft/*.jsonl"]
    config["datasets"] = {"local": {"inputs": ["data/raw/part-*.jsonl"], "tokenizer": "gpt2"},
                          "remote": {"inputs": [f"s3://{s3.bucket}/raw/part-*.jsonl"], "tokenizer": "gpt2"},
                          "one": {"inputs": [f"s3://{s3.bucket}/raw/part-0.jsonl"], "tokenizer": "gpt2"}}
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    targets = [f"data/megatron/{name}_text_document.bin" for name in ("local", "remote")]
    run_snakemake(workflow_dir)  # everything: verify and report included
    for stamp in ("remote", "one", "sft/chat"):
        assert (workflow_dir / f"data/verified/{stamp}.ok").exists(), stamp
    for built in ("packed/{}.pbin", "megatron/{}_text_document.bin", "megatron/{}_text_document.idx"):
        remote, local = (workflow_dir / "data" / built.format(name) for name in ("remote", "local"))
        assert remote.read_bytes() == local.read_bytes(), built
    sources = read_sidecar(workflow_dir / "data/packed/remote.pbin")["sources"]
    assert [source["path"] for source in sources] == [f"s3://{s3.bucket}/raw/part-{k}.jsonl" for k in (0, 1)]

    dry = run_snakemake(workflow_dir, "-n", *targets)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    s3.put_object(Bucket=s3.bucket, Key="raw/part-0.jsonl", Body=parts["raw/part-0.jsonl"] + lines[0])
    rerun = run_snakemake(workflow_dir, "-n", *targets)
    planned = rerun.stdout + rerun.stderr
    assert "remote.part0" in planned and "local.part" not in planned, planned


def _objects_under(s3, prefix: str) -> dict[str, bytes]:
    """Every object below ``prefix/`` of the test bucket, by its key's rest."""
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=f"{prefix}/"):
        for entry in page.get("Contents", []):
            found[entry["Key"][len(prefix) + 1:]] = s3.get_object(Bucket=s3.bucket, Key=entry["Key"])["Body"].read()
    return found


def test_the_workflow_with_snakemakes_storage_flags_leaves_a_local_builds_bytes_under_the_prefix(s3, built_demo):
    """`snakemake --default-storage-provider s3 --default-storage-prefix s3://bucket/run`: every output an
    object under the prefix, the data and caches object for object a local build's, reruns incremental."""
    import yaml

    from conftest import planned_jobs, run_snakemake

    config = yaml.safe_load((built_demo / "config/config.yaml").read_text())
    storage = ("--default-storage-provider", "s3", "--default-storage-prefix", f"s3://{s3.bucket}/run")
    built = run_snakemake(built_demo, *storage)
    assert f"under s3://{s3.bucket}/run/" in built.stdout, built.stdout

    stored = _objects_under(s3, "run")
    assert_a_local_builds_bytes(stored, built_demo)
    assert not any(SECRET.encode() in content for content in stored.values())

    dry = run_snakemake(built_demo, *storage, "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr
    config["sampling"]["seq_lengths"] = [512, 1024]
    (built_demo / "config/config.yaml").write_text(yaml.safe_dump(config))
    assert planned_jobs(built_demo, *storage) == {"sample_index", "verify", "report_dataset", "all"}


def test_sft_from_an_object_equals_the_local_file_and_records_its_version(s3, tmp_path, capsys):
    chat = CHAT.read_bytes()
    s3.put_object(Bucket=s3.bucket, Key="chat/part-0.jsonl", Body=chat)
    source = sft_equal(tmp_path, f"s3://{s3.bucket}/chat/*", capsys)
    head = s3.head_object(Bucket=s3.bucket, Key="chat/part-0.jsonl")
    assert source["path"] == f"s3://{s3.bucket}/chat/part-0.jsonl" and source["bytes"] == len(chat)
    assert source["sha256"] == hashlib.sha256(chat).hexdigest() and source["object"]["etag"] == head["ETag"]
    code, said = tokenmill("verify", tmp_path / "url.pbin", capsys=capsys)
    assert code == 0, said
    s3.put_object(Bucket=s3.bucket, Key="chat/part-0.jsonl", Body=chat + chat[:100])
    code, said = tokenmill("verify", tmp_path / "url.pbin", capsys=capsys)
    assert code == 1 and f"s3://{s3.bucket}/chat/part-0.jsonl" in said, said


# ---- Faults mid-GET: a loopback proxy (tests/fault_proxy.py) between tokenmill's client and the server


@pytest.fixture
def proxied_s3(s3, endpoint, monkeypatch):
    """The bucket of ``s3`` holding tests/data/mixed.jsonl (9,907 bytes) at ``s3.url``; tokenmill's client reaches
    the server through a :class:`FaultProxy` (``s3.proxy``; the test's own client goes direct), reads response
    bodies in 4 KiB pieces instead of 8 MiB, and finds a stall out after 1 s instead of 20."""
    s3.put_object(Bucket=s3.bucket, Key="raw/mixed.jsonl", Body=FAULTED.read_bytes())
    s3.url = f"s3://{s3.bucket}/raw/mixed.jsonl"
    with FaultProxy(endpoint) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        monkeypatch.setattr(s3_scheme, "READ_SECONDS", 1)
        monkeypatch.setattr(remote, "PIECE_BYTES", 4096)
        s3_scheme._client.cache_clear()
        s3.proxy = proxy
        yield s3
    s3_scheme._client.cache_clear()


@pytest.mark.parametrize("fault", FAULTS)
def test_a_get_broken_mid_body_resumes_from_the_last_byte_received_to_the_same_bytes(proxied_s3, fault, tmp_path,
                                                                                      capsys):
    assert_a_broken_get_resumes(proxied_s3.proxy, proxied_s3.url, fault, tmp_path, capsys)


def test_a_parquet_object_read_by_ranges_resumes_each_broken_range(proxied_s3, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table({"text": [f"row {i}: {'word ' * (i % 50)}" for i in range(2000)]})
    pyarrow.parquet.write_table(table, tmp_path / "rows.parquet", row_group_size=500, compression="none")
    proxied_s3.put_object(Bucket=proxied_s3.bucket, Key="raw/rows.parquet",
                          Body=(tmp_path / "rows.parquet").read_bytes())
    assert tokenmill("pack", tmp_path / "rows.parquet", *PACK, "-o", tmp_path / "local.pbin", capsys=capsys)[0] == 0
    proxied_s3.proxy.inject("reset", after=6000, times=2)  # the first two ranged GETs of over 6,000 bytes...
    proxied_s3.proxy.inject("truncate", after=6000, times=2)  # ...then the next two
    code, said = tokenmill("pack", f"s3://{proxied_s3.bucket}/raw/rows.parquet", *PACK, "-o", tmp_path / "s3.pbin",
                           capsys=capsys)
    assert code == 0, said
    assert (tmp_path / "s3.pbin").read_bytes() == (tmp_path / "local.pbin").read_bytes()
    assert [hit.fault for hit in proxied_s3.proxy.faults_hit()] == ["reset", "reset", "truncate", "truncate"]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_get_that_breaks_every_time_fails_in_one_line_naming_the_object_with_nothing_written(proxied_s3, fault,
                                                                                                tmp_path, capsys):
    assert_a_get_broken_every_time_fails(proxied_s3.proxy, proxied_s3.url, fault, tmp_path, capsys)
