"""``hf://datasets/ORG/NAME[@REVISION]/PATH`` inputs, through huggingface_hub, against a fake Hub on 127.0.0.1.

The fake (tests/files/loopback_servers.py: ``FakeHub``) stands in for huggingface.co as huggingface_hub calls
it to read a dataset, and for nothing more: the revision call that resolves a branch to a commit
(``HfApi.dataset_info``), the recursive tree listing (``list_repo_tree``), ``paths-info``
(``get_paths_info``) and ``resolve`` with ``Range`` (LFS files redirected to a storage address, as the Hub
does). huggingface_hub reaches it through ``HF_ENDPOINT``; the dataset is private, so every call must carry
``HF_TOKEN``, which must then appear in no output, log or sidecar. No traffic leaves the machine.
"""

from __future__ import annotations

import gzip
import hashlib

import pytest
from loopback_servers import FakeHub, nothing_listening

from url_inputs import PACK, pack_equal, tokenmill

from conftest import MIXED_JSONL
from tokenmill.files import objects
from tokenmill.formats.pbin import read_sidecar

pytest.importorskip("huggingface_hub", reason="the [hf] extra is not installed")
hf = pytest.importorskip("tokenmill.files.hf")

TOKEN = "hf_secretTokenNeverPrinted0123456789"
REPO = "tokenmill/corpus"


def _parquet_files(tmp_path) -> dict[str, bytes]:
    pytest.importorskip("pyarrow", reason="the [parquet] extra is not installed")
    import pyarrow
    import pyarrow.parquet

    files = {}
    for part in range(2):
        table = pyarrow.table({"text": [f"part {part} row {i}: {'word ' * (i % 40)}" for i in range(200)],
                               "id": list(range(200))})
        pyarrow.parquet.write_table(table, tmp_path / f"part-{part}.parquet", row_group_size=64)
        files[f"data/part-{part}.parquet"] = (tmp_path / f"part-{part}.parquet").read_bytes()
    return files


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A fake Hub with the private dataset ``tokenmill/corpus``; HF_ENDPOINT and HF_TOKEN point there."""
    with FakeHub(token=TOKEN) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no login of this machine's user is read
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        server.private.add(REPO)
        objects._pinned.clear()
        hf._commit.cache_clear()
        yield server
    objects._pinned.clear()
    hf._commit.cache_clear()


def test_a_hub_dataset_of_parquet_files_packs_to_the_bytes_of_its_local_copies(hub, tmp_path, capsys):
    files = _parquet_files(tmp_path)
    files["data/notes.jsonl.gz"] = gzip.compress(MIXED_JSONL.read_bytes())
    files["README.md"] = b"# corpus\n"
    sha = hub.commit(REPO, files)
    local = [tmp_path / "part-0.parquet", tmp_path / "part-1.parquet"]
    sidecar, said = pack_equal(tmp_path / "parquet", local, [f"hf://datasets/{REPO}/data/*.parquet"], capsys)
    for source, name in zip(sidecar["sources"], ("data/part-0.parquet", "data/part-1.parquet")):
        assert source["path"] == f"hf://datasets/{REPO}/{name}"  # as the config spells it: no sha in the path
        assert source["object"] == {"etag": hashlib.sha256(files[name]).hexdigest(), "version_id": None,
                                    "size": len(files[name]), "revision": sha}  # the pinned commit
    reads = [(path, headers) for method, path, headers in hub.requests if "/resolve/" in path]
    assert reads and all(f"/resolve/{sha}/" in path and headers.get("Range") for path, headers in reads)
    assert all(headers.get("Authorization") == f"Bearer {TOKEN}" for _, path, headers in hub.requests
               if path.startswith(("/api/datasets/", "/datasets/")))  # the token is sent to the Hub...
    written = b"".join(path.read_bytes() for path in (tmp_path / "parquet").iterdir())
    assert TOKEN.encode() not in written and TOKEN not in said  # ...and written nowhere

    # compressed JSONL from the Hub (a plain git file: no redirect) streams like the local file
    (tmp_path / "notes.jsonl.gz").write_bytes(files["data/notes.jsonl.gz"])
    pack_equal(tmp_path / "notes", [tmp_path / "notes.jsonl.gz"], [f"hf://datasets/{REPO}@main/data/notes.jsonl.gz"],
               capsys, "--on-bad-line", "skip")


def test_a_branch_is_resolved_to_its_commit_and_a_moved_branch_is_a_changed_input(hub, tmp_path, capsys):
    first = hub.commit(REPO, {"a.jsonl": MIXED_JSONL.read_bytes()})
    url = f"hf://datasets/{REPO}/a.jsonl"
    before = objects.object_identity(url)
    assert before.revision == first and objects.object_identity(f"hf://datasets/{REPO}@{first}/a.jsonl") == \
        objects.ObjectIdentity(f"hf://datasets/{REPO}@{first}/a.jsonl", before.size, before.etag, revision=first)
    code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "a.pbin", "--on-bad-line", "skip", capsys=capsys)
    assert code == 0, said

    second = hub.commit(REPO, {"a.jsonl": MIXED_JSONL.read_bytes(), "b.jsonl": b"{}\n"})  # main moves on
    assert objects.object_identity(url).revision == first  # resolved once per process
    hf._commit.cache_clear()  # a new process (a job, a plan)
    after = objects.object_identity(url)
    assert after.revision == second and after.tag != before.tag  # the plan's identity: a changed input
    assert (after.etag, after.size) == (before.etag, before.size)  # the same bytes, so verify finds no change
    assert tokenmill("verify", tmp_path / "a.pbin", capsys=capsys)[0] == 0
    hub.commit(REPO, {"a.jsonl": MIXED_JSONL.read_bytes() + b'{"text": "more"}\n'})
    hf._commit.cache_clear()
    objects._pinned.clear()
    code, said = tokenmill("verify", tmp_path / "a.pbin", capsys=capsys)
    assert code == 1 and f"source {url} has changed since it was packed" in said
    assert read_sidecar(tmp_path / "a.pbin")["sources"][0]["object"]["revision"] == first


def test_a_missing_dataset_revision_or_file_and_a_hub_that_does_not_answer_are_one_line_each(hub, tmp_path, capsys,
                                                                                            monkeypatch):
    hub.commit(REPO, {"a.jsonl": b'{"text": "x"}\n'})
    cases = [
        (f"hf://datasets/{REPO}@no-such-branch/a.jsonl", f"no such revision 'no-such-branch' of the dataset {REPO}"),
        ("hf://datasets/tokenmill/none/a.jsonl", "no such dataset tokenmill/none, or no access to it (a private "
                                                 "dataset needs HF_TOKEN or `hf auth login`)"),
        (f"hf://datasets/{REPO}/none.jsonl", "no such file"),
        (f"hf://datasets/{REPO}/*.parquet", "matches no file"),
        (f"hf://{REPO}/a.jsonl", "not a Hub dataset URL; give hf://datasets/ORG/NAME[@REVISION]/PATH"),
    ]
    for url, expected in cases:
        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
        assert (code, said) == (1, f"tokenmill: error: {url}: {expected}\n")
    monkeypatch.delenv("HF_TOKEN")  # a private dataset without the token: as the Hub says, "not found"
    hf._commit.cache_clear()
    url = f"hf://datasets/{REPO}/a.jsonl"
    code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert code == 1 and said.startswith(f"tokenmill: error: {url}: no such dataset {REPO}, or no access")
    with nothing_listening() as address:
        monkeypatch.setenv("HF_ENDPOINT", address)
        code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "x.pbin", capsys=capsys)
    assert code == 1 and said == (f"tokenmill: error: {url}: the Hub {address[7:]} does not answer (ConnectError) "
                                  f"while resolving its revision\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "hf-home"] or list(tmp_path.iterdir()) == []


def test_a_redirect_loop_from_the_hub_s_storage_ends_in_one_line(hub, tmp_path, capsys):
    files = _parquet_files(tmp_path)
    hub.commit(REPO, files)
    storage = f"/lfs/{hashlib.sha256(files['data/part-0.parquet']).hexdigest()}"
    hub.redirects = {storage: f"{storage}/again", f"{storage}/again": storage}  # resolve → storage ⇄ again
    url = f"hf://datasets/{REPO}/data/part-0.parquet"
    code, said = tokenmill("pack", url, *PACK, "-o", tmp_path / "out" / "x.pbin", capsys=capsys)
    assert (code, said) == (1, f"tokenmill: error: {url}: the Hub's redirects go round in a loop (more than 20) "
                               f"while reading from byte 0\n")
    assert not (tmp_path / "out").exists()


def test_the_workflow_builds_a_hub_dataset_to_its_local_copies_bytes_and_repacks_when_the_branch_moves(
        hub, workflow_dir, tmp_path):
    import yaml

    from conftest import run_snakemake

    files = _parquet_files(tmp_path)
    for name, content in files.items():
        (workflow_dir / "data/raw" / name.removeprefix("data/")).write_bytes(content)
    hub.commit(REPO, files)
    config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
    config["datasets"] = {"local": {"inputs": ["data/raw/part-*.parquet"], "tokenizer": "gpt2"},
                          "hub": {"inputs": [f"hf://datasets/{REPO}/data/*.parquet"], "tokenizer": "gpt2"}}
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    targets = [f"data/megatron/{name}_text_document.bin" for name in ("local", "hub")]
    run_snakemake(workflow_dir, *targets)
    for built in ("packed/{}.pbin", "megatron/{}_text_document.bin", "megatron/{}_text_document.idx"):
        hub_file, local_file = (workflow_dir / "data" / built.format(name) for name in ("hub", "local"))
        assert hub_file.read_bytes() == local_file.read_bytes(), built
    sources = read_sidecar(workflow_dir / "data/packed/hub.pbin")["sources"]
    assert {source["object"]["revision"] for source in sources} == {hub.branches[REPO]["main"]}
    logs = b"".join(path.read_bytes() for path in (workflow_dir / "logs").rglob("*") if path.is_file())
    assert logs and TOKEN.encode() not in logs

    dry = run_snakemake(workflow_dir, "-n", *targets)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    hub.commit(REPO, {**files, "README.md": b"# moved\n"})  # main moves on; the Parquet files are the same
    rerun = run_snakemake(workflow_dir, "-n", *targets)
    planned = rerun.stdout + rerun.stderr
    assert "pack hub ->" in planned and "pack local" not in planned, planned  # (small files: one pack each)


def test_a_job_reads_the_commit_its_plan_pinned_though_the_branch_moved_since(hub, tmp_path, capsys):
    before, after = b'{"text": "the first commit"}\n', b'{"text": "a later commit, other bytes"}\n'
    first = hub.commit(REPO, {"a.jsonl": before})
    url = f"hf://datasets/{REPO}/a.jsonl"
    planned = objects.object_identity(url)  # the plan's look: the tag its params record and its job is given
    second = hub.commit(REPO, {"a.jsonl": after})  # main moves on before the job starts
    (tmp_path / "before.jsonl").write_bytes(before)
    code, said = tokenmill("pack", tmp_path / "before.jsonl", *PACK, "-o", tmp_path / "local.pbin", capsys=capsys)
    assert code == 0, said
    for pins, revision in (((), second), (("--pin", url, planned.tag), first)):
        hf._commit.cache_clear()  # each job a new process
        objects._pinned.clear()
        code, said = tokenmill("pack", url, *pins, *PACK, "-o", tmp_path / "hub.pbin", capsys=capsys)
        assert code == 0, said
        assert read_sidecar(tmp_path / "hub.pbin")["sources"][0]["object"]["revision"] == revision
    # with the pin: the plan's commit, byte for byte, and the name as the config spells it
    assert (tmp_path / "hub.pbin").read_bytes() == (tmp_path / "local.pbin").read_bytes()
    assert read_sidecar(tmp_path / "hub.pbin")["sources"][0]["path"] == url
