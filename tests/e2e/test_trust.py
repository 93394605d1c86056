"""Trust: nothing is cut, overwritten, dropped, mixed or copied behind the user's back.

Each test is one way tokenmill used to lose or corrupt data while exiting 0 (issue 9, items 1-5
and 7-10), written as the user met it.
"""

import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

from conftest import (DATA, GPT2, GPT2_EOD, GPT2_EOD_ID, MIXED_JSONL, run_tokenmill, tool_env,
                      write_jsonl_bytes)
from tokenmill.errors import TokenmillError
from tokenmill.files.safe_pickle import loads_pairs
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.formats.pbin import PbinFile, PbinWriter, read_sidecar
from tokenmill.formats.sidecar import sidecar_path
from tokenmill.megatron.index_cache import null_tokenizer_identifiers
from tokenmill.training.datasets import (BlendedNanoset, MemMapDataset, Nanoset, NanosetBuilder, NanosetConfig,
                                         PackedMemMapDatasetBase)

MINILM = DATA / "minilm-bert.tokenizer.json"  # ships with truncation to 128 and padding to 128
MINILM_PAD_ID = 0


def assert_one_line_error(result, *fragments):
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokenmill: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---- 1. the tokenizer file's truncation and padding are never applied ------------------------

def test_a_tokenizer_json_with_truncation_and_padding_packs_whole_unpadded_documents(tmp_path):
    long_text = " ".join(f"word{i}" for i in range(500))
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [json.dumps({"text": t}).encode() for t in (long_text, "hello")])
    run_tokenmill("pack", source, "--tokenizer", MINILM, "--no-eod", "-o", tmp_path / "x.pbin")

    untouched = Tokenizer.from_file(str(MINILM))
    untouched.no_truncation()
    untouched.no_padding()
    pbin = PbinFile(tmp_path / "x.pbin")
    assert pbin.document(0).tolist() == untouched.encode(long_text).ids  # > 128 tokens: not cut
    assert len(pbin.document(0)) > 1000
    assert pbin.document(1).tolist() == untouched.encode("hello").ids == [101, 7592, 102]  # [CLS] hello [SEP]
    tokenizer = read_sidecar(tmp_path / "x.pbin")["tokenizer"]
    assert tokenizer["ignored_settings"]["truncation"]["max_length"] == 128
    assert tokenizer["ignored_settings"]["padding"]["length"] == 128
    assert tokenizer["pad_id"] == MINILM_PAD_ID
    assert run_tokenmill("verify", tmp_path / "x.pbin").returncode == 0

    lines = MemMapDataset(source, MINILM)
    assert len(lines[0]) == len(pbin.document(0)) and lines[1].tolist() == [101, 7592, 102]


def test_verify_flags_a_pbin_packed_while_the_tokenizer_truncated_and_padded(tmp_path):
    # What the old tokenmill wrote for this tokenizer: every document 128 tokens, padded with [PAD],
    # and a sidecar without `ignored_settings` naming the (unchanged) tokenizer file.
    documents = [[101, *range(1000, 1126), 102]] * 9 + [[101, 7592, 102] + [MINILM_PAD_ID] * 125]
    with PbinWriter(tmp_path / "old.pbin", 2) as writer:
        writer.write(np.concatenate(documents), np.array([128] * 10))
        writer.sidecar = {"tokenizer": {"path": str(MINILM), "sha256": _sha256(MINILM), "vocab_size": 30522}}
    result = run_tokenmill("verify", tmp_path / "old.pbin", check=False)
    assert result.returncode == 1
    assert "whose padding and truncation were applied" in result.stderr
    assert "10 of 10 documents are exactly 128 tokens long" in result.stderr


def test_verify_flags_documents_holding_the_padding_id(tmp_path):
    with PbinWriter(tmp_path / "x.pbin", 2) as writer:
        writer.write(np.array([101, 7592, 102, 101, 7592, MINILM_PAD_ID, MINILM_PAD_ID]), np.array([3, 4]))
        writer.sidecar = {"tokenizer": {"path": str(MINILM), "vocab_size": 30522, "pad_id": MINILM_PAD_ID,
                                        "ignored_settings": {}}}
    result = run_tokenmill("verify", tmp_path / "x.pbin", check=False)
    assert "1 documents hold the padding id 0 of the tokenizer (first: document 1)" in result.stderr


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- 2 and 3. an output is never one of the inputs; merge takes -o and keeps what exists --------

@pytest.mark.slow
def test_no_verb_writes_over_its_input(tmp_path):
    corpus = tmp_path / "x.jsonl"
    corpus.write_bytes(MIXED_JSONL.read_bytes())
    original = corpus.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(corpus)
    os.link(corpus, tmp_path / "hard.jsonl")
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "x.pbin")
    attempts = [
        ["pack", corpus, "--tokenizer", GPT2, "--no-eod", "-o", corpus],
        ["pack", corpus, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "link.jsonl"],
        ["pack", corpus, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "hard.jsonl"],
        ["pack", corpus, "--tokenizer", GPT2, "--no-eod", "-o", GPT2],
        ["index", corpus, "-o", corpus],
        ["index", tmp_path / "link.jsonl", "-o", corpus],
        ["merge", tmp_path / "x.pbin", "-o", tmp_path / "x.pbin", "--force"],
        ["verify", tmp_path / "x.pbin", "--stamp", tmp_path / "x.pbin"],
    ]
    for attempt in attempts:
        result = run_tokenmill(*attempt, check=False)
        assert_one_line_error(result, "refusing to overwrite an input")
    assert corpus.read_bytes() == original and PbinFile(tmp_path / "x.pbin").num_documents == 50
    assert Tokenizer.from_file(str(GPT2)).get_vocab_size() == 50257

    # A .pbin that is named like the Megatron .bin it would be converted to.
    os.replace(tmp_path / "x.pbin", tmp_path / "y.bin")
    result = run_tokenmill("to-megatron", tmp_path / "y.bin", "-o", tmp_path / "y", check=False)
    assert_one_line_error(result, "y.bin: is the input")
    assert PbinFile(tmp_path / "y.bin").num_documents == 50


@pytest.mark.slow
def test_merge_takes_dash_o_and_keeps_an_existing_output_unless_forced(tmp_path):
    for name, lines in (("a", 3), ("b", 5)):
        source = write_jsonl_bytes(tmp_path / f"{name}.jsonl", MIXED_JSONL.read_bytes().splitlines()[:lines])
        run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / f"{name}.pbin")
    a_bytes = (tmp_path / "a.pbin").read_bytes()

    result = run_tokenmill("merge", tmp_path / "a.pbin", tmp_path / "b.pbin", check=False)  # the old order
    assert result.returncode == 2 and "-o/--output" in result.stderr
    assert (tmp_path / "a.pbin").read_bytes() == a_bytes

    run_tokenmill("merge", tmp_path / "a.pbin", tmp_path / "b.pbin", "-o", tmp_path / "ab.pbin")
    assert PbinFile(tmp_path / "ab.pbin").num_documents == 8
    result = run_tokenmill("merge", tmp_path / "b.pbin", "-o", tmp_path / "ab.pbin", check=False)
    assert_one_line_error(result, "ab.pbin: exists; pass --force")
    assert PbinFile(tmp_path / "ab.pbin").num_documents == 8
    run_tokenmill("merge", tmp_path / "b.pbin", "-o", tmp_path / "ab.pbin", "--force")
    assert PbinFile(tmp_path / "ab.pbin").num_documents == 5


# ---- 4. one JSON value per line, one text per pattern --------------------------------------------

@pytest.mark.parametrize("pattern", [".m.b", ".text"])
def test_a_second_json_value_on_a_line_is_a_bad_line_for_every_pattern(tmp_path, pattern):
    first, second = b'{"m": {"b": "one"}, "text": "one"}', b'{"m": {"b": "two"}, "text": "two"}'
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [first, second + second.replace(b"two", b"three"), first + b" x"])
    result = run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--jq", pattern, "-o", tmp_path / "x.pbin",
                           check=False)
    assert_one_line_error(result, f"{source}:2: invalid JSON: a second value or trailing characters at byte 34")
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--jq", pattern, "--on-bad-line", "skip", "-o",
                  tmp_path / "x.pbin")
    meta = read_sidecar(tmp_path / "x.pbin")
    assert meta["documents"] == 1
    assert meta["sources"][0]["skipped"] == {"invalid JSON: a second value or trailing characters at byte 34":
                                             {"count": 1, "first_lines": [2]},
                                             "invalid JSON: a second value or trailing characters at byte 35":
                                             {"count": 1, "first_lines": [3]}}


def test_a_pattern_with_several_outputs_is_a_bad_line_not_its_first_output(tmp_path):
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"texts": ["kept", "lost"]}'])
    result = run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--jq", ".texts[]", "-o",
                           tmp_path / "x.pbin", check=False)
    assert_one_line_error(result, f"{source}:1: jq pattern '.texts[]' gave more than one value")


# ---- 5. a raw index that no longer describes its file is refused ----------------------------------

@pytest.mark.slow
def test_a_stale_raw_index_is_refused_wherever_it_is_used(tmp_path):
    corpus = write_jsonl_bytes(tmp_path / "x.jsonl", MIXED_JSONL.read_bytes().splitlines()[:10])
    run_tokenmill("index", corpus, "-o", tmp_path / "x.idx")
    with open(corpus, "ab") as handle:  # lines appended after the index was built
        handle.write(b'{"text": "added later"}\n')
    result = run_tokenmill("pack", corpus, "--index", tmp_path / "x.idx", "--tokenizer", GPT2, "--no-eod", "-o",
                           tmp_path / "x.pbin", check=False)
    assert_one_line_error(result, "x.idx: its last line ends at byte", "stale index?")
    assert not (tmp_path / "x.pbin").exists()
    result = run_tokenmill("verify", tmp_path / "x.idx", "--jsonl", corpus, check=False)
    assert result.returncode == 1 and "stale index?" in result.stderr
    with pytest.raises(TokenmillError, match="stale index"):
        MemMapDataset(corpus, GPT2, index=tmp_path / "x.idx")

    # Same size, a line moved: the sampled line ends no longer fall on newlines.
    lines = MIXED_JSONL.read_bytes().splitlines(keepends=True)[:10]
    corpus.write_bytes(b"".join(lines))
    run_tokenmill("index", corpus, "-o", tmp_path / "x.idx")
    corpus.write_bytes(b"".join([lines[1], lines[0], *lines[2:]]))
    result = run_tokenmill("pack", corpus, "--index", tmp_path / "x.idx", "--tokenizer", GPT2, "--no-eod", "-o",
                           tmp_path / "x.pbin", check=False)
    assert_one_line_error(result, "x.idx: line 1 should end at byte", "no newline is there")


def test_trailing_blank_lines_do_not_make_an_index_stale(tmp_path):
    corpus = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text": "a"}', b'{"text": "b"}'])
    run_tokenmill("index", corpus, "-o", tmp_path / "x.idx")
    run_tokenmill("pack", corpus, "--index", tmp_path / "x.idx", "--tokenizer", GPT2, "--no-eod", "-o",
                  tmp_path / "x.pbin")
    assert PbinFile(tmp_path / "x.pbin").num_documents == 2


# ---- 7. the .pbin and its sidecar appear together -------------------------------------------------

KILL_AT_PBIN_RENAME = textwrap.dedent("""
    import os, signal, sys
    import tokenmill.formats.pbin
    real_replace = os.replace
    def replace_then_die(source, target):
        if str(target).endswith(".pbin"):  # the sidecar is in place; die before the .pbin is
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(source, target)
    tokenmill.formats.pbin.os.replace = replace_then_die
    from tokenmill.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.slow
def test_a_kill_between_the_two_renames_leaves_a_pair_that_is_refused(tmp_path):
    old = write_jsonl_bytes(tmp_path / "old.jsonl", MIXED_JSONL.read_bytes().splitlines()[:20])
    new = write_jsonl_bytes(tmp_path / "new.jsonl", MIXED_JSONL.read_bytes().splitlines()[20:])
    out = tmp_path / "x.pbin"
    run_tokenmill("pack", old, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", out)
    killed = subprocess.run([sys.executable, "-c", KILL_AT_PBIN_RENAME, "pack", str(new), "--tokenizer", str(GPT2),
                             "--eod", GPT2_EOD, "-o", str(out)], capture_output=True, text=True, env=tool_env())
    assert killed.returncode == -signal.SIGKILL
    assert PbinFile(out).num_documents == 20 and json.loads(sidecar_path(out).read_text())["documents"] == 30

    with pytest.raises(TokenmillError, match="x.pbin.meta.json: describes another .pbin than .*interrupted write"):
        read_sidecar(out)
    for verb in (["to-megatron", out, "-o", tmp_path / "m"], ["verify", out], ["inspect", out]):
        result = run_tokenmill(*verb, check=False)
        assert result.returncode == 1 and "describes another .pbin" in result.stderr
    run_tokenmill("pack", new, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", out)  # a rerun repairs it
    assert read_sidecar(out)["documents"] == PbinFile(out).num_documents == 30


def test_verify_hashes_the_tokens_against_the_sidecar(tmp_path):
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    data = bytearray((tmp_path / "x.pbin").read_bytes())
    data[12:14] = (GPT2_EOD_ID - 1).to_bytes(2, "little")  # same size and index, one token changed
    (tmp_path / "x.pbin").write_bytes(bytes(data))
    result = run_tokenmill("verify", tmp_path / "x.pbin", check=False)
    assert "its tokens differ: data_sha256 mismatch" in result.stderr


# ---- 8. crafted index pickles cost at most their size --------------------------------------------

def nested_shared_lists(levels: int, fan_out: int = 10) -> bytes:
    """A few hundred bytes that unpickle to fan_out ** levels references to one empty list."""
    value = []
    for _ in range(levels):
        value = [value] * fan_out
    return pickle.dumps(value, protocol=4)


@pytest.mark.parametrize("payload", [
    nested_shared_lists(7),  # as a list: np.array() walks 10**7 lists, repr() prints 20 MB
    pickle.dumps([(nested := [[[]] * 10] * 10, 1)] * 1000, protocol=4),  # pairs holding the bomb
    pickle.dumps([tuple([nested] * 10)] * 10, protocol=4),
])
def test_a_crafted_index_pickle_is_refused_with_a_short_message(payload):
    assert len(payload) < 4096
    with pytest.raises(TokenmillError, match=r"not a list of \(int, int\) pairs") as refused:
        loads_pairs(payload, "evil.idx")
    message = str(refused.value)
    assert message.startswith("evil.idx: index pickle is not a list of (int, int) pairs") and len(message) < 300


def test_shared_pairs_are_still_pairs():
    pair = (3, 4)
    assert loads_pairs(pickle.dumps([pair, pair, (5, 6)], protocol=4), "ok.idx").tolist() == [[3, 4], [3, 4], [5, 6]]


# ---- 9 and 10. readers keep the file they opened; pickles carry paths, not data ------------------

@pytest.fixture
def big_pbin(tmp_path):
    """2,000 documents of 500 tokens (2 MB), document i holds the value i % 50000 then its positions."""
    lengths = np.full(2000, 500)
    tokens = (np.arange(2000)[:, None] * 7 + np.arange(500)[None, :]) % 50000
    path = tmp_path / "big.pbin"
    with PbinWriter(path, 2) as writer:
        writer.write(tokens.ravel(), lengths)
        writer.sidecar = {"tokenizer": {"vocab_size": 50257, "eod_id": None}}
    return path


def test_a_live_reader_keeps_reading_the_file_it_opened_after_an_atomic_rebuild(tmp_path, big_pbin):
    documents = PackedMemMapDatasetBase(big_pbin)  # the index is read lazily, on first use
    expected = [(np.arange(500) + 7 * i) % 50000 for i in range(2000)]
    with PbinWriter(big_pbin, 2) as writer:  # rebuilt under the same name: other boundaries, other tokens
        writer.write(np.arange(1000), np.array([100] * 10))
    assert len(documents) == 2000
    assert all(np.array_equal(documents[i], expected[i]) for i in range(0, 2000, 37))

    copy = tmp_path / "lines.jsonl"
    copy.write_bytes(MIXED_JSONL.read_bytes())
    lines = MemMapDataset(copy, GPT2)
    replacement = tmp_path / "replacement.jsonl"
    replacement.write_bytes(b'{"text": "other"}\n' + MIXED_JSONL.read_bytes())
    os.replace(replacement, copy)
    with pytest.raises(TokenmillError, match="lines.jsonl: replaced since it was opened"):
        lines[0]


def nanoset_over(tmp_path, pbin):
    run_tokenmill("to-megatron", pbin, "-o", tmp_path / "big")
    config = NanosetConfig(str(tmp_path / "big"), str(tmp_path / "cache"), 1024, 1234,
                           null_tokenizer_identifiers(50257), num_samples={"train": 5000, "valid": 50, "test": 5})
    return config


def test_datasets_pickle_their_paths_not_their_data(tmp_path, big_pbin):
    config = nanoset_over(tmp_path, big_pbin)
    train = NanosetBuilder(config).build()["train"]
    blend = NanosetBuilder(config).build_blend([str(tmp_path / "big")] * 2, [0.5, 0.5])["train"]
    for dataset in (PackedMemMapDatasetBase(big_pbin), train, blend, MMapIndexedDataset(tmp_path / "big")):
        dataset[len(dataset) - 1]  # the lazily read indices are loaded
        pickled = pickle.dumps(dataset)
        assert len(pickled) < 20_000, type(dataset)  # the .pbin alone is 2 MB
        copy = pickle.loads(pickled)
        for i in (0, len(dataset) // 2, len(dataset) - 1):
            original, copied = dataset[i], copy[i]
            if isinstance(original, dict):
                assert all(torch.equal(torch.as_tensor(original[key]), torch.as_tensor(copied[key]))
                           for key in original)
            else:
                assert np.array_equal(original, copied)
    assert isinstance(blend, BlendedNanoset) and isinstance(train, Nanoset)


def test_an_unpickled_copy_refuses_a_file_rebuilt_since(tmp_path, big_pbin):
    config = nanoset_over(tmp_path, big_pbin)
    train_pickle = pickle.dumps(NanosetBuilder(config).build()["train"])
    documents_pickle = pickle.dumps(PackedMemMapDatasetBase(big_pbin))
    with PbinWriter(big_pbin, 2) as writer:
        writer.write(np.arange(1000), np.array([100] * 10))
        writer.sidecar = {"tokenizer": {"vocab_size": 50257}}
    run_tokenmill("to-megatron", big_pbin, "-o", tmp_path / "big")
    with pytest.raises(TokenmillError, match="big.pbin: replaced since it was opened"):
        pickle.loads(documents_pickle)
    with pytest.raises(TokenmillError, match="big.idx: replaced since it was opened"):
        pickle.loads(train_pickle)


@pytest.mark.slow
def test_spawned_dataloader_workers_read_the_same_documents(big_pbin):
    documents = PackedMemMapDatasetBase(big_pbin)
    loader = torch.utils.data.DataLoader(documents, batch_size=100, num_workers=2, multiprocessing_context="spawn")
    assert torch.equal(torch.cat(list(loader)), torch.as_tensor(np.stack([documents[i] for i in range(2000)])))


# ---- 6. a cache built for an older version of the dataset is rebuilt, not reused -------------------

@pytest.mark.slow
def test_a_cache_built_before_the_dataset_was_repacked_is_rebuilt(tmp_path):
    lines = MIXED_JSONL.read_bytes().splitlines()
    corpus = write_jsonl_bytes(tmp_path / "x.jsonl", lines[:40])
    arguments = ["-o", tmp_path / "cache", "--seq-length", "16", "--seed", "1", "--split", "1,0,0", "--epochs", "1",
                 "--vocab-size", "50257"]
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    run_tokenmill("to-megatron", tmp_path / "x.pbin", "-o", tmp_path / "x")
    assert "(built)" in run_tokenmill("sample-index", tmp_path / "x", *arguments).stderr
    assert "(found)" in run_tokenmill("sample-index", tmp_path / "x", *arguments).stderr

    corpus.write_bytes(b"\n".join(lines[:40] + lines[:10]) + b"\n")  # more documents, same file names
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    run_tokenmill("to-megatron", tmp_path / "x.pbin", "-o", tmp_path / "x")
    result = run_tokenmill("verify", tmp_path / "cache", check=False)
    assert result.returncode == 1 and f"built for another version of {tmp_path / 'x'}" in result.stderr
    result = run_tokenmill("sample-index", tmp_path / "x", *arguments)
    assert "(rebuilt: it had been built for another version of the dataset)" in result.stderr
    assert run_tokenmill("verify", tmp_path / "cache").returncode == 0

    config = NanosetConfig(str(tmp_path / "x"), str(tmp_path / "cache"), 16, 1, null_tokenizer_identifiers(50257),
                           split="1,0,0")
    train = NanosetBuilder(config).build()["train"]
    assert set(train.document_index.tolist()) == set(range(50))  # every document of the new version


def test_a_cache_without_a_fingerprint_is_used_as_megatron_built_it(tmp_path):
    corpus = write_jsonl_bytes(tmp_path / "x.jsonl", MIXED_JSONL.read_bytes().splitlines())
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    run_tokenmill("to-megatron", tmp_path / "x.pbin", "-o", tmp_path / "x")
    arguments = ["-o", tmp_path / "cache", "--seq-length", "16", "--seed", "1", "--epochs", "1", "--split", "1,0,0",
                 "--vocab-size", "50257"]
    run_tokenmill("sample-index", tmp_path / "x", *arguments)
    for fingerprint in (tmp_path / "cache").glob("*-tokenmill_fingerprint.json"):
        fingerprint.unlink()
    assert "(found)" in run_tokenmill("sample-index", tmp_path / "x", *arguments).stderr


@pytest.mark.slow
def test_blend_and_nanoset_builder_say_when_they_rebuild_a_part(tmp_path, caplog):
    lines = MIXED_JSONL.read_bytes().splitlines()
    corpus = write_jsonl_bytes(tmp_path / "x.jsonl", lines[:40])
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    run_tokenmill("to-megatron", tmp_path / "x.pbin", "-o", tmp_path / "x")
    blend = ["blend", "1", tmp_path / "x", "-o", tmp_path / "cache", "--seq-length", "16", "--seed", "1", "--split",
             "1,0,0", "--num-samples", "20", "--valid-samples", "0", "--test-samples", "0", "--vocab-size", "50257"]
    run_tokenmill(*blend)
    config = NanosetConfig(str(tmp_path / "x"), str(tmp_path / "nanoset"), 16, 1, null_tokenizer_identifiers(50257),
                           split="1,0,0")
    NanosetBuilder(config).build()
    corpus.write_bytes(b"\n".join(lines) + b"\n")
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    run_tokenmill("to-megatron", tmp_path / "x.pbin", "-o", tmp_path / "x")
    result = run_tokenmill(*blend)
    assert "GPTDataset-train-description.txt: train, " in result.stderr
    assert "(rebuilt: it had been built for another version of the dataset)" in result.stderr
    with caplog.at_level("WARNING", logger="tokenmill.training.nanoset"):
        NanosetBuilder(config).build()
    assert "the train index cache had been built for another version" in caplog.text
