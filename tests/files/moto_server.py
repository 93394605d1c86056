"""A moto S3 API server on 127.0.0.1 for the s3:// tests (test_s3, test_objects): started per module on a free
loopback port and stopped after, and a fresh bucket per test that tokenmill's client reaches through
``AWS_ENDPOINT_URL`` and the ``AWS_*`` credentials. No traffic leaves the machine."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tokenmill.files import objects, s3 as s3_scheme

boto3 = pytest.importorskip("boto3", reason="the [s3] extra is not installed")
SECRET = "secret-key-never-printed"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_moto(extra_env: dict | None = None) -> tuple[subprocess.Popen, str]:
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable))
    if server is None:
        pytest.skip("moto_server is not installed (pip install -e '.[test]')")
    port = free_port()
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env={**os.environ, **(extra_env or {})})
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
            return process, endpoint
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "moto_server did not start"
            time.sleep(0.1)


@pytest.fixture(scope="module", name="endpoint")
def moto_endpoint():
    process, url = start_moto()
    yield url
    process.terminate()
    process.wait(10)


def use(monkeypatch, endpoint: str, key_id: str = "tokenmill-test") -> None:
    for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": SECRET,
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    s3_scheme._client.cache_clear()
    objects._pinned.clear()


@pytest.fixture(name="s3")
def s3_bucket(monkeypatch, endpoint):
    """A boto3 client of the server, with a fresh bucket ``corpora``; tokenmill's client points there too."""
    use(monkeypatch, endpoint)
    client = boto3.client("s3")
    bucket = f"corpora-{free_port()}"
    client.create_bucket(Bucket=bucket)
    client.bucket = bucket
    yield client
    s3_scheme._client.cache_clear()
