"""``gs://`` inputs, against a Google Cloud Storage emulator on 127.0.0.1.

The emulator is ``gcp-storage-emulator`` (from the ``[test]`` extra), started per module on a free loopback
port, in memory, and stopped after. tokenmill's client (google-cloud-storage) reaches it through
``STORAGE_EMULATOR_HOST``, anonymously. The emulator does not keep old generations nor honour a read's
generation, so a file replaced mid-read is tested for S3 and https://, not here.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from fault_proxy import FAULTS, FaultProxy

from url_inputs import (FAULTED, PACK, assert_a_broken_get_resumes, assert_a_get_broken_every_time_fails,
                        assert_a_local_builds_bytes, pack_equal, tokenmill)

from conftest import MIXED_JSONL
from tokenmill.files import objects, remote

pytest.importorskip("google.cloud.storage", reason="the [gs] extra is not installed")
gs = pytest.importorskip("tokenmill.files.gs")

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def emulator():
    program = shutil.which("gcp-storage-emulator", path=os.path.dirname(sys.executable))
    if program is None:
        pytest.skip("gcp-storage-emulator is not installed (pip install -e '.[test]')")
    port = _free_port()
    process = subprocess.Popen([program, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory", "-q"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/storage/v1/b", timeout=1)
            break
        except urllib.error.HTTPError:
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "gcp-storage-emulator did not start"
            time.sleep(0.1)
    yield endpoint
    process.terminate()
    process.wait(10)


@pytest.fixture
def bucket(monkeypatch, emulator):
    """A fresh bucket of the emulator, which tokenmill's client points at too."""
    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emulator)
    gs._client.cache_clear()
    objects._pinned.clear()
    made = storage.Client().create_bucket(f"corpora-{_free_port()}")
    yield made
    gs._client.cache_clear()
    objects._pinned.clear()


def test_a_gs_dataset_of_jsonl_objects_packs_to_the_bytes_of_its_local_copies(bucket, tmp_path, capsys):
    text = MIXED_JSONL.read_bytes()
    half = len(text.splitlines(keepends=True)) // 2
    lines = text.splitlines(keepends=True)
    local = {"part-0.jsonl": b"".join(lines[:half]), "part-1.jsonl.gz": gzip.compress(b"".join(lines[half:]))}
    for name, content in local.items():
        (tmp_path / name).write_bytes(content)
        bucket.blob(f"raw/{name}").upload_from_string(content)
    bucket.blob("raw/sub/other.jsonl").upload_from_string(b"{}\n")
    names = sorted(local)
    sidecar, _ = pack_equal(tmp_path, [tmp_path / name for name in names], [f"gs://{bucket.name}/raw/part-*"], capsys,
                            "--on-bad-line", "skip")
    for source, name in zip(sidecar["sources"], names):
        blob = bucket.get_blob(f"raw/{name}")
        assert source["path"] == f"gs://{bucket.name}/raw/{name}"
        assert source["sha256"] == hashlib.sha256(local[name]).hexdigest()
        assert source["object"] == {"etag": blob.etag, "version_id": str(blob.generation), "size": len(local[name])}

    code, said = tokenmill("verify", tmp_path / "url.pbin", capsys=capsys)
    assert code == 0, said
    bucket.blob("raw/part-0.jsonl").upload_from_string(local["part-0.jsonl"] + b'{"text": "one more"}\n')
    objects._pinned.clear()
    code, said = tokenmill("verify", tmp_path / "url.pbin", capsys=capsys)
    assert code == 1 and f"source gs://{bucket.name}/raw/part-0.jsonl has changed since it was packed" in said


def test_missing_objects_buckets_empty_globs_and_a_silent_store_are_one_line_each(bucket, tmp_path, capsys,
                                                                                  monkeypatch):
    name = bucket.name
    cases = [(f"gs://{name}/raw/none.jsonl", "no such object"),
             (f"gs://{name}/raw/*.jsonl", "matches no object"),
             ("gs://no-such-bucket-here/a.jsonl", "no such bucket"),
             ("gs://no-such-bucket-here/x/*.jsonl", "no such bucket"),
             ("gs://bucket-only", "not an object URL; give gs://BUCKET/KEY")]
    for url, expected in cases:
        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
        assert (code, said) == (1, f"tokenmill: error: {url}: {expected}\n")
    monkeypatch.setattr(gs, "RETRY_SECONDS", 1)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{_free_port()}")  # nothing listens there
    gs._client.cache_clear()
    url = f"gs://{name}/raw/a.jsonl"
    code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert (code, said) == (1, f"tokenmill: error: {url}: the store does not answer (retried for 1 s) while reading "
                               f"its metadata\n")
    assert list(tmp_path.iterdir()) == []


def test_the_workflow_with_snakemakes_gcs_storage_flags_leaves_a_local_builds_bytes_under_the_prefix(
        bucket, built_demo, monkeypatch):
    """`snakemake --default-storage-provider gcs --default-storage-prefix gs://bucket/run` (Snakemake's own
    snakemake-storage-plugin-gcs, on the same client and emulator): every output an object under the
    prefix, object for object a local build's but for the paths that name the job's folder."""
    pytest.importorskip("snakemake_storage_plugin_gcs", reason="snakemake-storage-plugin-gcs is not installed")
    from conftest import run_snakemake

    monkeypatch.setenv("SNAKEMAKE_STORAGE_GCS_PROJECT", "tokenmill-test")
    storage = ("--default-storage-provider", "gcs", "--default-storage-prefix", f"gs://{bucket.name}/run")
    built = run_snakemake(built_demo, *storage)
    assert f"under gs://{bucket.name}/run/" in built.stdout, built.stdout
    stored = {blob.name.removeprefix("run/"): blob.download_as_bytes()
              for blob in bucket.client.list_blobs(bucket.name, prefix="run/")}
    assert_a_local_builds_bytes(stored, built_demo)
    dry = run_snakemake(built_demo, *storage, "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr


# ---- Faults mid-GET: a loopback proxy (tests/fault_proxy.py) between tokenmill's client and the emulator. Only
# the media downloads (``alt=media``) are broken: the metadata GET of the identity is the client's own.


@pytest.fixture
def proxied(bucket, emulator, monkeypatch):
    """A :class:`FaultProxy` in front of the emulator, whose bucket holds tests/data/mixed.jsonl at
    ``proxy.file_url``; tokenmill's client reaches the emulator through the proxy (the test's own goes direct),
    reads response bodies in 4 KiB pieces instead of 8 MiB, and finds a stall out after 1 s instead of 20."""
    bucket.blob("raw/mixed.jsonl").upload_from_string(FAULTED.read_bytes())
    with FaultProxy(emulator) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        monkeypatch.setattr(gs, "READ_SECONDS", 1)
        monkeypatch.setattr(remote, "PIECE_BYTES", 4096)
        gs._client.cache_clear()
        proxy.file_url = f"gs://{bucket.name}/raw/mixed.jsonl"
        yield proxy
    gs._client.cache_clear()


@pytest.mark.parametrize("fault", FAULTS)
def test_a_get_broken_mid_body_resumes_from_the_last_byte_received_to_the_same_bytes(proxied, fault, tmp_path,
                                                                                      capsys):
    assert_a_broken_get_resumes(proxied, proxied.file_url, fault, tmp_path, capsys, target="alt=media")


@pytest.mark.parametrize("fault", FAULTS)
def test_a_get_that_breaks_every_time_fails_in_one_line_naming_the_object_with_nothing_written(proxied, fault,
                                                                                                tmp_path, capsys):
    assert_a_get_broken_every_time_fails(proxied, proxied.file_url, fault, tmp_path, capsys, target="alt=media")
