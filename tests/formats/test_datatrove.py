"""tokenmill against datatrove's own bytes: ``tokenmill to-datatrove`` writes what datatrove 0.10.1 writes.

Every hash and value here was produced by datatrove 0.10.1 — not by tokenmill — in a throwaway venv outside
the project (datatrove is no dependency and none of its code is here)::

    python3 -m venv /tmp/venv-dt && /tmp/venv-dt/bin/pip install datatrove==0.10.1 orjson
    /tmp/venv-dt/bin/pip install tokenizers==0.23.3 torch==2.13.0   # DocumentTokenizer, DatatroveFolderDataset

then, in a folder holding ``gpt2.tokenizer.json`` (a copy of data/tokenizers/gpt2.tokenizer.json) and
``in/X.jsonl``, for each input X::

    LocalPipelineExecutor(pipeline=[JsonlReader("in"),
        DocumentTokenizer("out", tokenizer_name_or_path="gpt2.tokenizer.json", eos_token="<|endoftext|>",
                          shuffle_documents=False, save_filename="X")], tasks=1).run()

which writes ``out/X_00000_unshuffled.ds``, ``.ds.index`` and ``.ds.metadata``. The inputs: ``demo200``, the
first 200 lines of data/raw/demo.jsonl; ``eod``, the four documents of :data:`EOD_TEXTS` (two of them end
with ``<|endoftext|>``, which datatrove doubles). The SI counts come from ``humanize.metric(n, unit="T")``
(humanize 4.17.0, datatrove's), compared with :func:`tokenmill.formats.datatrove.si_count` on 400,000 counts, of
which the table below is the interesting part. The read-back values: ``DatatroveFolderDataset(folder,
seq_len=512, token_size=2, return_positions=True)`` over a folder holding *tokenmill's* demo200 files
(the same values as over datatrove's): its length, and for three items the sha256 of ``input_ids`` (int64),
their first and last tokens, and where ``positions`` restart at 0.

Every tokenizer (the last section): datatrove's rules for a post-processor and for the vocabulary size,
recorded on three variants of GPT-2's tokenizer.json that :func:`gpt2_variant` below builds (the same
function ran in the peer venv, writing ``NAME.tokenizer.json`` with ``json.dump(..., ensure_ascii=False)``):

* ``bos``: Llama-3 style: an added special token ``<|begin_of_text|>`` (id 50257) and the post-processor
  ``Sequence[ByteLevel, TemplateProcessing(single="<|begin_of_text|> $A")]``;
* ``eos``: the post-processor ``TemplateProcessing(single="$A <|endoftext|>")``, an EOS after every text;
* ``id70000``: an added special token ``<|extra|>`` declared at id 70000, which Hugging Face's tokenizers
  numbers 50257 on load (``get_vocab_size()`` 50,258, so 2-byte tokens).

Peer venv (datatrove is no dependency)::

    python3.11 -m venv /tmp/peer-datatrove
    /tmp/peer-datatrove/bin/pip install 'datatrove==0.10.1' tokenizers   # tokenizers 0.23.3, humanize 4.17.0;
                                                                         # DocumentTokenizer needs no torch

then, for NAME in bos, eos, id70000, with ``in/`` holding one input (tests/data/mixed.jsonl, then a file of
the :data:`SPECIAL_TEXTS` lines, ``json.dumps({"text": text})`` each)::

    LocalPipelineExecutor(pipeline=[JsonlReader("in"),
        DocumentTokenizer("out", tokenizer_name_or_path="NAME.tokenizer.json", eos_token="<|endoftext|>",
                          shuffle_documents=False, save_filename="NAME")], tasks=1).run()

On mixed.jsonl the three write the same ``.ds`` and ``.ds.index`` as plain GPT-2 (2,513 tokens, 50
documents: no BOS, one EOS each, uint16); only ``.ds.metadata`` names another tokenizer.
"""

import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, GPT2_EOD_ID, MIXED_JSONL, TEKKEN, run_snakemake, run_tokenmill
from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.formats.datatrove import (DatatroveFile, DatatroveWriter, datatrove_documents, datatrove_paths,
                                         metadata_text, packed_post_processor_ids, pbin_to_datatrove, si_count,
                                         token_size_for)
from tokenmill.formats.bin_idx import MMapIndexedDataset, MMapIndexedDatasetBuilder, optimal_dtype
from tokenmill.formats.pbin import PbinFile, PbinWriter, read_sidecar
from tokenmill.formats.sidecar import range_indices
from tokenmill.pack.pretraining import PackSettings
from tokenmill.pack.pretraining import pack as pack_files
from tokenmill.tokenization.tokenizer import load_tokenizer
from tokenmill.verify.checks import verify, verify_made_from
from tokenmill.views.inspect_file import describe, show_document

DATATROVE_DEMO200 = {  # out/demo200_00000_unshuffled.*
    ".ds": "814fc678b89b7324b6f37c511e92dd46c713f42d975bf9169c8cbd4f11748211",
    ".ds.index": "0b921404fd9df6103c45cc26a3055c7dd0eb5a876aac8ea463ab5ccc2eb45dd7",
    ".ds.metadata": "d81f2ee9bb8633adeaa20048109a5fdc8694423ef3e1617419764412700870ea",
}
DEMO200_METADATA = "gpt2.tokenizer.json|2\n39577\n39.6 kT"  # its text: no final newline
EOD_TEXTS = ["Hello world.", "A text that already ends with the marker<|endoftext|>", "<|endoftext|>",
             "Last one,\nwith a newline.\n"]
DATATROVE_EOD = {
    ".ds": "be7eb34d754d9e6b18a80d5a81adab1dc0644c34fa6ac3489978fabf23bff42e",
    ".ds.index": "a4f403176ebc1c030193d9afe343598ba9fea9712d5103727eb7b4b67eafaaab",
    ".ds.metadata": "3574e25c882f8f21cbb73fd2a5862e3474fc0799706daee3952c22e2b0f481a4",
}
# datatrove's tokens of EOD_TEXTS: the second and third documents end with two EODs
DATATROVE_EOD_TOKENS = [15496, 995, 13, 50256, 32, 2420, 326, 1541, 5645, 351, 262, 18364, 50256, 50256,
                        50256, 50256, 5956, 530, 11, 198, 4480, 257, 649, 1370, 13, 198, 50256]
DATATROVE_EOD_ENDS = [4, 14, 16, 27]
# humanize.metric(n, unit="T"): three significant digits; 9,995 rounds *down* (9.995 is below it as a float)
SI = {0: "0.00 T", 1: "1.00 T", 9: "9.00 T", 10: "10.0 T", 27: "27.0 T", 99: "99.0 T", 100: "100 T", 999: "999 T",
      1000: "1.00 kT", 1005: "1.00 kT", 1015: "1.01 kT", 9994: "9.99 kT", 9995: "9.99 kT", 9999: "10.0 kT",
      10000: "10.0 kT", 39577: "39.6 kT", 99949: "99.9 kT", 99950: "100 kT", 99999: "100 kT", 504482: "504 kT",
      999499: "999 kT", 999500: "1.00 MT", 999999: "1.00 MT", 1000000: "1.00 MT", 1234567: "1.23 MT",
      10 ** 9 - 1: "1.00 GT", 2 ** 40: "1.10 TT", 10 ** 30 - 1: "1.00 QT", 10 ** 32: "100 QT"}
# DatatroveFolderDataset(<tokenmill's demo200>, seq_len=512, token_size=2, return_positions=True)
READ_BACK_LENGTH = 77
READ_BACK = {  # item: (sha256 of input_ids as int64, first six, last three, where positions restart at 0)
    0: ("4fdc2af23faa259d49ee26365f08da5f2108e5a99de1e77e12e0d6dced4f62c3", [13940, 301, 14064, 1326, 1490, 2731],
        [1087, 78, 737], [0, 100, 185, 332, 366]),
    5: ("063e735f05c9fc44cbfab3a22a3fe3fd0bf1c8f429e05deb68fa57178dbaea7a", [6846, 20983, 262, 5002, 663, 5559],
        [2520, 11769, 11], [0, 9, 54, 145, 274, 332, 366, 487]),
    76: ("386d78f2fb319eca3630cdca2e18c7e1cf680576621010ebfeee13bc1852ad65", [17730, 11, 598, 417, 2634, 274],
         [1849, 34, 13], [0, 57, 124, 201, 356, 436]),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pack(tmp_path: Path, name: str, lines: list[bytes]) -> Path:
    """Pack JSONL lines with GPT-2 and ``--eod <|endoftext|>``; the tokenizer is spelled as datatrove was given it."""
    (tmp_path / "gpt2.tokenizer.json").write_bytes(GPT2.read_bytes())
    (tmp_path / f"{name}.jsonl").write_bytes(b"".join(lines))
    run_tokenmill("pack", f"{name}.jsonl", "--tokenizer", "gpt2.tokenizer.json", "--eod", GPT2_EOD,
                  "-o", f"{name}.pbin", cwd=tmp_path)
    return tmp_path / f"{name}.pbin"


@pytest.fixture
def demo200(tmp_path) -> Path:
    """The first 200 demo documents as tokenmill's ``out/demo200.ds`` files (converted by the CLI)."""
    with open(DEMO_JSONL, "rb") as handle:
        lines = [handle.readline() for _ in range(200)]
    pack(tmp_path, "demo200", lines)
    run_tokenmill("to-datatrove", "demo200.pbin", "-o", "out/demo200", cwd=tmp_path)
    return tmp_path / "out/demo200"


def test_the_demo_converts_to_datatrove_s_exact_bytes(demo200):
    assert {suffix: sha256(path) for suffix, path in datatrove_paths(demo200).items() if path.exists()} \
        == DATATROVE_DEMO200  # no .ds.loss: datatrove writes one only with save_loss_metadata
    assert Path(f"{demo200}.ds.metadata").read_text() == DEMO200_METADATA


def test_a_text_ending_with_the_eod_gets_a_second_one_as_datatrove_appends_it(tmp_path):
    pbin = pack(tmp_path, "eod", [json.dumps({"text": text}).encode() + b"\n" for text in EOD_TEXTS])
    assert json.loads(Path(f"{pbin}.meta.json").read_text())["eod_in_text"] == [[1, 3]]  # the .pbin holds one
    assert PbinFile(pbin).num_tokens == len(DATATROVE_EOD_TOKENS) - 2
    summary = pbin_to_datatrove(pbin, tmp_path / "out/eod", tokenizer_name="gpt2.tokenizer.json")
    assert summary == {"documents": 4, "tokens": 27, "token_size": 2, "loss": False}
    dataset = DatatroveFile(tmp_path / "out/eod.ds")
    assert dataset.tokens.tolist() == DATATROVE_EOD_TOKENS and dataset.ends.tolist() == DATATROVE_EOD_ENDS
    assert {suffix: sha256(path) for suffix, path in datatrove_paths(tmp_path / "out/eod").items()
            if path.exists()} == DATATROVE_EOD


@pytest.mark.slow
def test_pack_writes_datatrove_s_bytes_in_its_one_pass_with_or_without_other_formats(tmp_path):
    pbin = pack(tmp_path, "eod", [json.dumps({"text": text}).encode() + b"\n" for text in EOD_TEXTS])
    run_tokenmill("pack", "eod.jsonl", "--tokenizer", "gpt2.tokenizer.json", "--eod", GPT2_EOD, "-o", "both.pbin",
                  "--megatron", "both", "--datatrove", "one-pass/both", cwd=tmp_path)
    run_tokenmill("pack", "eod.jsonl", "--tokenizer", "gpt2.tokenizer.json", "--eod", GPT2_EOD,
                  "--datatrove", "alone/eod.ds", cwd=tmp_path)  # the .ds alone: no .pbin, no sidecar
    for name in ("one-pass/both", "alone/eod"):
        assert {suffix: sha256(path) for suffix, path in datatrove_paths(tmp_path / name).items()
                if path.exists()} == DATATROVE_EOD, name
    assert (tmp_path / "both.pbin").read_bytes() == pbin.read_bytes()
    assert sorted(path.name for path in (tmp_path / "alone").iterdir()) == ["eod.ds", "eod.ds.index",
                                                                            "eod.ds.metadata"]
    with open(DEMO_JSONL, "rb") as handle:
        (tmp_path / "demo200.jsonl").write_bytes(b"".join(handle.readline() for _ in range(200)))
    run_tokenmill("pack", "demo200.jsonl", "--tokenizer", "gpt2.tokenizer.json", "--eod", GPT2_EOD,
                  "--datatrove", "out/demo200", "--datatrove-tokenizer-name", "gpt2.tokenizer.json",
                  "--workers", "2", cwd=tmp_path)
    assert {suffix: sha256(path) for suffix, path in datatrove_paths(tmp_path / "out/demo200").items()
            if path.exists()} == DATATROVE_DEMO200


def test_the_files_read_back_as_datatrove_s_folder_dataset_reads_them(demo200):
    """The windows DatatroveFolderDataset served from our files, computed the way it reads them: seq_len + 1
    tokens per item, positions restarting after each document end of ``.ds.index``."""
    dataset, window = DatatroveFile(demo200), 513
    assert dataset.num_tokens // window == READ_BACK_LENGTH
    for item, (digest, first, last, restarts) in READ_BACK.items():
        ids = dataset.tokens[item * window:(item + 1) * window].astype(np.int64)
        assert hashlib.sha256(ids.tobytes()).hexdigest() == digest
        assert ids[:6].tolist() == first and ids[-3:].tolist() == last
        ends = dataset.ends[(dataset.ends > item * window) & (dataset.ends < (item + 1) * window)]
        assert [0, *(int(end) - item * window for end in ends)] == restarts
    pbin = PbinFile(demo200.parent.parent / "demo200.pbin")  # the same documents as the .pbin, in order
    assert np.array_equal(dataset.tokens, pbin.tokens) and np.array_equal(dataset.ends, np.cumsum(pbin.doc_lengths))


@pytest.mark.parametrize("count, text", SI.items())
def test_the_token_count_is_written_as_humanize_writes_it(count, text):
    assert si_count(count) == text


def test_metadata_has_three_lines_and_no_final_newline():
    assert metadata_text("meta-llama/Llama-3.1-8B", 4, 1234567) == "meta-llama/Llama-3.1-8B|4\n1234567\n1.23 MT"


@pytest.mark.parametrize("vocab_size, datatrove_bytes, megatron_dtype",
                         [(65499, 2, "uint16"), (65500, 2, "int32"), (65536, 2, "int32"), (65537, 4, "int32")])
def test_token_size_switches_above_65536_ids_where_megatron_switches_at_65500(vocab_size, datatrove_bytes,
                                                                              megatron_dtype):
    assert token_size_for(vocab_size) == datatrove_bytes
    assert optimal_dtype(vocab_size).name == megatron_dtype


def write_pbin(path: Path, documents: list[list[int]], width: int = 4) -> Path:
    with PbinWriter(path, width) as writer:
        writer.write(np.array([t for document in documents for t in document], np.int64),
                     np.array([len(document) for document in documents]))
    return path


@pytest.mark.parametrize("vocab_size, token_size", [(65500, 2), (65536, 2), (65537, 4)])
def test_boundary_vocabularies_convert_with_their_token_size(tmp_path, vocab_size, token_size):
    pbin = write_pbin(tmp_path / "x.pbin", [[0, 1, vocab_size - 1], [7]])
    summary = pbin_to_datatrove(pbin, tmp_path / "x", tokenizer_name="t", vocab_size=vocab_size)
    assert summary["token_size"] == token_size
    assert (tmp_path / "x.ds").read_bytes() == np.array([0, 1, vocab_size - 1, 7], f"<u{token_size}").tobytes()
    assert (tmp_path / "x.ds.metadata").read_text() == f"t|{token_size}\n4\n4.00 T"
    assert verify(tmp_path / "x.ds") == []


def test_an_id_beyond_the_token_size_is_refused_naming_the_document_and_nothing_is_written(tmp_path):
    pbin = write_pbin(tmp_path / "x.pbin", [[1], [2, 65536]])
    with pytest.raises(TokenmillError, match="token id 65536 of document 1 does not fit 2-byte tokens"):
        pbin_to_datatrove(pbin, tmp_path / "out/x", tokenizer_name="t", vocab_size=65536)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.slow
def test_an_sft_pbin_gives_its_loss_mask_as_ds_loss(tmp_path):
    from tokenmill.training.sft_datasets import loss_mask_path
    from tokenmill.pack.sft import write_sft

    config = {"tokenizers": {"tekken": {"path": str(TEKKEN)}},
              "sft": {"chat": {"inputs": [str(Path(GPT2).parent.parent / "raw/chat.jsonl")], "tokenizer": "tekken",
                               "special_tokens": {"bos_token": "<s>", "eos_token": "</s>"},
                               "loss_masking_jq_patterns": ['.conversations | select(.from == "human")'],
                               "message_construction": ["conversations"], "seq_length": 768}}}
    write_sft("chat", config, tmp_path / "chat.pbin")
    summary = pbin_to_datatrove(tmp_path / "chat.pbin", tmp_path / "chat")
    assert summary["loss"] and summary["token_size"] == 4  # Tekken: 131,072 ids
    pbin, mask, dataset = PbinFile(tmp_path / "chat.pbin"), PbinFile(loss_mask_path(tmp_path / "chat.pbin")), \
        DatatroveFile(tmp_path / "chat.ds")
    assert np.array_equal(dataset.tokens, pbin.tokens)  # conversations as they are: no EOD added
    assert (tmp_path / "chat.ds.loss").read_bytes() == np.asarray(mask.tokens).tobytes()
    assert 0 < int(dataset.loss.sum()) < dataset.num_tokens
    assert verify(tmp_path / "chat.ds") == []


def test_writer_renames_into_place_only_when_finished_and_removes_a_stale_loss_file(tmp_path):
    (tmp_path / "x.ds.loss").write_bytes(b"\x01" * 3)  # an earlier build's flags
    with pytest.raises(RuntimeError, match="^stopped$"):
        with DatatroveWriter(tmp_path / "x", 2, "t") as writer:
            writer.add_batch(np.array([1, 2, 3]), np.array([3]))
            raise RuntimeError("stopped")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["x.ds.loss"]
    with DatatroveWriter(tmp_path / "x", 2, "t") as writer:
        writer.add_batch(np.array([1, 2, 3]), np.array([3]))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["x.ds", "x.ds.index", "x.ds.metadata"]


def damage(name: Path, suffix: str, data: bytes) -> None:
    Path(f"{name}{suffix}").write_bytes(data)


@pytest.mark.parametrize("suffix, data, problem", [
    (".ds", b"\x00" * 10, r"demo200.ds: 10 bytes, but .*demo200.ds.index ends at token 39577 \(79154 bytes"),
    (".ds.index", np.array([100, 100, 39577], "<u8").tobytes(), "entry 1 is 100, not after the entry before it"),
    (".ds.index", np.array([0, 39577], "<u8").tobytes(), "entry 0 is 0"),
    (".ds.index", b"\x01" * 12, "12 bytes, not a whole number of 8-byte items"),
    (".ds.metadata", b"gpt2.tokenizer.json|2\n39576\n39.6 kT", "says 39576 tokens, .*holds 39577"),
    (".ds.metadata", b"gpt2.tokenizer.json|2\n39577\n39.58 kT", "writes the count as '39.58 kT', datatrove writes"),
    (".ds.metadata", b"gpt2.tokenizer.json|4\n39577\n39.6 kT", r"79154 bytes, but .* \(158308 bytes of 4-byte"),
    (".ds.metadata", b"gpt2.tokenizer.json\n39577\n39.6 kT", "not datatrove metadata"),
    (".ds.loss", b"\x01" * 5, "5 flags for 39577 tokens"),
    (".ds.loss", b"\x01" * 39576 + b"\x02", "flag 2 at token 39576; flags are 0 or 1"),
])
def test_verify_finds_each_inconsistency_and_passes_the_intact_files(demo200, suffix, data, problem):
    assert verify(f"{demo200}.ds") == []
    assert verify(f"{demo200}.ds.index") == []  # any of its files names the dataset
    damage(demo200, suffix, data)
    problems = verify(f"{demo200}.ds")
    assert len(problems) == 1 and __import__("re").search(problem, problems[0]), problems


def test_the_cli_verifies_and_inspects_a_ds(demo200):
    assert run_tokenmill("verify", f"{demo200}.ds").stderr.strip() == "1 file(s) verified, no problem found"
    assert describe(f"{demo200}.ds") == [
        f"dataset: {demo200}.ds (datatrove/nanotron .ds)", "token size: 2 bytes", "documents: 200",
        "tokens: 39577", "loss flags: none", "metadata: tokenizer 'gpt2.tokenizer.json', 39.6 kT"]
    lines = show_document(f"{demo200}.ds", 1, str(GPT2))
    assert lines[0] == "document 1: 85 tokens" and lines[-1].startswith("text: ")
    assert lines[-1].endswith(GPT2_EOD) or "chars)" in lines[-1]
    damage(demo200, ".ds", b"\x00" * 4)
    result = run_tokenmill("verify", f"{demo200}.ds", check=False)
    assert result.returncode == 1 and "4 bytes, but" in result.stderr


def test_an_empty_pbin_gives_empty_files_and_datatrove_s_zero_count(tmp_path):
    pbin = write_pbin(tmp_path / "e.pbin", [])
    assert pbin_to_datatrove(pbin, tmp_path / "e", tokenizer_name="t", vocab_size=10)["documents"] == 0
    assert (tmp_path / "e.ds").read_bytes() == b"" and (tmp_path / "e.ds.index").read_bytes() == b""
    assert (tmp_path / "e.ds.metadata").read_text() == "t|2\n0\n0.00 T"
    assert verify(tmp_path / "e.ds") == [] and GPT2_EOD_ID == 50256


# ---- The workflow: a dataset's `formats` decide what is made


def plan_of(folder: Path, blends: dict | None = None, **datasets):
    from tokenmill.config import validate_config
    from tokenmill.plan import Plan

    (folder / "gpt2.json").write_bytes(GPT2.read_bytes())
    (folder / "a.jsonl").write_bytes(b'{"text": "hello"}\n' * 3)
    config = {"tokenizers": {"gpt2": {"path": str(folder / "gpt2.json"), "eod": GPT2_EOD}},
              "datasets": {name: {"inputs": [str(folder / "a.jsonl")], "tokenizer": "gpt2",
                                  "allow_duplicate_inputs": True, **entry} for name, entry in datasets.items()},
              "sampling": {"seq_lengths": [512], "seeds": [1], "num_samples": {"train": 1, "valid": 1, "test": 1}},
              "blends": blends or {}}
    return Plan(validate_config(config, "my.yaml"))


def test_formats_default_to_pbin_and_megatron_and_datatrove_adds_its_folder(tmp_path):
    plan = plan_of(tmp_path, web={}, nano={"formats": ["pbin", "megatron", "datatrove"]}, lean={"formats": ["pbin"]})
    assert plan.units.formats("web") == ["pbin", "megatron"]
    ds = ["data/datatrove/nano/nano.ds", "data/datatrove/nano/nano.ds.index", "data/datatrove/nano/nano.ds.metadata"]
    targets = plan.outputs.all_targets()
    assert not any(target.startswith("data/datatrove/web") for target in targets)
    assert set(ds) <= set(targets) and set(ds) <= set(plan.outputs.verify_files("nano"))
    assert plan.commands.verify_options("nano")[-4:] == ["data/packed/nano.pbin", "data/megatron/nano_text_document",
                                                         "data/datatrove/nano/nano.ds", "data/cache/nano/seq512_seed1"]
    assert plan.outputs.built_files("lean") == ["data/packed/lean.pbin", "data/packed/lean.pbin.meta.json"]
    assert plan.outputs.cache_dirs("lean") == []
    assert not any("lean" in target and "megatron" in target for target in targets)
    assert plan.commands.verify_options("lean")[-1:] == ["data/packed/lean.pbin"]
    # pack writes the .pbin and Megatron's files in its one pass; datatrove's are converted from the .pbin, so
    # that adding that format to a built dataset never tokenizes it again
    assert plan.commands.pack_outputs("nano") == ["-o", "data/packed/nano.pbin", "--megatron",
                                                  "data/megatron/nano_text_document"]
    without_datatrove = plan_of(tmp_path, web={}, nano={}, lean={"formats": ["pbin"]})
    assert plan.commands.pack_outputs("nano") == without_datatrove.commands.pack_outputs("nano")
    assert plan.commands.pack_outputs("lean") == ["-o", "data/packed/lean.pbin"]
    assert plan.commands.pack_format("nano") == " ".join(FORMAT_VERSIONS[name] for name in ("pbin", "mmidx"))


def test_a_blend_needs_its_datasets_in_the_megatron_format_and_pbin_is_always_made(tmp_path):
    with pytest.raises(TokenmillError, match=r"blends.mix.weights: dataset 'nano' is not made in the megatron format"):
        plan_of(tmp_path, blends={"mix": {"weights": {"web": 1, "nano": 1}}}, web={},
                nano={"formats": ["pbin", "datatrove"]})
    with pytest.raises(TokenmillError, match="formats"):
        plan_of(tmp_path, nano={"formats": ["datatrove"]})


@pytest.mark.slow
def test_the_workflow_builds_a_parquet_dataset_in_row_group_shards_into_datatrove_s_bytes(workflow_dir):
    """A Parquet dataset with datatrove in its formats, cut into row-group shards: the .ds equals
    to-datatrove of the same rows packed from JSONL, and verify checks it."""
    import yaml
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    from tokenmill.inputs.parquet import row_group_bytes

    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines()[:200]
    rows = [json.loads(line) for line in lines]
    pq.write_table(pa.Table.from_pylist(rows), workflow_dir / "data/raw/rows.parquet", row_group_size=50,
                   compression="zstd")
    (workflow_dir / "rows.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
    config["datasets"] = {"rows": {"inputs": ["data/raw/rows.parquet"], "tokenizer": "gpt2",
                                   "formats": ["pbin", "datatrove"],
                                   # about 2 row groups a shard
                                   "shard_bytes": 2 * max(row_group_bytes(pq.ParquetFile(
                                       workflow_dir / "data/raw/rows.parquet").metadata))}}
    config["sft"] = {}
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    meta = json.loads((workflow_dir / "data/packed/rows.pbin.meta.json").read_text())
    ranges = [source["row_group_range"] for source in meta["sources"]]
    assert len(ranges) > 1 and ranges[0][0] == 0 and ranges[-1][1] == 4 and meta["documents"] == 200
    run_tokenmill("pack", "rows.jsonl", "--tokenizer", "data/tokenizers/gpt2.tokenizer.json", "--eod", GPT2_EOD,
                  "-o", "rows.pbin", cwd=workflow_dir)
    run_tokenmill("to-datatrove", "rows.pbin", "-o", "expected/rows", cwd=workflow_dir)
    for suffix in (".ds", ".ds.index", ".ds.metadata"):
        assert (workflow_dir / f"data/datatrove/rows/rows{suffix}").read_bytes() == \
            (workflow_dir / f"expected/rows{suffix}").read_bytes()
    assert "ok data/datatrove/rows/rows.ds\n" in (workflow_dir / "data/verified/rows+datatrove+pbin.ok").read_text()
    assert not (workflow_dir / "data/cache/rows").exists()
    assert not list((workflow_dir / "data/megatron").glob("rows*"))  # not in its formats: never written
    # one unit: the .ds converted from its .pbin, the same bytes
    config["datasets"]["rows"]["shard_bytes"] = None
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    assert "data/packed/rows.pbin: 200 documents" in (workflow_dir / "logs/pack/rows.log").read_text()
    assert len(json.loads((workflow_dir / "data/packed/rows.pbin.meta.json").read_text())["sources"]) == 1
    for suffix in (".ds", ".ds.index", ".ds.metadata"):
        assert (workflow_dir / f"data/datatrove/rows/rows{suffix}").read_bytes() == \
            (workflow_dir / f"expected/rows{suffix}").read_bytes()
    assert not list((workflow_dir / "data/megatron").glob("rows*"))


def test_to_datatrove_names_the_tokenizer_as_pack_was_given_it_from_the_same_folder(tmp_path):
    """The sidecar records the tokenizer from its own folder (``../gpt2.tokenizer.json``); the metadata
    names it as reached from where the conversion runs, which is how pack was given it there."""
    (tmp_path / "gpt2.tokenizer.json").write_bytes(GPT2.read_bytes())
    (tmp_path / "eod.jsonl").write_bytes(b"".join(json.dumps({"text": text}).encode() + b"\n" for text in EOD_TEXTS))
    run_tokenmill("pack", "eod.jsonl", "--tokenizer", "gpt2.tokenizer.json", "--eod", GPT2_EOD, "-o", "sub/eod.pbin",
                  cwd=tmp_path)
    assert json.loads((tmp_path / "sub/eod.pbin.meta.json").read_text())["tokenizer"]["path"] == \
        "../gpt2.tokenizer.json"
    run_tokenmill("to-datatrove", "sub/eod.pbin", "-o", "out/eod", cwd=tmp_path)
    assert {suffix: sha256(path) for suffix, path in datatrove_paths(tmp_path / "out/eod").items()
            if path.exists()} == DATATROVE_EOD


# ---- Every tokenizer: datatrove's post-processor rule and vocabulary size (recorded on GPT-2 variants)

# datatrove 0.10.1 on tests/data/mixed.jsonl: the same .ds and .ds.index for bos, eos and id70000
DATATROVE_MIXED = {".ds": "11f531ae3eb943f0e2389b123d64adadc38522dad97697ff3d9475cb5137f7bc",
                   ".ds.index": "844d743b417e89767b369d294b6c3e319fe41ebd08138b6b50489e7e514a1b6e"}
DATATROVE_MIXED_METADATA = {  # "NAME.tokenizer.json|2\n2513\n2.51 kT"
    "bos": "677f4fe1734b8112d2e92a50e80bec7ad60b3929870dca70ea230ce2c39c5083",
    "eos": "4439df45ea604b730c342999d61d172d0f591a593a07b1197be99fd67f7ebf8a",
    "id70000": "ddca17b626aaea2ec75633b682e629a71a2784a2d77e9d759c2ceee19f717cb3",
}
SPECIAL_TEXTS = ["Hello world.", "<|begin_of_text|>Starts with the BOS string", "Ends with the marker<|endoftext|>",
                 "<|endoftext|>", "An <|extra|> token", "Last one,\nwith a newline.\n"]
DATATROVE_SPECIAL = {  # NAME: (.ds tokens, .ds.index, sha256 of .ds, .ds.index, .ds.metadata)
    "bos": ([15496, 995, 13, 50256, 50257, 1273, 5889, 351, 262, 347, 2640, 4731, 50256, 12915, 82, 351, 262, 18364,
             50256, 50256, 50256, 50256, 2025, 1279, 91, 26086, 91, 29, 11241, 50256, 5956, 530, 11, 198, 4480, 257,
             649, 1370, 13, 198, 50256], [4, 13, 20, 22, 30, 41],
            {".ds": "c5d45714edc260936da75d2a1143b4c6dcf845a99586d4b174be980add7dd6dd",
             ".ds.index": "b8815f01c1c35f5b7a01a7d72d46e1604b84a3bb34460c21e9ab62fd9739cbcd",
             ".ds.metadata": "f08d36504735d4c0b3e7b1fc1c5f6c0b87c1801e51fc82948eceb428dae695e6"}),
    "eos": ([15496, 995, 13, 50256, 27, 91, 27471, 62, 1659, 62, 5239, 91, 29, 1273, 5889, 351, 262, 347, 2640, 4731,
             50256, 12915, 82, 351, 262, 18364, 50256, 50256, 50256, 50256, 2025, 1279, 91, 26086, 91, 29, 11241, 50256,
             5956, 530, 11, 198, 4480, 257, 649, 1370, 13, 198, 50256], [4, 21, 28, 30, 38, 49],
            {".ds": "8bdf25b98d738b8eac1b14405a375b341666e54c2d4e7688600adcf71eddba36",
             ".ds.index": "97cd8191228acf7ba346983d6f12503a9c62c8bae1f8665fefaed67d50ddf040",
             ".ds.metadata": "5bb7faf8ff23e7b07388797a5c5347a2dc4f61507458d27e86d532d0099c75f1"}),
    "id70000": ([15496, 995, 13, 50256, 27, 91, 27471, 62, 1659, 62, 5239, 91, 29, 1273, 5889, 351, 262, 347, 2640,
                 4731, 50256, 12915, 82, 351, 262, 18364, 50256, 50256, 50256, 50256, 2025, 220, 50257, 11241, 50256,
                 5956, 530, 11, 198, 4480, 257, 649, 1370, 13, 198, 50256], [4, 21, 28, 30, 35, 46],
                {".ds": "9ba8d06623b0d068b85b1e2f1b7ce1524d2de1f40dbb6019801de406eada3850",
                 ".ds.index": "9fd3354dc7098ea1aedf2c18672bee190448bbf194862277de43a21b6432c31a",
                 ".ds.metadata": "5f173d10236ddaa68a7499bc00bc9dff78b67633e118858f10da41d6291accd8"}),
}
# what load_tokenizer derives: (vocab_size = len(tokenizer), .pbin token width, post-processor ids before/after)
VARIANT_FACTS = {"bos": (50258, 2, ((50257,), ())), "eos": (50257, 2, ((), (50256,))), "id70000": (50258, 2, ((), ()))}


def gpt2_variant(name: str) -> dict:
    """GPT-2's tokenizer.json with a BOS template (``bos``), an EOS template (``eos``) or an added token
    declared at id 70000 (``id70000``): the recipe the recorded peer bytes were made with."""
    tokenizer = json.loads(GPT2.read_bytes())

    def added(token_id: int, content: str) -> dict:
        return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True}

    def special(token: str, type_id: int = 0) -> dict:
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def text(sequence: str, type_id: int = 0) -> dict:
        return {"Sequence": {"id": sequence, "type_id": type_id}}

    if name == "bos":
        bos = "<|begin_of_text|>"
        tokenizer["added_tokens"].append(added(50257, bos))
        tokenizer["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing", "single": [special(bos), text("A")],
             "pair": [special(bos), text("A"), special(bos, 1), text("B", 1)],
             "special_tokens": {bos: {"id": bos, "ids": [50257], "tokens": [bos]}}}]}
    elif name == "eos":
        eos = GPT2_EOD
        tokenizer["post_processor"] = {
            "type": "TemplateProcessing", "single": [text("A"), special(eos)],
            "pair": [text("A"), special(eos), text("B", 1), special(eos, 1)],
            "special_tokens": {eos: {"id": eos, "ids": [GPT2_EOD_ID], "tokens": [eos]}}}
    else:
        tokenizer["added_tokens"].append(added(70000, "<|extra|>"))
    return tokenizer


@functools.cache
def variant_text(name: str) -> bytes:
    """The text of ``NAME.tokenizer.json``: json.dump's text, from json.dumps's C encoder (json.dump encodes in
    Python: 0.5 s a file); made once per process (a parse and a dump of GPT-2: ~0.3 s), written by each test."""
    return json.dumps(gpt2_variant(name), ensure_ascii=False).encode("utf-8")


def write_variant(folder: Path, name: str) -> str:
    """``folder/NAME.tokenizer.json``; returns its name relative to ``folder``, as datatrove was given it."""
    (folder / f"{name}.tokenizer.json").write_bytes(variant_text(name))
    return f"{name}.tokenizer.json"


def pack_variant(folder: Path, name: str, texts: list[str] | None = None) -> Path:
    """``pack`` in ``folder`` (the working directory) of mixed.jsonl, or of ``texts``, with tokenizer ``name``
    and GPT-2's EOD into ``NAME.pbin``, ``NAME_text_document.bin/.idx`` and ``packed/NAME.ds`` in one pass."""
    tokenizer = write_variant(folder, name)
    source = folder / "input.jsonl"
    source.write_bytes(MIXED_JSONL.read_bytes() if texts is None else
                       b"".join(json.dumps({"text": text}).encode() + b"\n" for text in texts))
    pack_files([str(source)], str(folder / f"{name}.pbin"), PackSettings(tokenizer, eod=GPT2_EOD),
               log=lambda message: None, megatron_prefix=str(folder / f"{name}_text_document"),
               datatrove_name=str(folder / "packed" / name), datatrove_tokenizer_name=tokenizer)
    return folder / f"{name}.pbin"


def digests(name: Path) -> dict:
    return {suffix: sha256(path) for suffix, path in datatrove_paths(name).items() if path.exists()}


@pytest.mark.parametrize("name", VARIANT_FACTS)
def test_the_tokenizer_counts_its_tokens_as_loaded_and_tells_its_post_processor_s_ids(tmp_path, name):
    vocab_size, width, added = VARIANT_FACTS[name]
    info = load_tokenizer(tmp_path / write_variant(tmp_path, name), GPT2_EOD)
    assert (info.vocab_size, info.token_width, info.post_processor_ids) == (vocab_size, width, added)
    assert info.vocab_size == info.tokenizer.get_vocab_size() == info.id_limit  # datatrove's count; no gaps
    entry = info.sidecar_entry()
    assert entry["vocab_size"] == vocab_size and "id_limit" not in entry
    assert entry["post_processor_ids"] == {"before": list(added[0]), "after": list(added[1])}


@pytest.mark.parametrize("name", VARIANT_FACTS)
def test_pack_and_to_datatrove_write_datatrove_s_bytes_for_every_tokenizer(tmp_path, monkeypatch, name):
    """mixed.jsonl: one .ds whatever the post-processor or the declared ids, as datatrove writes it; the
    .pbin and .bin keep their own peers' rules (the BOS kept; Megatron's second EOD), all 2-byte tokens."""
    monkeypatch.chdir(tmp_path)
    pbin = pack_variant(tmp_path, name)
    pbin_to_datatrove(pbin, tmp_path / "converted" / name, tokenizer_name=f"{name}.tokenizer.json")
    expected = {**DATATROVE_MIXED, ".ds.metadata": DATATROVE_MIXED_METADATA[name]}
    assert digests(tmp_path / "packed" / name) == digests(tmp_path / "converted" / name) == expected
    assert (tmp_path / "packed" / f"{name}.ds.metadata").read_text() == f"{name}.tokenizer.json|2\n2513\n2.51 kT"
    megatron, packed = MMapIndexedDataset(tmp_path / f"{name}_text_document"), PbinFile(pbin)
    assert megatron.dtype == np.uint16 and packed.token_width == 2  # Megatron: len(tokenizer) < 65,500
    extra = {"bos": 50, "eos": 50, "id70000": 0}[name]  # a BOS each; a second EOD each (Megatron's --append-eod)
    assert packed.num_tokens == 2513 + (extra if name == "bos" else 0)
    assert (tmp_path / f"{name}_text_document.bin").stat().st_size == 2 * (2513 + extra)
    assert verify_made_from(pbin, tmp_path / f"{name}_text_document", tmp_path / "packed" / name) == []
    assert verify(tmp_path / "packed" / f"{name}.ds") == []  # its metadata's tokenizer is found from here


@pytest.mark.parametrize("name", DATATROVE_SPECIAL)
def test_special_strings_in_the_text_stay_where_datatrove_keeps_them(tmp_path, monkeypatch, name):
    """A text starting with the BOS string keeps it (only the post-processor's BOS goes), one ending with
    the EOS gets a second, the added token declared at 70000 is 50257 in a 2-byte .ds."""
    monkeypatch.chdir(tmp_path)
    tokens, ends, expected = DATATROVE_SPECIAL[name]
    pbin = pack_variant(tmp_path, name, SPECIAL_TEXTS)
    dataset = DatatroveFile(tmp_path / "packed" / name)
    assert dataset.tokens.tolist() == tokens and dataset.ends.tolist() == ends
    assert digests(tmp_path / "packed" / name) == expected
    pbin_to_datatrove(pbin, tmp_path / "converted" / name, tokenizer_name=f"{name}.tokenizer.json")
    assert digests(tmp_path / "converted" / name) == expected


def test_datatrove_documents_leave_the_post_processor_s_ids_out_and_double_the_eod():
    """EOD 9. A BOS template ``7 $A``: ``7 1 2 | 9`` (EOD appended), ``7 3 9`` (the text ended with it:
    nothing appended). An EOS template ``7 $A 9``: every packed document ends with 9, none appended:
    ``7 1 2 9``, ``7 3 9 9``, ``7 9`` (an empty text). datatrove: the text's ids, then 9."""
    bos = datatrove_documents(np.array([7, 1, 2, 9, 7, 3, 9]), np.array([4, 3]), 9, np.array([1]), ((7,), ()))
    assert [part.tolist() for part in bos[:2]] == [[1, 2, 9, 3, 9, 9], [3, 3]]
    tokens, lengths = np.array([7, 1, 2, 9, 7, 3, 9, 9, 7, 9]), np.array([4, 4, 2])
    out, out_lengths, out_loss = datatrove_documents(tokens, lengths, 9, np.array([0, 1, 2]), ((7,), (9,)),
                                                     loss=np.arange(10) % 2)
    assert out.tolist() == [1, 2, 9, 3, 9, 9, 9] and out_lengths.tolist() == [3, 3, 1]
    assert out_loss.tolist() == [1, 0, 1, 1, 0, 1, 1]  # the kept tokens' flags; each added EOD trained
    assert datatrove_documents(tokens, lengths, None, None, ((7,), (9,)))[0] is tokens  # no EOD: as packed
    with pytest.raises(TokenmillError, match=r"document 12 does not hold the ids .* \(\[7\] before its own, \[\]"):
        datatrove_documents(np.array([7, 1, 9, 6, 1, 9]), np.array([3, 3]), 9, None, ((7,), ()), first_document=11)


def test_a_sidecar_from_before_the_record_asks_its_tokenizer_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pbin = pack_variant(tmp_path, "bos", SPECIAL_TEXTS)
    meta_path = Path(f"{pbin}.meta.json")
    meta = json.loads(meta_path.read_text())
    del meta["tokenizer"]["post_processor_ids"]
    meta_path.write_text(json.dumps(meta))
    assert packed_post_processor_ids(read_sidecar(pbin), pbin) == ((50257,), ())
    pbin_to_datatrove(pbin, tmp_path / "converted" / "bos", tokenizer_name="bos.tokenizer.json")
    assert digests(tmp_path / "converted" / "bos") == DATATROVE_SPECIAL["bos"][2]
    Path("bos.tokenizer.json").write_text(Path("bos.tokenizer.json").read_text() + "\n")
    with pytest.raises(TokenmillError, match="no longer the tokenizer .* was packed with .*repack it"):
        packed_post_processor_ids(read_sidecar(pbin), pbin)


def _old_datatrove(pbin: Path, name: Path, token_size: int) -> None:
    """What tokenmill wrote before it followed datatrove's post-processor and vocabulary rules: the
    .pbin's documents as they are, with a second EOD where their ids already ended with it."""
    packed, meta = PbinFile(pbin), read_sidecar(pbin)
    name.parent.mkdir(parents=True, exist_ok=True)
    with DatatroveWriter(name, token_size, Path(pbin).stem + ".tokenizer.json") as writer:
        writer.add_batch(np.asarray(packed.tokens), packed.doc_lengths, GPT2_EOD_ID,
                         np.flatnonzero(range_indices(meta["eod_in_text"], packed.num_documents)))


@pytest.mark.parametrize("name, kept", [("bos", r"\[50257\] before the text's, \[\] after"),
                                        ("eos", r"\[\] before the text's, \[50256\] after")])
def test_verify_finds_a_ds_that_keeps_the_post_processor_s_ids(tmp_path, monkeypatch, name, kept):
    monkeypatch.chdir(tmp_path)
    pbin = pack_variant(tmp_path, name)
    _old_datatrove(pbin, tmp_path / "old" / name, 2)
    problems = verify(tmp_path / "old" / f"{name}.ds")
    assert len(problems) == 1 and __import__("re").search(
        rf"all 50 documents keep the ids {name}.tokenizer.json's post-processor adds \({kept}\) before their EOS "
        rf"50256; datatrove's DocumentTokenizer replaces the post-processor by '\$A <EOS>'", problems[0]), problems
    assert verify_made_from(pbin, datatrove_name=tmp_path / "old" / name) == [
        f"{tmp_path / 'old' / name}.ds: document 0 is not what datatrove writes for document 0 of {pbin} (the text's "
        f"ids without its post-processor's {list(VARIANT_FACTS[name][2][0])} before and "
        f"{list(VARIANT_FACTS[name][2][1])} after, then one EOS 50256)"]


def test_verify_finds_dtypes_taken_from_the_declared_ids(tmp_path, monkeypatch):
    """The 70000 that the file declares made a uint32 .ds and an int32 .bin; datatrove and Megatron count
    the tokens as loaded (50,258) and write uint16."""
    monkeypatch.chdir(tmp_path)
    pbin = pack_variant(tmp_path, "id70000", SPECIAL_TEXTS)
    _old_datatrove(pbin, tmp_path / "old" / "id70000", 4)
    packed = PbinFile(pbin)
    with MMapIndexedDatasetBuilder(tmp_path / "old_bin", np.int32) as builder:
        builder.add_batch(np.asarray(packed.tokens), packed.doc_lengths)
    assert verify(tmp_path / "old" / "id70000.ds") == [
        f"{tmp_path / 'old' / 'id70000.ds'}: 4-byte tokens, but datatrove writes 2-byte tokens for "
        f"id70000.tokenizer.json (50258 tokens; 4 bytes above 65,536)"]
    assert verify_made_from(pbin, tmp_path / "old_bin", tmp_path / "old" / "id70000") == [
        f"{tmp_path / 'old_bin'}.bin: int32 tokens, but Megatron's preprocess_data.py writes uint16 for the vocabulary "
        f"of 50258 tokens of {pbin}'s sidecar (uint16 below 65,500)",
        f"{tmp_path / 'old' / 'id70000.ds'}: 4-byte tokens, but datatrove writes 2-byte tokens for the vocabulary of "
        f"50258 tokens of {pbin}'s sidecar (4 bytes above 65,536)"]
