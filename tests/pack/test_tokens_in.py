"""tokenmill tokens-in (tokenmill.pack.tokens_in): a .pbin and Megatron's files from tokens already made, equal to
what pack writes for the same text; bad sources refused in one line naming the file, before any output exists."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, GPT2_EOD_ID, run_tokenmill
from tokenmill.formats.bin_idx import MMapIndexedDataset, MMapIndexedDatasetBuilder
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.pack.tokens_in import tokens_in
from tokenmill.verify.checks import verify, verify_made_from


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> Path:
    """60 demo lines and one whose text ends with the EOD, packed to a.pbin and a_text_document.bin/.idx."""
    folder = tmp_path_factory.mktemp("packed")
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)[:60]
    (folder / "in.jsonl").write_bytes(b"".join(lines) + b'{"text": "the end<|endoftext|>"}\n')
    run_tokenmill("pack", folder / "in.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", folder / "a.pbin",
                  "--megatron", folder / "a_text_document", "--workers", "1")
    return folder


def _tokens_in(*sources, out: Path, eod: str | None = GPT2_EOD, check: bool = True):
    return run_tokenmill("tokens-in", *sources, "--tokenizer", GPT2, *(["--eod", eod] if eod else ["--no-eod"]),
                         "-o", out, "--megatron", out.with_suffix(""), check=check)


def _write(prefix: Path, documents: list[list[list[int]]], dtype=np.uint16) -> Path:
    """A Megatron dataset of documents given as lists of sequences."""
    with MMapIndexedDatasetBuilder(prefix, dtype) as builder:
        for document in documents:
            for sequence in document:
                builder.add_item(np.array(sequence, dtype=np.int64))
            builder.end_document()
    return prefix


@pytest.mark.parametrize("source", ["a_text_document", "a_text_document.idx", "a.pbin"])
def test_what_pack_wrote_reads_back_to_the_same_bytes(packed, tmp_path, source):
    _tokens_in(packed / source, out=tmp_path / "b.pbin")
    assert (tmp_path / "b.pbin").read_bytes() == (packed / "a.pbin").read_bytes()
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"b{suffix}").read_bytes() == (packed / f"a_text_document{suffix}").read_bytes()
    meta, packed_meta = read_sidecar(tmp_path / "b.pbin"), read_sidecar(packed / "a.pbin")
    assert meta["eod_in_text"] == packed_meta["eod_in_text"] == [[60, 61]]
    assert meta["tokenizer"] == packed_meta["tokenizer"] | {"path": meta["tokenizer"]["path"]}
    assert verify(tmp_path / "b.pbin") == []


def test_the_sidecar_records_each_source_and_verify_names_one_edited_since(packed, tmp_path):
    shutil.copy(packed / "a_text_document.bin", tmp_path / "s.bin")
    shutil.copy(packed / "a_text_document.idx", tmp_path / "s.idx")
    _tokens_in(tmp_path / "s", packed / "a.pbin", out=tmp_path / "b.pbin")
    sources = read_sidecar(tmp_path / "b.pbin")["sources"]
    assert [(source["path"], source["format"], source["documents"]) for source in sources] == [
        (str(tmp_path / "s.bin"), "megatron", 61), (str(packed / "a.pbin"), "pbin", 61)]  # as given: absolute
    assert sources[0]["index_bytes"] == (tmp_path / "s.idx").stat().st_size
    assert verify(tmp_path / "b.pbin", inputs=[str(tmp_path / "s.bin"), str(packed / "a.pbin")]) == []
    assert verify(tmp_path / "b.pbin", inputs=[str(packed / "a.pbin")])  # a source that is not an input
    (tmp_path / "s.idx").write_bytes((tmp_path / "s.idx").read_bytes())  # the same bytes, rewritten: the same source
    assert verify(tmp_path / "b.pbin") == []
    tokens = bytearray((tmp_path / "s.bin").read_bytes())
    tokens[0] ^= 1  # another token of the same size
    (tmp_path / "s.bin").write_bytes(bytes(tokens))
    assert verify(tmp_path / "b.pbin") == [f"{tmp_path / 'b.pbin'}: source {tmp_path / 's.bin'} has changed since it "
                                           f"was packed (sha256 differs)"]


def test_documents_of_several_sequences_keep_them_in_megatron_and_are_joined_in_the_pbin(tmp_path):
    _write(tmp_path / "s", [[[5, 6], [7, GPT2_EOD_ID]], [[8, GPT2_EOD_ID, GPT2_EOD_ID]], [[9, GPT2_EOD_ID]]])
    _tokens_in(tmp_path / "s", out=tmp_path / "b.pbin")
    assert (tmp_path / "b.bin").read_bytes() == (tmp_path / "s.bin").read_bytes()
    assert (tmp_path / "b.idx").read_bytes() == (tmp_path / "s.idx").read_bytes()
    pbin = PbinFile(tmp_path / "b.pbin")
    assert [pbin.document(k).tolist() for k in range(3)] == [[5, 6, 7, GPT2_EOD_ID], [8, GPT2_EOD_ID], [9, GPT2_EOD_ID]]
    assert read_sidecar(tmp_path / "b.pbin")["eod_in_text"] == [[1, 2]]
    assert verify(tmp_path / "b.pbin") == []


def test_a_wider_dtype_is_written_in_the_one_preprocess_data_picks(tmp_path):
    _write(tmp_path / "s", [[[5, GPT2_EOD_ID]]], dtype=np.int32)
    _tokens_in(tmp_path / "s", out=tmp_path / "b.pbin")
    assert MMapIndexedDataset(tmp_path / "b").dtype == np.uint16 and MMapIndexedDataset(tmp_path / "b")[0].tolist() == \
        [5, GPT2_EOD_ID]


def test_without_an_eod_documents_are_taken_as_they_are(tmp_path):
    _write(tmp_path / "s", [[[5, 6]], [[7]]])
    _tokens_in(tmp_path / "s", out=tmp_path / "b.pbin", eod=None)
    assert PbinFile(tmp_path / "b.pbin").doc_lengths.tolist() == [2, 1]


def _refusal(tmp_path: Path, *sources, eod: str | None = GPT2_EOD) -> str:
    result = _tokens_in(*sources, out=tmp_path / "out.pbin", eod=eod, check=False)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result.stderr
    assert not list(tmp_path.glob("out*")) and not list(tmp_path.glob(".out*"))  # nothing written
    return result.stderr.removeprefix("tokenmill: error: ").rstrip("\n")


def test_a_missing_idx_is_refused_naming_it(packed, tmp_path):
    shutil.copy(packed / "a_text_document.bin", tmp_path / "s.bin")
    assert _refusal(tmp_path, tmp_path / "s") == (f"{tmp_path}/s.idx: no such file (a Megatron prefix {tmp_path}/s "
                                                  f"names {tmp_path}/s.bin and {tmp_path}/s.idx)")


def test_an_idx_of_another_format_is_refused_naming_its_magic(packed, tmp_path):
    shutil.copy(packed / "a_text_document.bin", tmp_path / "s.bin")
    (tmp_path / "s.idx").write_bytes(b"\x80\x04" + bytes(60))  # a raw line index's pickle
    assert _refusal(tmp_path, tmp_path / "s").startswith(f"{tmp_path}/s.idx: not a Megatron .idx (bytes 0-8 are ")


def test_a_bin_shorter_than_its_idx_says_is_refused(packed, tmp_path):
    shutil.copy(packed / "a_text_document.idx", tmp_path / "s.idx")
    (tmp_path / "s.bin").write_bytes((packed / "a_text_document.bin").read_bytes()[:-2])
    size = (packed / "a_text_document.bin").stat().st_size
    assert _refusal(tmp_path, tmp_path / "s") == (f"{tmp_path}/s.bin: {size - 2} bytes, but {tmp_path}/s.idx "
                                                  f"describes {size} bytes of uint16 tokens")


def test_a_dtype_the_vocabulary_overflows_is_refused(tmp_path):
    _write(tmp_path / "s", [[[5, 6]]], dtype=np.uint8)
    assert _refusal(tmp_path, tmp_path / "s") == (f"{tmp_path}/s.bin: uint8 tokens hold ids up to 255, but {GPT2} has "
                                                  f"50,257: not made with this tokenizer (or its ids wrapped)")


def test_a_float_dtype_is_refused(tmp_path):
    _write(tmp_path / "s", [[[5, 6]]], dtype=np.int32)
    index = bytearray((tmp_path / "s.idx").read_bytes())
    index[17] = 7  # Megatron's code of float32, as wide as int32
    (tmp_path / "s.idx").write_bytes(bytes(index))
    assert _refusal(tmp_path, tmp_path / "s") == f"{tmp_path}/s.idx: float32 tokens, not token ids"


def test_ids_beyond_the_vocabulary_are_refused_naming_the_document(tmp_path):
    _write(tmp_path / "s", [[[5, GPT2_EOD_ID]], [[60000, GPT2_EOD_ID]]])
    assert _refusal(tmp_path, tmp_path / "s") == (f"{tmp_path}/s.bin: token id 60000 of document 1 is beyond the "
                                                  f"vocabulary of 50,257 of {GPT2} (made with another tokenizer?)")


def test_documents_that_do_not_end_with_the_eod_are_refused(tmp_path):
    _write(tmp_path / "s", [[[5, GPT2_EOD_ID]], [], [[5, 6]]])
    assert _refusal(tmp_path, tmp_path / "s").startswith(
        f"{tmp_path}/s.idx: document 2 ends with id 6, not the EOD '<|endoftext|>' (id 50256) (1 such): made without "
        f"--append-eod")


@pytest.mark.parametrize("append_eod", [True, False])
def test_megatrons_empty_documents_are_taken_and_give_back_megatrons_bytes(tmp_path, append_eod):
    """preprocess-data (Megatron's bytes, tests/megatron/test_preprocess_data.py) keeps an empty text as a document
    of no sequences, --append-eod or not: tokens-in takes it, and its .bin/.idx, and those converted from its .pbin,
    are the source's bytes."""
    (tmp_path / "hf").mkdir()
    shutil.copy(GPT2, tmp_path / "hf/tokenizer.json")
    (tmp_path / "hf/tokenizer_config.json").write_text(json.dumps({"eos_token": GPT2_EOD}))
    (tmp_path / "in.jsonl").write_text('{"text": ""}\n{"text": "Hello world"}\n{"text": ""}\n{"text": ["", ""]}\n'
                                       '{"text": "the end<|endoftext|>"}\n{"text": ""}\n')
    run_tokenmill("preprocess-data", "--input", tmp_path / "in.jsonl", "--output-prefix", tmp_path / "s", "--workers",
                  "1", "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", tmp_path / "hf",
                  *(["--append-eod"] if append_eod else []))
    source = tmp_path / "s_text_document"
    assert MMapIndexedDataset(source).document_indices.tolist() == [0, 0, 1, 1, 1, 2, 2]
    _tokens_in(source, out=tmp_path / "b.pbin", eod=GPT2_EOD if append_eod else None)
    run_tokenmill("to-megatron", tmp_path / "b.pbin", "-o", tmp_path / "c")
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"b{suffix}").read_bytes() == (tmp_path / f"c{suffix}").read_bytes() == \
            Path(f"{source}{suffix}").read_bytes()
    # the .pbin holds an empty text as Modalities' rule makes it: its ids (none), then the EOD
    assert PbinFile(tmp_path / "b.pbin").doc_lengths.tolist() == ([1, 3, 1, 1, 3, 1] if append_eod else
                                                                  [0, 2, 0, 0, 3, 0])
    assert read_sidecar(tmp_path / "b.pbin")["empty_texts"] == [[0, 1], [2, 4], [5, 6]]
    assert verify(tmp_path / "b.pbin") == [] and verify_made_from(tmp_path / "b.pbin", tmp_path / "b") == []


def test_a_megatron_document_of_the_eod_alone_is_refused_as_no_text_gives_it(tmp_path):
    _write(tmp_path / "s", [[[5, GPT2_EOD_ID]], [[GPT2_EOD_ID]]])
    assert _refusal(tmp_path, tmp_path / "s") == (
        f"{tmp_path}/s.idx: document 1 is the EOD alone (1 such), which no text gives: preprocess_data.py --append-eod "
        f"writes an empty text as a document of no sequences (taken) and an EOD only after a text's ids; with "
        f"--no-eod its documents are taken as they are")


@pytest.mark.parametrize("eod, empty_texts, message", [
    (None, [], "document 1 holds 0 tokens, but the sidecar's empty_texts does not list it as an empty text's"),
    (GPT2_EOD, [[0, 2]], "document 0 holds 2 tokens, but the sidecar's empty_texts lists it as an empty text's"),
])
def test_verify_finds_empty_texts_the_sidecar_gets_wrong(tmp_path, eod, empty_texts, message):
    _write(tmp_path / "s", [[[5, GPT2_EOD_ID]], []])
    _tokens_in(tmp_path / "s", out=tmp_path / "b.pbin", eod=eod)
    meta = json.loads((tmp_path / "b.pbin.meta.json").read_text())
    assert meta["empty_texts"] == [[1, 2]]
    meta["empty_texts"] = empty_texts
    (tmp_path / "b.pbin.meta.json").write_text(json.dumps(meta))
    assert verify(tmp_path / "b.pbin") == [f"{tmp_path / 'b.pbin'}: {message} (1 such)"]


@pytest.mark.parametrize("second", ["s.idx", "s.bin", "link", "copy"])
def test_a_source_named_twice_is_refused_naming_both(tmp_path, second):
    """The same file under another spelling or through links (the same device and inode) would be written
    twice; a copy is another file, taken."""
    _write(tmp_path / "s", [[[5, GPT2_EOD_ID]]])
    for suffix in (".bin", ".idx"):
        (tmp_path / f"link{suffix}").symlink_to(tmp_path / f"s{suffix}")
        shutil.copy(tmp_path / f"s{suffix}", tmp_path / f"copy{suffix}")
    if second == "copy":
        _tokens_in(tmp_path / "s", tmp_path / second, out=tmp_path / "out.pbin")
        assert PbinFile(tmp_path / "out.pbin").num_documents == 2
        return
    assert _refusal(tmp_path, tmp_path / "s", tmp_path / second) == (
        f"{tmp_path}/{second}: is the source {tmp_path}/s again (the same file) and its documents would be written "
        f"twice; name it once")


def test_a_pbin_named_twice_through_a_hard_link_is_refused(packed, tmp_path):
    (tmp_path / "h.pbin").hardlink_to(packed / "a.pbin")
    assert _refusal(tmp_path, packed / "a.pbin", tmp_path / "h.pbin") == (
        f"{tmp_path}/h.pbin: is the source {packed}/a.pbin again (the same file) and its documents would be written "
        f"twice; name it once")


def test_eods_inside_documents_are_counted_and_warned_about_as_pack_does(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "a<|endoftext|>b<|endoftext|>c"}\n{"text": "d"}\n'
                                       '{"text": "e<|endoftext|>"}\n')
    run_tokenmill("pack", tmp_path / "in.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "a.pbin",
                  "--megatron", tmp_path / "a", "--workers", "1")
    packed_meta = read_sidecar(tmp_path / "a.pbin")
    for source in ("a", "a.pbin"):
        result = _tokens_in(tmp_path / source, out=tmp_path / "b.pbin")
        assert read_sidecar(tmp_path / "b.pbin")["eod_within_documents"] == packed_meta["eod_within_documents"] == 2
        assert result.stderr.splitlines()[-1] == (
            "warning: the EOD '<|endoftext|>' (id 50256) occurs 2 times inside documents' own tokens: a reader that "
            "finds documents by scanning for the EOS (OLMo-core without its csv, datatrove) cuts them there")
        assert verify(tmp_path / "b.pbin") == []


@pytest.fixture(scope="module")
def sft_pbin(tmp_path_factory) -> Path:
    """An SFT pair (chat.pbin and its chat.loss_mask.pbin), as tokenmill sft writes it."""
    folder = tmp_path_factory.mktemp("sft")
    (folder / "sft.json").write_text(json.dumps({"tokenizers": {"gpt2": {"path": str(GPT2)}}, "sft": {"chat": {
        "inputs": [str(DEMO_JSONL.with_name("chat.jsonl"))], "tokenizer": "gpt2",
        "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
        "message_construction": ["role", "instruction", "conversations"], "seq_length": 2048}}}))
    run_tokenmill("sft", folder / "sft.json", "chat", "-o", folder / "chat.pbin")
    return folder / "chat.pbin"


@pytest.mark.parametrize("eod", [None, GPT2_EOD])
def test_an_sft_pbin_is_refused_as_its_loss_mask_would_be_lost(sft_pbin, tmp_path, eod):
    assert _refusal(tmp_path, sft_pbin, eod=eod) == (
        f"{sft_pbin}: an SFT .pbin: tokens-in reads its tokens only, and its loss mask (chat.loss_mask.pbin) would be "
        f"lost (every token trained on); pass --drop-loss-mask to take its tokens without it")


def test_drop_loss_mask_takes_an_sft_pbins_tokens_and_says_so_in_the_sidecar(sft_pbin, tmp_path):
    run_tokenmill("tokens-in", sft_pbin, "--tokenizer", GPT2, "--no-eod", "--drop-loss-mask", "-o", tmp_path / "b.pbin")
    assert PbinFile(tmp_path / "b.pbin").tokens.tolist() == PbinFile(sft_pbin).tokens.tolist()
    assert read_sidecar(tmp_path / "b.pbin")["sources"][0]["loss_mask_dropped"] == "chat.loss_mask.pbin"


def test_a_pbin_of_another_tokenizer_is_refused(packed, tmp_path):
    shutil.copy(packed / "a.pbin", tmp_path / "s.pbin")
    meta = json.loads((packed / "a.pbin.meta.json").read_text())
    meta["tokenizer"]["sha256"] = "0" * 64
    (tmp_path / "s.pbin.meta.json").write_text(json.dumps(meta))
    assert _refusal(tmp_path, tmp_path / "s.pbin").startswith(f"{tmp_path}/s.pbin: packed with another tokenizer")


def test_an_output_that_is_a_source_is_refused(packed, tmp_path):
    shutil.copy(packed / "a.pbin", tmp_path / "s.pbin")
    result = run_tokenmill("tokens-in", tmp_path / "s.pbin", "--tokenizer", GPT2, "--eod", GPT2_EOD,
                           "-o", tmp_path / "s.pbin", check=False)
    assert result.returncode == 1 and "refusing to overwrite an input" in result.stderr


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(0, GPT2_EOD_ID - 1), min_size=0, max_size=6), min_size=1, max_size=8),
       st.lists(st.booleans(), min_size=8, max_size=8))
def test_megatron_files_read_in_give_back_their_bytes_and_a_pbin_that_converts_to_them(tmp_path_factory, texts, ends):
    """Any texts (a text ending with the EOD, and an empty one, included), as --append-eod writes them: the
    Megatron output is the input's bytes, and to-megatron of the .pbin written gives them again."""
    folder = tmp_path_factory.mktemp("prop")
    ids = [text + ([GPT2_EOD_ID] if ended else []) for text, ended in zip(texts, ends)]
    documents = [[text + [GPT2_EOD_ID]] if text else [] for text in ids]  # an empty text: a document of no sequences
    _write(folder / "s", documents)
    tokens_in([str(folder / "s")], folder / "b.pbin", str(GPT2), GPT2_EOD, megatron_prefix=folder / "b")
    run_tokenmill("to-megatron", folder / "b.pbin", "-o", folder / "c")
    for suffix in (".bin", ".idx"):
        assert (folder / f"b{suffix}").read_bytes() == (folder / f"s{suffix}").read_bytes() == \
            (folder / f"c{suffix}").read_bytes()
    assert verify(folder / "b.pbin") == []


def test_the_report_says_the_tokens_were_read_in_not_tokenized(packed, tmp_path):
    _tokens_in(packed / "a_text_document", out=tmp_path / "b.pbin")
    run_tokenmill("report", tmp_path / "b.pbin", "-o", tmp_path / "b.html")
    page = (tmp_path / "b.html").read_text()
    assert "none: tokens read in from 1 source(s), nothing tokenized" in page and "a_text_document.bin" in page


def test_inspect_names_a_documents_source_file_and_its_document_there(packed, tmp_path):
    _tokens_in(packed / "a.pbin", packed / "a_text_document", out=tmp_path / "b.pbin")
    shown = run_tokenmill("inspect", tmp_path / "b.pbin", "--doc", "63").stdout
    assert f"source: {packed / 'a_text_document.bin'}, document 2" in shown


def test_verify_against_the_tokenizer_says_there_is_no_text_to_re_encode(packed, tmp_path):
    _tokens_in(packed / "a_text_document", out=tmp_path / "b.pbin")
    result = run_tokenmill("verify", tmp_path / "b.pbin", "--against-tokenizer", "0.05", check=False)
    assert result.returncode == 1 and result.stderr == (
        f"tokenmill: error: {tmp_path / 'b.pbin'}: its tokens were read in from existing files (tokens-in), not "
        f"packed from text: there is no text to re-encode; tokenmill verify without --against-tokenizer checks it\n")


def test_verify_made_from_counts_the_megatron_documents_and_tokens_against_the_pbin(packed, tmp_path):
    _tokens_in(packed / "a_text_document", out=tmp_path / "b.pbin")
    assert verify_made_from(tmp_path / "b.pbin", tmp_path / "b") == []
    dataset = MMapIndexedDataset(tmp_path / "b")
    with MMapIndexedDatasetBuilder(tmp_path / "fewer", dataset.dtype) as builder:  # its last document left out
        for document in range(len(dataset) - 1):
            builder.add_document(dataset[document], [dataset.sizes[document]])
    assert verify_made_from(tmp_path / "b.pbin", tmp_path / "fewer") == [
        f"{tmp_path / 'fewer'}.idx: 60 documents, {tmp_path / 'b.pbin'} has 61"]
    with MMapIndexedDatasetBuilder(tmp_path / "single", dataset.dtype) as builder:  # the text's own EOD not doubled
        for document in range(len(dataset)):
            builder.add_document(dataset[document][:-1] if document == 60 else dataset[document],
                                 [dataset.sizes[document] - (document == 60)])
    tokens = int(dataset.sizes.sum())
    assert verify_made_from(tmp_path / "b.pbin", tmp_path / "single") == [
        f"{tmp_path / 'single'}.bin: {tokens - 1} tokens, but {tmp_path / 'b.pbin'}'s {tokens - 1} and the 1 EODs its "
        f"texts ended with make {tokens}"]


def test_a_merge_keeps_the_empty_texts_of_its_parts_and_converts_back_to_megatrons_merge(tmp_path):
    _write(tmp_path / "s1", [[], [[5, GPT2_EOD_ID]]])
    _write(tmp_path / "s2", [[[6, GPT2_EOD_ID]], [], []])
    for name in ("s1", "s2"):
        _tokens_in(tmp_path / name, out=tmp_path / f"{name}_in.pbin")
    run_tokenmill("merge", tmp_path / "s1_in.pbin", tmp_path / "s2_in.pbin", "-o", tmp_path / "m.pbin")
    assert read_sidecar(tmp_path / "m.pbin")["empty_texts"] == [[0, 1], [3, 5]] and verify(tmp_path / "m.pbin") == []
    run_tokenmill("to-megatron", tmp_path / "m.pbin", "-o", tmp_path / "m")
    run_tokenmill("merge", tmp_path / "s1.idx", tmp_path / "s2.idx", "-o", tmp_path / "s12.idx")
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"m{suffix}").read_bytes() == (tmp_path / f"s12{suffix}").read_bytes()
