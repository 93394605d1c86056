"""Each Megatron tokenizer type's EOD is the id Megatron appends (``tokenizer.eod``), or there is none and pack
asks for one in a line: SentencePiece models trained here with the EOS spelled otherwise or switched off, and
Hugging Face folders whose files name the EOS in each of the places transformers looks.

The SentencePiece models are trained by the test (``sentencepiece.SentencePieceTrainer``, ~0.05 s each) on
``tests/data/mixed.jsonl``; what Megatron's types append is ``SentencePieceProcessor.eos_id()``, asked of the
same model.
"""

from __future__ import annotations

import base64
import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from conftest import DATA, GPT2, GPT2_EOD, GPT2_EOD_ID, run_tokenmill, train_sentencepiece

from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.formats.pbin import PbinFile
from tokenmill.tokenization.families import TokenizerSpec, load_family
from tokenmill.tokenization.tokenizer import TYPE_EOD, load_tokenizer

SP_TYPES = ["Llama2Tokenizer", "SentencePieceTokenizer", "GPTSentencePieceTokenizer"]


def sentencepiece_eos_id(content: bytes) -> int:
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_proto=content).eos_id()


# ---- SentencePiece: the model's EOS, whatever its spelling --------------------------------------------------------

@pytest.mark.parametrize("options", [{}, {"eos_piece": "<EOS>"}, {"eos_id": 5, "pad_id": 3},
                                     {"eos_piece": "<|end|>", "bos_id": -1}, {"eos_id": -1}])
def test_a_sentencepiece_types_eod_is_sentencepieces_eos_id(options, tmp_path):
    content = train_sentencepiece(tmp_path / "sp.model", **options)
    expected = sentencepiece_eos_id(content)
    for kind in SP_TYPES:
        family = load_family(TokenizerSpec(str(tmp_path / "sp.model"), kind))
        if expected < 0:
            assert family.eod is None
            continue
        assert load_tokenizer(family.spec, TYPE_EOD).eod_id == expected


def test_a_model_whose_eos_is_spelled_otherwise_packs_its_id_after_every_document(tmp_path):
    train_sentencepiece(tmp_path / "sp.model", eos_piece="<EOS>")
    run_tokenmill("pack", DATA / "mixed.jsonl", "--tokenizer", tmp_path / "sp.model",
                  "--tokenizer-type", "Llama2Tokenizer", "-o", tmp_path / "x.pbin")
    pbin = PbinFile(tmp_path / "x.pbin")
    documents = len(pbin.doc_lengths)
    assert documents > 10 and all(pbin.document(index)[-1] == 2 for index in range(documents))
    run_tokenmill("preprocess-data", "--input", DATA / "mixed.jsonl", "--output-prefix", tmp_path / "m",
                  "--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model", tmp_path / "sp.model", "--append-eod",
                  "--workers", "1")
    dataset = MMapIndexedDataset(tmp_path / "m_text_document")
    assert [dataset[index][-1] for index in range(len(dataset))] == [2] * documents


def test_a_model_without_an_eos_is_refused_without_eod_or_no_eod(tmp_path):
    train_sentencepiece(tmp_path / "sp.model", eos_id=-1)
    args = ["pack", DATA / "mixed.jsonl", "--tokenizer", tmp_path / "sp.model", "--tokenizer-type",
            "SentencePieceTokenizer", "-o", tmp_path / "x.pbin"]
    result = run_tokenmill(*args, check=False)
    assert result.returncode == 1
    assert result.stderr == (f"tokenmill: error: {tmp_path / 'sp.model'}: SentencePieceTokenizer names no "
                             f"end-of-document token: the model has no EOS (no control piece '</s>', its eos_piece: "
                             f"sentencepiece's eos_id() is -1); name one (pack --eod TOKEN; the config's "
                             f"eod: TOKEN) or pack without (--no-eod; eod: null)\n")
    assert not (tmp_path / "x.pbin").exists()
    run_tokenmill(*args, "--no-eod")
    assert run_tokenmill("inspect", tmp_path / "x.pbin").stdout.count("--no-eod") == 1


def test_preprocess_data_append_eod_without_an_eos_says_what_fits_the_model(tmp_path):
    train_sentencepiece(tmp_path / "sp.model", eos_id=-1)
    result = run_tokenmill("preprocess-data", "--input", DATA / "mixed.jsonl", "--output-prefix", tmp_path / "m",
                           "--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model", tmp_path / "sp.model",
                           "--append-eod", "--workers", "1", check=False)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "the model has no EOS" in result.stderr and "drop --append-eod" in result.stderr
    assert "tokenizer_config" not in result.stderr
    assert not list(tmp_path.glob("m_*"))


def test_a_model_with_whitespace_as_a_suffix_is_refused_before_any_work(tmp_path):
    """The conversion puts whitespace before pieces: such a model encodes otherwise on any text of a word and a
    space, so it is refused at load, whatever the input's size, not by the proof after a megabyte."""
    train_sentencepiece(tmp_path / "sp.model", treat_whitespace_as_suffix=True)
    with pytest.raises(TokenmillError, match=r"sp.model: Llama2Tokenizer model cannot be converted .*: it puts "
                                             r"whitespace at the end of pieces \(treat_whitespace_as_suffix\)$"):
        load_family(TokenizerSpec(str(tmp_path / "sp.model"), "Llama2Tokenizer"))


# ---- Hugging Face: the EOS transformers finds in the folder ------------------------------------------------------

def hf_folder(tmp_path, **files) -> str:
    folder = tmp_path / "hf"
    folder.mkdir()
    shutil.copy(GPT2, folder / "tokenizer.json")
    for name, value in files.items():
        (folder / f"{name}.json").write_text(json.dumps(value))
    return str(folder)


@pytest.mark.parametrize("files", [
    {"tokenizer_config": {"eos_token": GPT2_EOD}},
    {"tokenizer_config": {"eos_token": {"content": GPT2_EOD, "special": True}}},
    {"tokenizer_config": {}, "special_tokens_map": {"eos_token": GPT2_EOD}},
    {"tokenizer_config": {"tokenizer_class": "GPT2TokenizerFast"}},
    # transformers (4.57.6 and 5.24.0) take special_tokens_map.json's over tokenizer_config.json's
    {"tokenizer_config": {"eos_token": "!"}, "special_tokens_map": {"eos_token": GPT2_EOD}},
])
def test_a_folders_eod_is_where_transformers_finds_its_eos_token(files, tmp_path):
    assert load_tokenizer(TokenizerSpec(hf_folder(tmp_path, **files)), TYPE_EOD).eod_id == GPT2_EOD_ID


@pytest.mark.parametrize("files", [{}, {"tokenizer_config": {"bos_token": GPT2_EOD}},
                                   {"tokenizer_config": {"tokenizer_class": "PreTrainedTokenizerFast"}},
                                   {"tokenizer_config": {"eos_token": GPT2_EOD},
                                    "special_tokens_map": {"eos_token": None}}])
def test_a_folder_naming_no_eos_is_refused_without_eod(files, tmp_path):
    folder = hf_folder(tmp_path, **files)
    result = run_tokenmill("pack", DATA / "mixed.jsonl", "--tokenizer", folder, "--tokenizer-type",
                           "HuggingFaceTokenizer", "-o", tmp_path / "x.pbin", check=False)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert f"{folder}: HuggingFaceTokenizer names no end-of-document token: " in result.stderr
    run_tokenmill("pack", DATA / "mixed.jsonl", "--tokenizer", folder, "--tokenizer-type", "HuggingFaceTokenizer",
                  "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")


def test_a_tokenizer_json_named_as_a_type_is_refused_without_eod(tmp_path):
    """Megatron's HuggingFaceTokenizer reads a folder; a tokenizer.json alone names no EOS, with or without a type."""
    for type_options in ([], ["--tokenizer-type", "HuggingFaceTokenizer"]):
        result = run_tokenmill("pack", DATA / "mixed.jsonl", "--tokenizer", GPT2, *type_options,
                               "-o", tmp_path / "x.pbin", check=False)
        assert result.returncode != 0 and result.stderr.count("\n") == 1
        assert not (tmp_path / "x.pbin").exists()
    assert "a tokenizer.json alone names no EOS" in result.stderr



# ---- tiktoken: a merge for every split of a rank into two ranks ----------------------------------------------------

def _byte_alphabet() -> list[str]:
    """GPT-2's printable stand-in for each byte, as the byte-level pre-tokenizer spells it."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    return [chr(byte) if byte in printable else chr(next(extra)) for byte in range(256)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text("ab é\n", min_size=2, max_size=7).map(str.encode), max_size=12),
       st.randoms(use_true_random=False))
def test_a_tiktoken_conversion_merges_every_split_of_a_rank_into_two_ranks(tmp_path, words, order):
    """The converted merges, worked out one piece and one cut at a time: for each rank in order, every split of its
    bytes into two ranks, by the halves' ranks (the ranks: the bytes, then every piece of a few words of a few
    letters, shuffled, so that most have several splits)."""
    extra = sorted({word[start:end] for word in words for start in range(len(word))
                    for end in range(start + 2, len(word) + 1)})
    order.shuffle(extra)
    ranks = [bytes([byte]) for byte in range(256)] + extra
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps([{"rank": rank, "token_bytes": base64.b64encode(token).decode(), "token_str": ""}
                                for rank, token in enumerate(ranks)]))
    alphabet = _byte_alphabet()
    pieces = ["".join(alphabet[byte] for byte in token) for token in ranks]
    rank_of = {piece: rank for rank, piece in enumerate(pieces)}
    expected = [[pieces[left], pieces[right]] for piece in pieces for left, right in
                sorted((rank_of[piece[:cut]], rank_of[piece[cut:]]) for cut in range(1, len(piece))
                       if piece[:cut] in rank_of and piece[cut:] in rank_of)]
    spec = TokenizerSpec(str(path), "TikTokenizer", tiktoken_num_special_tokens=7, vocab_size=len(ranks) + 7)
    assert json.loads(load_family(spec).hf_json)["model"]["merges"] == expected
