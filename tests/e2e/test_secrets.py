"""No secret in any output (issue 52): inputs whose URLs carry secrets (a presigned query, ``user:password@``) and a
private Hub dataset read with ``HF_TOKEN``, built by the workflow with ``-p`` (a failing run, then a passing one);
no secret may appear in any file under the build folder (``.snakemake/`` and the logs included) nor in what
either run printed. The config file, outside the folder, is the user's and keeps them."""

from __future__ import annotations

import pytest
import yaml

from conftest import MIXED_JSONL, REPO as CHECKOUT, run_snakemake
from files.loopback_servers import FakeHub, RangeServer

pytestmark = pytest.mark.slow

PASSWORD = "Pa55wordPlanted"
CREDENTIAL, SIGNATURE = "AKIAPLANTEDCREDENTIAL", "feedc0ffee42planted"
HF_TOKEN = "hf_plantedTokenNeverWritten0123456789"
SECRETS = (PASSWORD, CREDENTIAL, SIGNATURE, HF_TOKEN)
QUERY = (f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={CREDENTIAL}%2F20261208%2Fus-east-1%2Fs3"
         f"&X-Amz-Signature={SIGNATURE}")
HUB_REPO = "tokenmill/private"


def _leaks(workdir, printed: str) -> list[str]:
    """Each secret with where it appears: a file under ``workdir``, or what the run printed."""
    found = [f"{secret} in the output" for secret in SECRETS if secret in printed]
    for path in workdir.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            found += [f"{secret} in {path.relative_to(workdir)}" for secret in SECRETS if secret.encode() in content]
    return found


def test_no_secret_of_an_input_url_or_the_environment_reaches_any_output(workflow_dir, tmp_path_factory, monkeypatch):
    tmp_path = tmp_path_factory.mktemp("user")  # the user's folder: their config, Hugging Face's home
    pytest.importorskip("huggingface_hub", reason="the [hf] extra is not installed")
    text = b'{"text": "web one"}\n{"text": "web two"}\n'
    bad_line = b'{"text": "web three"}\n{"no text": 1}\n'
    chat = (CHECKOUT / "data/raw/chat.jsonl").read_bytes()
    with RangeServer({"/a.jsonl": text}, credentials=("alice", PASSWORD)) as basic, \
            RangeServer({"/b.jsonl": bad_line, "/chat.jsonl": chat}, query=QUERY) as presigned, \
            FakeHub(token=HF_TOKEN) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        hub.private.add(HUB_REPO)
        commit = hub.commit(HUB_REPO, {"data/c.jsonl": MIXED_JSONL.read_bytes()})
        basic_url = basic.url.replace("http://", f"http://alice:{PASSWORD}@") + "/a.jsonl"
        config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
        config["datasets"] = {
            "web": {"inputs": [basic_url, f"{presigned.url}/b.jsonl?{QUERY}"], "tokenizer": "gpt2"},
            "hub": {"inputs": [f"hf://datasets/{HUB_REPO}/data/c.jsonl"], "tokenizer": "gpt2", "on_bad_line": "skip"}}
        config["sampling"] = {"seq_lengths": [16], "seeds": [1], "epochs": 1, "split": "1,0,0"}
        config["sft"]["chat"]["inputs"] = [f"{presigned.url}/chat.jsonl?{QUERY}"]
        config_file = tmp_path / "secrets.yaml"  # the user's own, outside the build folder: it keeps the URLs
        config_file.write_text(yaml.safe_dump(config))

        failed = run_snakemake(workflow_dir, "-p", "--configfile", config_file, check=False)
        failed_printed = failed.stdout + failed.stderr
        # the bad line, its file named by the URL's redacted name, and its line number
        assert failed.returncode != 0 and "b.jsonl?X-Amz-Algorithm=***&X-Amz-Credential=***&X-Amz-Signature=***:2: " \
            "no key 'text'" in failed_printed, failed_printed

        config["datasets"]["web"]["on_bad_line"] = "skip"
        config_file.write_text(yaml.safe_dump(config))
        passed = run_snakemake(workflow_dir, "-p", "--configfile", config_file)
        passed_printed = passed.stdout + passed.stderr

    # the pack jobs' commands name each URL redacted, with the version the plan pinned
    assert f"'{basic.url.replace('http://', 'http://***@')}/a.jsonl'" in passed_printed
    records = "".join(path.read_text() for path in (workflow_dir / ".snakemake/metadata").iterdir())
    assert f"--pin hf://datasets/{HUB_REPO}/data/c.jsonl " in records and f" revision {commit}'" in records
    assert f"tokenmill sft - chat --pin '{presigned.url}/chat.jsonl?X-Amz-Algorithm=***&" in records
    assert (workflow_dir / "data/packed/web.pbin").exists() and (workflow_dir / "data/sft/chat.pbin").exists()
    assert any(headers.get("Authorization") for _, _, headers in basic.requests)  # the password was sent...
    leaks = _leaks(workflow_dir, failed_printed + passed_printed)
    assert leaks == [], (leaks, failed_printed, passed_printed)  # ...and written nowhere
