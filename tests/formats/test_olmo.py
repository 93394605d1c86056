"""OLMo-core's token files (tokenmill.formats.olmo): raw parts, their csv.gz, read back by the real trainer.

The values below were recorded with ai2-olmo-core 3.0.0 in a throwaway venv (never a dependency):

    python3 -m venv /tmp/peer-olmo && /tmp/peer-olmo/bin/pip install --no-deps ai2-olmo-core==3.0.0 \\
        cached_path omegaconf rich dataclass_extensions bettermap   # torch and numpy: any recent ones
    tokenmill pack data/raw/demo.jsonl --tokenizer data/tokenizers/gpt2.tokenizer.json \\
        --eod '<|endoftext|>' -o demo.pbin
    tokenmill to-olmo demo.pbin -o out --max-tokens 400000
    # then, with paths = sorted(glob("out/part-*.npy")):
    ds = NumpyFSLDataset(*paths, sequence_length=512, pad_token_id=50256, eos_token_id=50256,
                         vocab_size=50257, dtype=np.uint16, generate_doc_lengths=True); ds.prepare()
    len(ds)                                   # 2003
    ds[0]["input_ids"][:8]                    # [13940, 301, 14064, 1326, 1490, 2731, 1311, 391]
    ds[0]["doc_lens"]                         # [100, 85, 147, 34, 146]
    sha256 of every window's input_ids as <u2, in order:
        adb5cc1e797ca09b40738440dbdd7faff0e37bdd404bd64763d15ed79494ecda
    # OLMo-core's own document finder, over every part: the .pbin's 2990 document lengths, in order
    [e - s for p in paths for s, e in olmo_core.data.utils.iter_document_indices(p, eos_token_id=50256,
                                                                               dtype=np.uint16)]
    vsl = NumpyVSLDataset(*paths, pad_token_id=50256, eos_token_id=50256, vocab_size=50257, dtype=np.uint16,
                          max_sequence_length=2048, min_sequence_length=64)
    vsl.work_dir = "work"; vsl.prepare()
    len(vsl)                                  # 3343 instances, 932160 tokens
    sha256 of [len(vsl[i]["input_ids"]) for i in range(len(vsl))] as <i8:
        286bdf18351483cf3a01f8bee210d19de5a4b80257c037e8fc035ec5f865ecfa
    # the demo's SFT set (tokenmill sft config/config.yaml chat -o chat.pbin; tokenmill to-olmo chat.pbin -o sft)
    sft = NumpyFSLDataset("sft/part-00000.npy", sequence_length=512, pad_token_id=50256, eos_token_id=50256,
                          vocab_size=50257, dtype=np.uint16, label_mask_paths=["sft/part-00000.label_mask.npy"])
    len(sft)                                  # 105 windows; 47592 of their 53760 label_mask values True
    sha256 of every window's label_mask as uint8, in order:
        f37d85f610ce5c358a003d9473a4d9d139b6a5b465753b5079383ab044b8df07
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import shutil

import numpy as np
import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.formats.olmo import pbin_to_olmo
from tokenmill.formats.pbin import PbinFile

OLMO_FSL_WINDOWS = 2003
OLMO_FIRST_IDS = [13940, 301, 14064, 1326, 1490, 2731, 1311, 391]
OLMO_FIRST_DOC_LENS = [100, 85, 147, 34, 146]
OLMO_WINDOWS_SHA256 = "adb5cc1e797ca09b40738440dbdd7faff0e37bdd404bd64763d15ed79494ecda"
OLMO_VSL_INSTANCES, OLMO_VSL_TOKENS = 3343, 932160
OLMO_SFT_WINDOWS, OLMO_SFT_LABELS = 105, 47592
OLMO_SFT_LABEL_MASK_SHA256 = "f37d85f610ce5c358a003d9473a4d9d139b6a5b465753b5079383ab044b8df07"
OLMO_VSL_LENGTHS_SHA256 = "286bdf18351483cf3a01f8bee210d19de5a4b80257c037e8fc035ec5f865ecfa"


@pytest.fixture(scope="module")
def demo_pbin(shared_demo_megatron):
    """The demo packed with GPT-2 (``pack DEMO --tokenizer GPT2 --eod GPT2_EOD -o demo.pbin``), the run's. Read only."""
    return shared_demo_megatron / "demo.pbin"


def fsl_windows(out, sequence_length: int) -> np.ndarray:
    """What NumpyFSLDataset reads: each part cut into windows, its remainder dropped."""
    windows = []
    for path in sorted(out.glob("part-*.npy")):
        tokens = np.fromfile(path, dtype="<u2")
        windows.append(tokens[:len(tokens) // sequence_length * sequence_length].reshape(-1, sequence_length))
    return np.concatenate(windows)


def test_olmo_core_reads_the_parts_as_recorded(demo_pbin, tmp_path):
    out = tmp_path / "out"
    meta = pbin_to_olmo(demo_pbin, out, max_tokens=400_000)
    assert [part["tokens"] for part in meta["parts"]] == [399931, 398268, 228298]  # whole documents only
    windows = fsl_windows(out, 512)
    assert len(windows) == OLMO_FSL_WINDOWS and windows[0][:8].tolist() == OLMO_FIRST_IDS
    assert hashlib.sha256(windows.astype("<u2").tobytes()).hexdigest() == OLMO_WINDOWS_SHA256
    # the parts, back to back, are the .pbin's token stream, and the csv.gz its documents
    pbin = PbinFile(demo_pbin)
    stream = np.concatenate([np.fromfile(path, dtype="<u2") for path in sorted(out.glob("part-*.npy"))])
    assert np.array_equal(stream, np.asarray(pbin.tokens))
    rows = [row for path in sorted(out.glob("part-*.csv.gz"))
            for row in csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode()))]
    assert [int(end) - int(start) for start, end, *_ in rows] == pbin.doc_lengths.tolist()
    first = [min(int(end), 512) for _, end, *_ in rows[:5]]  # within the first window, as OLMo-core counts them
    assert np.diff([0, *first]).tolist() == OLMO_FIRST_DOC_LENS  # the boundaries OLMo-core found by EOS
    ids = [json.loads(line)["id"] for line in DEMO_JSONL.read_text().splitlines()]
    assert rows[0] == ["0", "100", ids[0], str(DEMO_JSONL), "1"] and [row[4] for row in rows] == [
        str(n) for n in range(1, 2991)]
    assert [row[2] for row in rows] == ids and any("," in value for value in ids)  # quoted where needed
    assert meta["dtype"] == "uint16" and meta["eos_token_id"] == 50256 and meta["documents"] == 2990
    from tokenmill.views.inspect_file import describe

    assert describe(out) == [f"dataset: {out} (OLMo-core token files, {FORMAT_VERSIONS['olmo']})", "dtype: uint16",
                             "eos: id 50256, ending every document", "documents: 2990",
                             f"tokens: {pbin.num_tokens}", "parts: 3"]


def test_olmo_cores_variable_length_instances_are_the_pbins_documents_decomposed(demo_pbin):
    """NumpyVSLDataset cuts each document it finds by EOS into chunks of max_sequence_length, then one
    chunk per power of two of the rest, down to min_sequence_length (OLMo-core's dataset decomposition):
    from the .pbin's document lengths that rule gives exactly the instances OLMo-core read from the parts
    (the recipe above), so the documents it found there are the .pbin's."""
    lengths = []
    for length in PbinFile(demo_pbin).doc_lengths.tolist():
        lengths += [2048] * (length // 2048)
        lengths += [1 << bit for bit in range(10, 5, -1) if length % 2048 & (1 << bit)]
    assert (len(lengths), sum(lengths)) == (OLMO_VSL_INSTANCES, OLMO_VSL_TOKENS)
    assert hashlib.sha256(np.array(lengths, dtype="<i8").tobytes()).hexdigest() == OLMO_VSL_LENGTHS_SHA256


def test_an_sft_set_gives_the_label_mask_olmo_core_reads(tmp_path):
    import yaml

    from conftest import REPO

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["tokenizers"]["gpt2"]["path"] = str(REPO / config["tokenizers"]["gpt2"]["path"])
    config["sft"]["chat"]["inputs"] = [str(REPO / "data/raw/chat.jsonl")]
    (tmp_path / "sft.json").write_text(json.dumps({key: config[key] for key in ("tokenizers", "sft")}))
    run_tokenmill("sft", tmp_path / "sft.json", "chat", "-o", tmp_path / "chat.pbin")
    meta = pbin_to_olmo(tmp_path / "chat.pbin", tmp_path / "sft")
    assert meta["label_masks"] and meta["eos_token_id"] == 50256 and meta["documents"] == 65
    mask = (tmp_path / "sft/part-00000.label_mask.npy").read_bytes()
    trained = np.asarray(PbinFile(tmp_path / "chat.loss_mask.pbin").tokens) != 0  # tokenmill's loss mask
    assert np.array_equal(np.frombuffer(mask, np.uint8), trained.astype(np.uint8))
    windows = np.frombuffer(mask, np.uint8)[:OLMO_SFT_WINDOWS * 512]  # what NumpyFSLDataset's windows hold
    assert len(mask) // 512 == OLMO_SFT_WINDOWS and int(windows.sum()) == OLMO_SFT_LABELS
    assert hashlib.sha256(windows.tobytes()).hexdigest() == OLMO_SFT_LABEL_MASK_SHA256
    assert run_tokenmill("verify", tmp_path / "sft", "--made-from", tmp_path / "chat.pbin").returncode == 0
    (tmp_path / "sft/part-00000.label_mask.npy").write_bytes(mask[:-1])
    said = run_tokenmill("verify", tmp_path / "sft", check=False).stderr
    assert "part-00000.label_mask.npy: not one byte per token of part-00000.npy (54071)" in said


def test_the_same_pbin_gives_the_same_bytes_and_fewer_parts_leave_none_behind(demo_pbin, tmp_path):
    pbin_to_olmo(demo_pbin, tmp_path / "a", max_tokens=400_000)
    pbin_to_olmo(demo_pbin, tmp_path / "b", max_tokens=400_000)
    files = sorted(path.name for path in (tmp_path / "a").iterdir())
    assert files == sorted(path.name for path in (tmp_path / "b").iterdir())
    assert all((tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes() for name in files)
    (tmp_path / "a/part-00009.jsonl").write_text("a user's file, not a part\n")
    meta = pbin_to_olmo(demo_pbin, tmp_path / "a", id_field=None)  # one part now: the other two are removed
    assert sorted(path.name for path in (tmp_path / "a").iterdir()) == ["metadata.json", "part-00000.csv.gz",
                                                                      "part-00000.npy", "part-00009.jsonl"]
    first = gzip.decompress((tmp_path / "a/part-00000.csv.gz").read_bytes()).decode().splitlines()[0]
    assert first == f"0,100,1,{DEMO_JSONL},1" and meta["parts"][0]["tokens"] == 1026497  # ids: line numbers


def test_pack_with_olmo_writes_what_to_olmo_writes_from_its_pbin(demo_pbin, tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "demo.pbin",
                  "--olmo", tmp_path / "packed", "--olmo-max-tokens", "400000", "--id-field", "")
    pbin_to_olmo(demo_pbin, tmp_path / "converted", max_tokens=400_000, id_field=None)
    names = sorted(path.name for path in (tmp_path / "converted").iterdir())
    assert names == sorted(path.name for path in (tmp_path / "packed").iterdir()) and len(names) == 7
    for name in names:
        assert (tmp_path / "packed" / name).read_bytes() == (tmp_path / "converted" / name).read_bytes(), name
    # refused before packing, in one line each
    base = ("pack", DEMO_JSONL, "--tokenizer", GPT2)
    for arguments, said in (
            (("--eod", GPT2_EOD, "--megatron", tmp_path / "m", "--olmo", tmp_path / "x"),
             "--olmo converts the .pbin that -o names: give -o too"),
            (("--no-eod", "-o", tmp_path / "y.pbin", "--olmo", tmp_path / "x"),
             "--olmo needs an EOD: OLMo-core finds documents by their EOS (drop --no-eod)"),
            (("--eod", GPT2_EOD, "-o", tmp_path / "y.pbin", "--olmo", DEMO_JSONL),
             f"{DEMO_JSONL}: is a file; give the folder to write the parts into"),
            (("--eod", GPT2_EOD, "-o", tmp_path / "y.pbin", "--olmo-max-tokens", "5"),
             "--olmo-max-tokens and --id-field are for --olmo DIR")):
        result = run_tokenmill(*base, *arguments, check=False)
        assert result.returncode == 1 and result.stderr == f"tokenmill: error: {said}\n"
    assert not (tmp_path / "y.pbin").exists()


def test_ids_are_the_lines_values_as_written(tmp_path):
    """An id past 64 bits and one in exponent form are digits as the line wrote them, never a float's spelling."""
    ids = ['12345678901234567890123', '1e2', '-0', '7', '"a,b"', '{"n": 1.50, "k": [2E3]}', 'null']
    lines = [f'{{"text": "document {k}", "id": {value}}}' for k, value in enumerate(ids)]
    (tmp_path / "x.jsonl").write_text("\n".join(lines) + "\n")
    run_tokenmill("pack", tmp_path / "x.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    run_tokenmill("to-olmo", tmp_path / "x.pbin", "-o", tmp_path / "out")
    rows = list(csv.reader(io.StringIO(gzip.decompress((tmp_path / "out/part-00000.csv.gz").read_bytes()).decode())))
    assert [row[2] for row in rows] == ["12345678901234567890123", "1e2", "-0", "7", "a,b", '{"n":1.50,"k":[2E3]}',
                                        "7"]  # (no id: the line number)


def test_data_without_an_eod_is_refused_in_one_line(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "x.pbin")
    with pytest.raises(TokenmillError, match=r"x.pbin: packed without an EOD; OLMo-core finds documents by their EOS"):
        pbin_to_olmo(tmp_path / "x.pbin", tmp_path / "out")
    result = run_tokenmill("to-olmo", tmp_path / "x.pbin", "-o", tmp_path / "out", check=False)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
    for arguments, said in (((tmp_path / "none.pbin", tmp_path / "out"), f"{tmp_path / 'none.pbin'}: no such .pbin"),
                            ((tmp_path / "x.pbin", tmp_path / "x.pbin"), f"{tmp_path / 'x.pbin'}: is a file; give "
                                                                          f"the folder to write the parts into")):
        with pytest.raises(TokenmillError, match=f"^{said}$"):
            pbin_to_olmo(*arguments)


def test_verify_finds_each_kind_of_damage_and_parts_that_are_not_the_pbins(demo_pbin, tmp_path):
    out = tmp_path / "out"
    pbin_to_olmo(demo_pbin, out, max_tokens=400_000)
    assert run_tokenmill("verify", out, "--made-from", demo_pbin).returncode == 0

    def damaged(damage) -> str:
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(out, copy)
        damage(copy)
        result = run_tokenmill("verify", copy, "--made-from", demo_pbin, check=False)
        assert result.returncode == 1
        return result.stderr.splitlines()[0]

    def flip_token(folder):
        tokens = np.fromfile(folder / "part-00001.npy", dtype="<u2")
        tokens[5] ^= 1
        tokens.tofile(folder / "part-00001.npy")

    def drop_row(folder):
        rows = gzip.decompress((folder / "part-00000.csv.gz").read_bytes()).splitlines(keepends=True)
        (folder / "part-00000.csv.gz").write_bytes(gzip.compress(b"".join(rows[1:])))

    assert damaged(flip_token).endswith(f"part-00001.npy: its tokens differ from those of {demo_pbin} at its "
                                        f"documents 1348..2312")
    assert damaged(drop_row).endswith("part-00000.csv.gz: its rows are not 1348 documents back to back over the "
                                      "part's 399931 tokens")
    assert damaged(lambda folder: (folder / "part-00002.npy").unlink()).endswith("part-00002.npy: missing")
    assert damaged(lambda folder: (folder / "part-00001.csv.gz").write_bytes(b"garbage\n")).endswith(
        "part-00001.csv.gz: unreadable (Not a gzipped file (b'ga'))")

    def edit_row(field: int, value: str):
        def damage(folder):
            rows = gzip.decompress((folder / "part-00000.csv.gz").read_bytes()).decode().splitlines(keepends=True)
            start, end, rest = rows[4].rstrip("\n").split(",", 2)
            cells = [start, end, *rest.rsplit(",", 2)]  # start, end, id (which may hold commas), src, loc
            cells[field] = value
            rows[4] = ",".join(cells) + "\n"
            (folder / "part-00000.csv.gz").write_bytes(gzip.compress("".join(rows).encode()))
        return damage

    ids = [json.loads(line)["id"] for line in DEMO_JSONL.read_text().splitlines()]
    assert damaged(edit_row(4, "6")).endswith(f"part-00000.csv.gz: row 5 says id,src,loc = {ids[4]},{DEMO_JSONL},6, "
                                              f"but document 4 of {demo_pbin} is {ids[4]},{DEMO_JSONL},5")
    assert "row 5 says id,src,loc = someone else," in damaged(edit_row(2, "someone else"))
    assert damaged(lambda folder: (folder / "part-00002.npy").write_bytes(b"\0" * 7)).endswith(
        "part-00002.npy: 7 bytes, but metadata.json says 228298 uint16 tokens")


def test_the_workflow_writes_olmo_parts_beside_megatron_and_verifies_them(workflow_dir):
    """formats: [pbin, megatron, olmo]: OLMo's folder from the .pbin, verified against it; dropping the format
    moves the folder out of data/olmo/."""
    import yaml

    from conftest import run_snakemake

    config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
    config["datasets"]["demo"].update(formats=["pbin", "megatron", "olmo"], olmo_max_tokens=400_000)
    config["sft"]["chat"]["formats"] = ["pbin", "olmo"]
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    mask = (workflow_dir / "data/sft/chat.olmo/part-00000.label_mask.npy").read_bytes()  # the SFT set's, labels
    assert np.array_equal(np.frombuffer(mask, np.uint8), np.asarray(
        PbinFile(workflow_dir / "data/sft/chat.loss_mask.pbin").tokens) != 0)
    assert (workflow_dir / "data/verified/sft/chat+olmo+pbin.ok").read_text() == \
        "ok data/sft/chat.pbin\nok data/sft/chat.olmo\n"
    folder = workflow_dir / "data/olmo/demo"
    stream = np.concatenate([np.fromfile(path, dtype="<u2") for path in sorted(folder.glob("part-*.npy"))])
    pbin = PbinFile(workflow_dir / "data/packed/demo.pbin")
    assert len(list(folder.glob("part-*.npy"))) == 3 and np.array_equal(stream, np.asarray(pbin.tokens))
    first = gzip.decompress((folder / "part-00000.csv.gz").read_bytes()).decode().splitlines()[0]
    first_id = json.loads(DEMO_JSONL.read_text().splitlines()[0])["id"]
    assert first == f"0,100,{first_id},data/raw/demo.jsonl,1"  # src: the input as the config spells it
    assert "ok data/olmo/demo\n" in (workflow_dir / "data/verified/demo+megatron+olmo+pbin.ok").read_text()
    assert "data/olmo/demo" in (workflow_dir / "data/report/demo+megatron+olmo+pbin.html").read_text()

    config["datasets"]["demo"]["formats"] = ["pbin", "megatron"]
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    assert not folder.exists() and (workflow_dir / "data/stale/olmo/demo/part-00000.npy").exists()


def test_chat_template_conversations_get_the_eos_olmo_core_cuts_at(tmp_path):
    """A ChatML template ends a conversation with ``<|im_end|>\\n`` and writes its EOS (``<|im_end|>``) after every
    turn: OLMo-core, finding documents by their EOS, would cut each conversation at every turn, so the conversion
    refuses it in one line. With an eod the template never writes (``<|endoftext|>``), each conversation gets it
    appended, not trained (label 0); the parts less those EOS are the .pbin, and verify --made-from agrees.
    OLMo-core 3.0.0's own document finder (``iter_document_indices(part, eos_token_id=50256, dtype=np.uint16)``,
    in the throwaway venv of the module docstring) gives the conversations' lengths + 1: [20, 46, 55]."""
    from conftest import chat_cases, write_jsonl_bytes
    from tokenmill.pack.sft import write_sft
    from tokenmill.training.sft_datasets import loss_mask_path
    from tokenmill.formats.olmo import verify_olmo

    cases = chat_cases()
    folder = cases.make_folder("chatml_tools", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(cases.CONVERSATIONS[n], ensure_ascii=False).encode()
                                                 for n in (0, 1, 2)])

    def sft(eod):
        config = {"tokenizers": {"chatml": {"path": str(folder / "tokenizer.json"), "eod": eod}},
                  "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "chatml",
                                    "chat_template": "tokenizer", "seq_length": 512}}}
        write_sft("chats", config, tmp_path / "c.pbin")
        return tmp_path / "c.pbin"

    with pytest.raises(TokenmillError, match=r"c.pbin: conversation 0 holds the EOS id 50258 at its token 9, before "
                                             r"its end: OLMo-core finds documents by their EOS"):
        pbin_to_olmo(sft(None), tmp_path / "out")
    pbin = sft("<|endoftext|>")
    meta = pbin_to_olmo(pbin, tmp_path / "out")
    assert meta["eos_token_id"] == 50256 and meta["appended_eos"] == 3 and meta["documents"] == 3
    tokens = np.fromfile(tmp_path / "out/part-00000.npy", dtype="<u2")
    labels = np.fromfile(tmp_path / "out/part-00000.label_mask.npy", dtype=np.uint8)
    documents = PbinFile(pbin)
    trained = PbinFile(loss_mask_path(pbin))
    lengths = documents.doc_lengths.astype(int) + 1
    ends = np.cumsum(lengths)
    assert lengths.tolist() == [20, 46, 55] and len(tokens) == len(labels) == ends[-1]
    assert (tokens[ends - 1] == 50256).all() and (labels[ends - 1] == 0).all()  # appended, not trained
    assert np.flatnonzero(tokens == 50256).tolist() == (ends - 1).tolist()  # OLMo-core cuts exactly there
    assert np.array_equal(np.delete(tokens, ends - 1), documents.tokens)
    assert np.array_equal(np.delete(labels, ends - 1), trained.tokens != 0)
    with gzip.open(tmp_path / "out/part-00000.csv.gz", "rt") as rows:
        assert [tuple(map(int, row[:2])) for row in csv.reader(rows)] == list(zip([0, *ends[:-1]], ends))
    assert verify_olmo(tmp_path / "out", pbin) == []
    tokens[ends[0]] = 7  # the second conversation's first token: verify sees the parts are not the .pbin's
    tokens.tofile(tmp_path / "out/part-00000.npy")
    assert any("its tokens differ from those of" in problem for problem in verify_olmo(tmp_path / "out", pbin))
