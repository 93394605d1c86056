"""Tokenize-and-pack: Modalities' bytes, determinism, EOD rules, and bad lines never lost silently."""

import hashlib
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from conftest import (DEMO_JSONL, GPT2, GPT2_EOD, GPT2_EOD_ID, MIXED_JSONL, TEKKEN, run_tokenmill,
                      run_tokenmill_with_file_size_limit, write_jsonl_bytes)
from tokenmill._kernels import eod_appended_cast
from tokenmill.errors import TokenmillError
from tokenmill.formats.document_blocks import eod_appended
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.sidecar import sidecar_path
from tokenmill.pack.pretraining import PackSettings, pack

# sha256 of Modalities 0.5.0 `pack_encoded_data` (jq .text) outputs for the same inputs.
MODALITIES_PBIN_SHA256 = {
    ("demo", "gpt2"): "bcdf6b92ee9f8f07f526efcde0b8afca7bb21759deab6f00518623a74a256631",
    ("mixed", "gpt2"): "8a3ded066e7ccfeeee7e9d2bdc1102d2907ac11dc5357198df3d2be208eaba6a",
    ("mixed", "tekken"): "2bd83f93abd2eedc21d31cc1be177d9996ad343d34d11b6cf6fbba5a37a0535e",
}


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def quiet_pack(inputs, out, **settings):
    settings.setdefault("tokenizer_path", str(GPT2))
    settings.setdefault("eod", GPT2_EOD)
    return pack([str(p) for p in inputs], str(out), PackSettings(**settings), log=lambda message: None)


@pytest.mark.parametrize("corpus, tokenizer, eod", [
    ("demo", GPT2, GPT2_EOD), ("mixed", GPT2, GPT2_EOD), ("mixed", TEKKEN, "</s>")])
def test_pbin_is_byte_identical_to_modalities(tmp_path, corpus, tokenizer, eod):
    source = {"demo": DEMO_JSONL, "mixed": MIXED_JSONL}[corpus]
    out = tmp_path / "out.pbin"
    run_tokenmill("pack", source, "--tokenizer", tokenizer, "--eod", eod, "-o", out, "--workers", "2")
    assert sha256(out) == MODALITIES_PBIN_SHA256[(corpus, tokenizer.name.split(".")[0])]
    assert PbinFile(out).token_width == (4 if tokenizer == TEKKEN else 2)


@pytest.mark.slow
def test_same_bytes_for_any_worker_count_and_batch_size(tmp_path):
    outputs = []
    for workers, batch_bytes in [(1, 1 << 20), (2, 1 << 20), (2, 4096), (3, 3000)]:
        out = tmp_path / f"w{workers}-{batch_bytes}.pbin"
        quiet_pack([DEMO_JSONL], out, workers=workers, batch_bytes=batch_bytes)
        outputs.append((out.read_bytes(), sidecar_path(out).read_text()))
    assert outputs[0] == outputs[1]  # the sidecar too, for any worker count
    assert outputs[0][0] == outputs[2][0] == outputs[3][0]

    def but_excerpts(sidecar: str) -> dict:
        """The sidecar without what depends on batches: the proof's excerpts share each batch's budget
        (the documents it checks whole depend on their own text alone)."""
        meta = json.loads(sidecar)
        for entry in (meta["engine"], *meta["sources"]):
            entry.pop("checked_documents")
        for key in ("excerpts", "hf_bytes", "hf_share"):
            meta["engine"]["proof"].pop(key)
        return meta

    assert but_excerpts(outputs[0][1]) == but_excerpts(outputs[2][1]) == but_excerpts(outputs[3][1])


def test_every_document_ends_with_one_eod_and_text_is_tokenized_as_hf_does(tmp_path):
    texts = ["Hello world", "ends with eod<|endoftext|>", "x<|endoftext|>y"]
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [json.dumps({"text": t}).encode() for t in texts])
    quiet_pack([source], tmp_path / "x.pbin")
    tokenizer = Tokenizer.from_file(str(GPT2))
    documents = [doc.tolist() for doc in map(PbinFile(tmp_path / "x.pbin").document, range(3))]
    assert documents[0] == tokenizer.encode("Hello world").ids + [GPT2_EOD_ID]
    assert documents[1] == tokenizer.encode("ends with eod").ids + [GPT2_EOD_ID]  # not doubled
    assert documents[2].count(GPT2_EOD_ID) == 2  # a literal special token inside text maps to its id, as in HF
    assert read_sidecar(tmp_path / "x.pbin")["eod_within_documents"] == 1  # document 2's; 1's ends it


def test_an_ordinary_token_as_eod_is_counted_where_it_lies_inside_documents(tmp_path):
    """GPT-2's "Ċ" is a newline: every single newline of a text is that id, so a reader scanning for the EOS
    cuts there. The count leaves out a text's last newline, which ends its document (no EOD appended)."""
    texts = ["one\ntwo\nthree", "ends with a newline\n", "none at all", "a\nb"]
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [json.dumps({"text": t}).encode() for t in texts])
    logged = []
    meta = pack([str(source)], str(tmp_path / "x.pbin"), PackSettings(tokenizer_path=str(GPT2), eod="Ċ"),
                log=logged.append)
    assert meta["eod_within_documents"] == 3 and meta["eod_in_text"] == [[1, 2]]
    assert logged[-1] == ("warning: the EOD 'Ċ' (id 198) occurs 3 times inside documents' own tokens: a reader that "
                          "finds documents by scanning for the EOS (OLMo-core without its csv, datatrove) cuts them "
                          "there")
    assert "eod_within_documents" not in quiet_pack([source], tmp_path / "n.pbin", eod=None)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet="ab \n", min_size=1, max_size=12), min_size=1, max_size=12))
def test_the_count_of_eods_inside_documents_is_the_files_own_whatever_the_batches(tmp_path, texts):
    """Every EOD id of the .pbin but one per document (its last token) lies inside a document; batches of any
    size count the same."""
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [json.dumps({"text": t}).encode() for t in texts])
    counts = []
    for batch_bytes in (1 << 20, 40):
        meta = quiet_pack([source], tmp_path / "x.pbin", eod="Ċ", batch_bytes=batch_bytes)
        packed = PbinFile(tmp_path / "x.pbin")
        assert meta["eod_within_documents"] == int((packed.tokens == 198).sum()) - packed.num_documents
        counts.append(meta["eod_within_documents"])
    assert counts[0] == counts[1]


def test_nested_jq_pattern_and_plain_key_fast_path_agree(tmp_path):
    records = [{"meta": {"body": f"document number {i} — ünïcode"}, "body": f"document number {i} — ünïcode"}
               for i in range(30)]
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [json.dumps(r, ensure_ascii=False).encode() for r in records])
    quiet_pack([source], tmp_path / "jq.pbin", text=".meta.body")
    quiet_pack([source], tmp_path / "key.pbin", text=".body")
    assert (tmp_path / "jq.pbin").read_bytes() == (tmp_path / "key.pbin").read_bytes()


def test_invalid_jq_pattern_is_a_clear_error(tmp_path):
    with pytest.raises(TokenmillError, match=r"text pattern '\.\[\[' is not valid jq"):
        quiet_pack([MIXED_JSONL], tmp_path / "x.pbin", text=".[[")


BAD_LINES = [
    (b"", "blank line"),
    (b"   ", "blank line"),
    (b'{"text": "unterminated', "invalid JSON"),
    (b'{"text": "caf\xe9"}', "invalid UTF-8 at byte 13"),
    (b'["text"]', "not a JSON object \\(a list\\)"),
    (b'{"body": "x"}', "no key 'text'"),
    (b'{"text": 42}', "text is not a string \\(a int\\)"),
    (b'{"text": null}', "text is not a string \\(a NoneType\\)"),
    (b'{"text": ""}', "empty text"),
]


@pytest.mark.parametrize("bad_line, reason", BAD_LINES, ids=[r for _, r in BAD_LINES])
def test_bad_line_stops_with_file_and_line_and_leaves_no_output(tmp_path, bad_line, reason):
    lines = [b'{"text": "good one"}'] * 4 + [bad_line] + [b'{"text": "good two"}'] * 3
    source = write_jsonl_bytes(tmp_path / "bad.jsonl", lines)
    out = tmp_path / "out.pbin"
    result = run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "-o", out, "--workers", "2", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(f"tokenmill: error: {source}:5: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert re.search(reason, result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]  # no output, no temporary file


def test_skip_counts_bad_lines_by_reason_and_keeps_every_good_one(tmp_path):
    lines = []
    for i in range(200):
        lines.append(json.dumps({"text": f"good {i}"}).encode())
        if i % 50 == 7:
            lines += [b"", b'{"text": ""}', b'{"oops": 1}']
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    meta = quiet_pack([source], tmp_path / "x.pbin", on_bad_line="skip", workers=2, batch_bytes=512)
    assert meta["documents"] == 200
    assert meta["skipped"] == {"blank line": 4, "empty text": 4, "no key 'text'": 4}
    assert meta["sources"][0]["skipped"]["blank line"]["first_lines"] == [9, 62, 115, 168]
    tokenizer = Tokenizer.from_file(str(GPT2))
    pbin = PbinFile(tmp_path / "x.pbin")
    assert [tokenizer.decode(pbin.document(i).tolist()[:-1]) for i in (0, 199)] == ["good 0", "good 199"]
    assert read_sidecar(tmp_path / "x.pbin") == meta


def _tiny_tokenizer(tmp_path, extra_vocab):
    """A word-level tokenizer: 256 base words, then `extra_vocab` more, then an added EOD token."""
    vocab = {f"w{i}": i for i in range(256 + extra_vocab)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(["<eod>"])
    path = tmp_path / "tiny.json"
    tokenizer.save(str(path))
    return path


@pytest.mark.parametrize("extra_vocab, width", [(-1, 1), (0, 2), (65280, 4)])
def test_token_width_counts_added_tokens(tmp_path, extra_vocab, width):
    # 255 words + <eod> = ids 0..255: 1 byte. 256 words + <eod> at id 256: Modalities picks 1 byte from
    # its 256-word vocab_size and fails; the full id range needs 2. 65536 words + <eod>: 4 bytes.
    tokenizer = _tiny_tokenizer(tmp_path, extra_vocab)
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text": "w1 w2 w3"}'])
    meta = quiet_pack([source], tmp_path / "x.pbin", tokenizer_path=str(tokenizer), eod="<eod>")
    assert meta["token_width"] == width
    eod_id = 256 + extra_vocab
    assert PbinFile(tmp_path / "x.pbin").document(0).tolist() == [1, 2, 3, eod_id]


def test_an_eod_text_that_is_one_token_but_not_its_vocabulary_string_is_refused_naming_that_string(tmp_path):
    from tokenmill.tokenization.tokenizer import check_eod_in_file

    # GPT-2 is byte-level: the text "\n\n" is the one token 628, whose vocabulary string is "ĊĊ"
    advice = re.escape("EOD token '\\n\\n' is not a single token of this tokenizer; the text encodes to the one id "
                       "628, whose vocabulary string is 'ĊĊ': give that") + "$"
    with pytest.raises(TokenmillError, match=advice):
        quiet_pack([MIXED_JSONL], tmp_path / "x.pbin", eod="\n\n")
    with pytest.raises(TokenmillError, match=advice):  # the workflow's check while planning says the same
        check_eod_in_file(GPT2, "\n\n")
    with pytest.raises(TokenmillError, match=r"EOD token 'two words' is not a single token of this tokenizer "
                                             r"\(the text encodes to 2 ids\)$"):
        check_eod_in_file(GPT2, "two words")
    assert quiet_pack([MIXED_JSONL], tmp_path / "x.pbin", eod="ĊĊ")["tokenizer"]["eod_id"] == 628


def test_unknown_eod_token_and_non_tokenizer_file_are_clear_errors(tmp_path):
    with pytest.raises(TokenmillError, match="EOD token '<eos>' is not a single token"):
        quiet_pack([MIXED_JSONL], tmp_path / "x.pbin", eod="<eos>")
    not_a_tokenizer = tmp_path / "tok.json"
    not_a_tokenizer.write_text('{"hello": 1}')
    with pytest.raises(TokenmillError, match="tok.json: not a Hugging Face tokenizer.json"):
        quiet_pack([MIXED_JSONL], tmp_path / "x.pbin", tokenizer_path=str(not_a_tokenizer))


def test_sidecar_records_sources_and_tokenizer_and_reproduces_byte_for_byte(tmp_path):
    meta = quiet_pack([MIXED_JSONL], tmp_path / "a.pbin")
    first = sidecar_path(tmp_path / "a.pbin").read_bytes()
    quiet_pack([MIXED_JSONL], tmp_path / "a.pbin")
    assert sidecar_path(tmp_path / "a.pbin").read_bytes() == first
    assert meta["sources"][0]["sha256"] == sha256(MIXED_JSONL)
    assert meta["tokenizer"]["sha256"] == sha256(GPT2)
    assert (meta["tokenizer"]["vocab_size"], meta["tokenizer"]["eod_id"], meta["token_width"]) == (50257, 50256, 2)
    assert meta["tokens"] == PbinFile(tmp_path / "a.pbin").num_tokens
    assert meta["documents"] == 50


def test_a_full_disk_names_the_output_and_leaves_nothing_behind(tmp_path):
    out = tmp_path / "out.pbin"
    result = run_tokenmill_with_file_size_limit(200_000, "pack", DEMO_JSONL, "--tokenizer", GPT2, "--no-eod", "-o", out)
    assert result.returncode == 1
    assert result.stderr == f"tokenmill: error: {out}: cannot write (File too large); nothing was written\n"
    assert list(tmp_path.iterdir()) == []


def test_a_disk_full_at_the_final_flush_names_the_output_and_leaves_no_temporary(tmp_path):
    # The disk fills exactly when the token section is written: the index pickle (under the write
    # buffer's size) only reaches the disk at the final flush, which fails; closing the file to clean
    # up flushes, and fails, again. That second failure used to escape with no file name
    # ("tokenmill: error: : No space left on device") and keep the temporary file.
    small = write_jsonl_bytes(tmp_path / "small.jsonl", DEMO_JSONL.read_bytes().splitlines()[:50])
    run_tokenmill("pack", small, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "whole.pbin")
    layout = PbinFile(tmp_path / "whole.pbin").layout
    assert 0 < (tmp_path / "whole.pbin").stat().st_size - (layout.data_offset + layout.data_bytes) < 8192
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "x.pbin"
    result = run_tokenmill_with_file_size_limit(layout.data_offset + layout.data_bytes, "pack", small, "--tokenizer",
                                                GPT2, "--eod", GPT2_EOD, "-o", out)
    assert (result.returncode, result.stderr) == (
        1, f"tokenmill: error: {out}: cannot write (File too large); nothing was written\n")
    assert list((tmp_path / "out").iterdir()) == []


def test_pack_creates_its_outputs_folders_but_a_refused_run_leaves_none(tmp_path):
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text": "a document"}'] * 3)
    refused = run_tokenmill("pack", tmp_path / "missing.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD,
                            "-o", tmp_path / "new/x.pbin", check=False)
    assert refused.returncode == 1 and not (tmp_path / "new").exists()
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "new/a/x.pbin",
                  "--megatron", tmp_path / "new/b/x")
    assert sorted(path.name for path in (tmp_path / "new").rglob("*") if path.is_file()) == [
        "x.bin", "x.idx", "x.pbin", "x.pbin.meta.json"]


def test_eod_appended_cast_worked_example():
    """A batch of three documents, the second ending with its own EOD: the EOD after the others, the ids cast."""
    tokens = np.array([5, 6, 9, 7, 9, 70000], np.uint32)
    out, out_lengths, kept = np.empty(9, np.uint16), np.empty(3, np.int64), np.empty(3, np.int64)
    assert eod_appended_cast(tokens, np.array([2, 3, 1], np.int64), 9, out, out_lengths, kept) == (8, 1, 2)
    assert out[:8].tolist() == [5, 6, 9, 9, 7, 9, 70000 % 65536, 9]
    assert out_lengths.tolist() == [3, 3, 2] and kept[:1].tolist() == [1]
    with pytest.raises(ValueError, match="add up"):
        eod_appended_cast(tokens, np.array([2, 3], np.int64), 9, out, out_lengths, kept)


@given(st.lists(st.lists(st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 2]), min_size=1, max_size=8),
                min_size=1, max_size=12),
       st.sampled_from([None, 0, 1, 2, 65535, 2**32 - 1]), st.sampled_from(["<u1", "<u2", "<u4"]))
@settings(max_examples=300, deadline=None)
def test_eod_appended_cast_equals_the_numpy_steps(documents, eod, dtype):
    """pack's one C pass gives the bytes of the numpy steps it replaced: the count of EODs, np.insert, astype."""
    tokens = np.array([token for document in documents for token in document], np.uint32)
    lengths = np.array([len(document) for document in documents], np.int64)
    out, out_lengths, kept = (np.empty(len(tokens) + len(lengths), dtype), np.empty(len(lengths), np.int64),
                              np.empty(len(lengths), np.int64))
    written, num_kept, eod_count = eod_appended_cast(tokens, lengths, -1 if eod is None else eod, out, out_lengths,
                                                     kept)
    if eod is None:
        assert (written, num_kept, eod_count) == (len(tokens), 0, 0)
        assert out[:written].tobytes() == tokens.astype(dtype).tobytes() and out_lengths.tolist() == lengths.tolist()
        return
    needs_eod = tokens[np.cumsum(lengths) - 1] != eod
    expected, expected_lengths, _ = eod_appended(tokens, lengths, needs_eod, eod)
    assert out[:written].tobytes() == expected.astype(dtype).tobytes()
    assert out_lengths.tolist() == expected_lengths.tolist()
    assert kept[:num_kept].tolist() == np.flatnonzero(~needs_eod).tolist()
    assert eod_count == int(np.count_nonzero(tokens == eod))
