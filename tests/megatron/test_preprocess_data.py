"""Megatron's tokenizer types: ``tokenmill preprocess-data`` writes the bytes of megatron-core 0.19's
``tools/preprocess_data.py`` for the same flags, and the converted types encode as their own library.

Recipe of the recorded hashes (a throwaway venv, never a dependency): python3.11 venv with
``torch==2.13.0`` (CPU), ``megatron-core==0.19.2 sentencepiece tiktoken transformers nltk``, the
``tools/`` and ``megatron/`` trees of Megatron-LM tag ``core_v0.19.0`` on ``PYTHONPATH``,
``HF_HUB_OFFLINE=1``; then ``python tools/preprocess_data.py --input tests/data/megatron_types.jsonl
--output-prefix OUT --workers 1 FLAGS`` with the flags of :data:`CASES`. Tokenizer files:

* ``mistral-v1.tokenizer.model``: ``mistral_common/data/tokenizer.model.v1`` of the PyPI wheel
  ``mistral-common==1.13.1`` (Apache-2.0, ``tekken.LICENSE.txt``): Mistral 7B v0.1, SentencePiece BPE;
* the tiktoken list: the ``vocab`` field of that wheel's ``tekken_240911.json`` (150,000 ranks, of
  which Megatron keeps 130,072); here rebuilt from ``tekken.tokenizer.json`` (same ranks: id - 1000);
* Hugging Face folders: ``tokenizer.json`` (GPT-2 or Tekken) with ``tokenizer_config.json``
  ``{"eos_token": ...}``.

``megatron_types.jsonl`` holds 60 lines with ``text`` and ``title``: strings, JSON lists (a sequence per
element), empty texts and lists of empties (documents of no sequences), literal ``<s>``/``</s>``.
"""

import base64
import hashlib
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import orjson
import pytest

from conftest import built_once
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.megatron.preprocess_data import preprocess_data
from tokenmill.tokenization.engine import FastEngineUnavailable
from tokenmill.tokenization.families import TokenizerSpec, load_family
from tokenmill.tokenization.sentencepiece_model import read_model
from tokenmill.tokenization.tokenizer import TYPE_EOD, load_tokenizer

DATA = Path(__file__).parents[1] / "data"
CORPUS = DATA / "megatron_types.jsonl"
MISTRAL_MODEL = DATA / "mistral-v1.tokenizer.model"
# The flags of each recorded run; {model}, {tiktoken}, {gpt2_hf}, {tekken_hf} name the files above.
CASES = {
    "llama2": "--tokenizer-type Llama2Tokenizer --tokenizer-model {model} --append-eod --json-keys text title",
    "sentencepiece": "--tokenizer-type SentencePieceTokenizer --tokenizer-model {model} --append-eod --json-keys text",
    "gpt_sentencepiece": "--tokenizer-type GPTSentencePieceTokenizer --tokenizer-model {model} --append-eod "
                         "--json-keys text",
    "llama2_no_eod": "--tokenizer-type Llama2Tokenizer --tokenizer-model {model} --json-keys text",
    "tiktoken_v2": "--tokenizer-type TikTokenizer --tokenizer-model {tiktoken} --tiktoken-pattern v2 --append-eod "
                   "--json-keys text title",
    "tiktoken_v1": "--tokenizer-type TikTokenizer --tokenizer-model {tiktoken} --tiktoken-pattern v1 --append-eod "
                   "--json-keys text title",
    "tiktoken_v2_65536": "--tokenizer-type TikTokenizer --tokenizer-model {tiktoken} --tiktoken-pattern v2 "
                         "--vocab-size 65536 --tiktoken-num-special-tokens 1000 --append-eod --json-keys text title",
    "hf_gpt2": "--tokenizer-type HuggingFaceTokenizer --tokenizer-model {gpt2_hf} --append-eod --json-keys text title",
    "hf_tekken": "--tokenizer-type HuggingFaceTokenizer --tokenizer-model {tekken_hf} --append-eod "
                 "--json-keys text title",
    # Megatron builds these two with AutoTokenizer("gpt2") / ("bert-large-uncased") whatever the files say:
    # recorded with HF_HOME holding a hub cache of the same GPT-2 and MiniLM tokenizer.json.
    "gpt2_bpe": "--tokenizer-type GPT2BPETokenizer --vocab-file {gpt2_vocab} --merge-file {gpt2_merges} --append-eod "
                "--json-keys text title",
    "bert_lower": "--tokenizer-type BertWordPieceLowerCase --vocab-file {bert_vocab} --append-eod --json-keys text",
}

# sha256 of megatron-core 0.19.2's outputs, <prefix>_<file>.
MEGATRON_SHA256 = {
    "llama2": {
        "text_document.bin": "3676897abb582110608e6aa7d0ed3476598338eeb45e4ad59b4825d61d6d1454",
        "text_document.idx": "fbf182e4adfaea5b816f0c84f3cd1b4d1f7d9d3cb8871998b0f39a1f82cfc8fa",
        "title_document.bin": "db02c3f75c3a3e3533140b468fa1203b653dd822e70a0f3ca22cfb9069a4699e",
        "title_document.idx": "8700c9375022ee1987df852b1693b88b94ce52579c6b56d645429d1b6909bb9b",
    },
    "sentencepiece": {
        "text_document.bin": "3676897abb582110608e6aa7d0ed3476598338eeb45e4ad59b4825d61d6d1454",
        "text_document.idx": "fbf182e4adfaea5b816f0c84f3cd1b4d1f7d9d3cb8871998b0f39a1f82cfc8fa",
    },
    "gpt_sentencepiece": {
        "text_document.bin": "3676897abb582110608e6aa7d0ed3476598338eeb45e4ad59b4825d61d6d1454",
        "text_document.idx": "fbf182e4adfaea5b816f0c84f3cd1b4d1f7d9d3cb8871998b0f39a1f82cfc8fa",
    },
    "llama2_no_eod": {
        "text_document.bin": "85584c2de21b5c225d5fc86aeb8ee39cd682b9f3d62a3f10b560d042947184d0",
        "text_document.idx": "1afc25884fcb67fc30d3c40774c09333668e733d0b4ef8b81b25a82cf26a2e20",
    },
    "tiktoken_v2": {
        "text_document.bin": "7f6db63f8b9792fe6f81f46a08d2afcbcac69ba814474c4c72c7394377a8dc07",
        "text_document.idx": "93953b2113512cf3d8ee17b0115bbafde4e5ba0ef0bd28f27b67341209328a8b",
        "title_document.bin": "626dfff0cef55263309c16461da3a0c7b004da1b69af4eb42cea91fdf039ee0c",
        "title_document.idx": "adc2f349492f2c6b7531d4bb43f071eb92015922e6fa8b91a43f61783c026caa",
    },
    "tiktoken_v1": {
        "text_document.bin": "94f08d215d223d4fdbc8880e514f1b5c79d2eb088268a930ee3f6cba6fb5bb89",
        "text_document.idx": "d9acec7ffde462c8e1a278cc0c0818bfb1627a500492899325394be1df97e446",
        "title_document.bin": "626dfff0cef55263309c16461da3a0c7b004da1b69af4eb42cea91fdf039ee0c",
        "title_document.idx": "adc2f349492f2c6b7531d4bb43f071eb92015922e6fa8b91a43f61783c026caa",
    },
    "tiktoken_v2_65536": {
        "text_document.bin": "7d9bb2e2c88f5368fa0f9d912545d5f236505eea8376e663f89c5cc336c8eb40",
        "text_document.idx": "98e87c97794d3d115352921d0d36989f8f0bce12876d763c942f4f5c87851bae",
        "title_document.bin": "c1919672f0c563aeab08f5b5bde964bfb11ddfc61e64be0a4967de73ef38be5c",
        "title_document.idx": "a70720d5e75ae0cb0ffa79fe439711f681606ca00e999520c993cddce5dab1a9",
    },
    "hf_gpt2": {
        "text_document.bin": "f9d745bc449eacb6765d7dc233d10fbca0b207c203dea5d014f5c360aafcb3d8",
        "text_document.idx": "a25aafa2bd0437e4e2c112c43d85097593ea482c4bba1c13a284879ca5660646",
        "title_document.bin": "af877ff0402a54fe63200585110a977c8d57f8439b650f977f4259f245d0c828",
        "title_document.idx": "d54212051dcff9371c01a0952311514bb468fe1aa4bb1e9a0a17e8db5564e2e0",
    },
    "gpt2_bpe": {
        "text_document.bin": "f9d745bc449eacb6765d7dc233d10fbca0b207c203dea5d014f5c360aafcb3d8",
        "text_document.idx": "a25aafa2bd0437e4e2c112c43d85097593ea482c4bba1c13a284879ca5660646",
    },
    "bert_lower": {
        "text_document.bin": "6b700a161427f78fdda3d9d2a6ce7f02df6e04eff6742490a8485076196f5a31",
        "text_document.idx": "5eef13a27c612d772d33b1d360e131f02dbb335228e01fdb3e1b2c8f59c27576",
    },
    "hf_tekken": {
        "text_document.bin": "7f6db63f8b9792fe6f81f46a08d2afcbcac69ba814474c4c72c7394377a8dc07",
        "text_document.idx": "93953b2113512cf3d8ee17b0115bbafde4e5ba0ef0bd28f27b67341209328a8b",
        "title_document.bin": "626dfff0cef55263309c16461da3a0c7b004da1b69af4eb42cea91fdf039ee0c",
        "title_document.idx": "adc2f349492f2c6b7531d4bb43f071eb92015922e6fa8b91a43f61783c026caa",
    },
}


def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's byte alphabet read backwards: printable stand-in -> byte."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    alphabet, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            alphabet[chr(byte)] = byte
        else:
            alphabet[chr(256 + extra)] = byte
            extra += 1
    return alphabet


@pytest.fixture(scope="module")
def files(request, tmp_path_factory) -> dict[str, str]:
    """The tokenizer files of :data:`CASES`, made from the files in tests/data and data/tokenizers once per run
    (the TikTokenizer list: ~0.5 s) for every xdist worker. Each process converts the 131 k list once per variant
    (~2 CPU-s with the tokenizer's load; cached by the file and the options), wherever its tests run."""
    root = built_once(request.config, tmp_path_factory, "megatron_types", _make_files)
    folders = {name: str(root / name) for name in ("gpt2_hf", "tekken_hf")}
    return {"model": str(MISTRAL_MODEL), "tiktoken": str(root / "tekken-vocab-list.json"), **folders,
            "gpt2_vocab": str(root / "vocab.json"), "gpt2_merges": str(root / "merges.txt"),
            "bert_vocab": str(root / "vocab.txt")}


def _make_files(root: Path) -> None:
    """The TikTokenizer list, the Hugging Face folders, GPT-2's vocab.json and merges.txt, BERT's vocab.txt."""
    root.mkdir()
    tekken = orjson.loads((DATA / "tekken.tokenizer.json").read_bytes())
    decode = _byte_level_decoder()
    ranks = sorted((token_id - 1000, bytes(decode[char] for char in piece))
                   for piece, token_id in tekken["model"]["vocab"].items() if token_id >= 1000)
    assert [rank for rank, _ in ranks] == list(range(130072))
    tiktoken_list = root / "tekken-vocab-list.json"
    tiktoken_list.write_text(json.dumps([{"rank": rank, "token_bytes": base64.b64encode(token).decode(),
                                          "token_str": token.decode("utf-8", "replace")} for rank, token in ranks]))
    for name, source, eos in (("gpt2_hf", Path(__file__).parents[2] / "data/tokenizers/gpt2.tokenizer.json",
                               "<|endoftext|>"), ("tekken_hf", DATA / "tekken.tokenizer.json", "</s>")):
        folder = root / name
        folder.mkdir()
        shutil.copy(source, folder / "tokenizer.json")
        (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos}))
    gpt2 = orjson.loads((Path(__file__).parents[2] / "data/tokenizers/gpt2.tokenizer.json").read_bytes())
    (root / "vocab.json").write_text(json.dumps(gpt2["model"]["vocab"], ensure_ascii=False), encoding="utf-8")
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in gpt2["model"]["merges"]]
    (root / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    bert = orjson.loads((DATA / "minilm-bert.tokenizer.json").read_bytes())["model"]["vocab"]
    by_id = sorted(bert.items(), key=lambda item: item[1])
    (root / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in by_id), encoding="utf-8")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- worked examples of specs/megatron-tokenizers.md --------------------------------------------------------------

@pytest.mark.parametrize("kind", ["Llama2Tokenizer", "SentencePieceTokenizer", "GPTSentencePieceTokenizer"])
def test_sentencepiece_types_encode_hello_world_as_megatron(kind):
    info = load_tokenizer(TokenizerSpec(str(MISTRAL_MODEL), kind), TYPE_EOD)
    assert info.encode_reference(["Hello world"], False)[0].tolist() == [22557, 1526]
    assert info.tokenizer.encode("Hello world", add_special_tokens=False).ids == [22557, 1526]
    assert (info.eod, info.eod_id, info.vocab_size, info.reference_library) == ("</s>", 2, 32000,
                                                                                      "sentencepiece")


def test_tiktoken_type_encodes_hello_world_as_megatron(files):
    info = load_tokenizer(TokenizerSpec(files["tiktoken"], "TikTokenizer", "v2"), TYPE_EOD)
    assert info.encode_reference(["Hello world"], False)[0].tolist() == [22177, 4304]
    assert info.tokenizer.encode("Hello world", add_special_tokens=False).ids == [22177, 4304]
    assert (info.eod_id, info.vocab_size, info.token_width, info.reference_library) == (2, 131072, 4, "tiktoken")


def test_literal_control_pieces_follow_each_library():
    """SentencePiece (and so Llama2Tokenizer) encodes ``<s>`` written in a text as text; Megatron's
    TikTokenizer encodes with allowed_special="all", so there it is the special itself."""
    sentencepiece = load_tokenizer(TokenizerSpec(str(MISTRAL_MODEL), "Llama2Tokenizer"))
    assert sentencepiece.tokenizer.encode("<s>", add_special_tokens=False).ids == [523, 28713, 28767]
    assert sentencepiece.encode_reference(["<s>"], False)[0].tolist() == [523, 28713, 28767]


def test_tiktoken_specials_in_text_are_the_specials(files):
    info = load_tokenizer(TokenizerSpec(files["tiktoken"], "TikTokenizer"))
    assert info.encode_reference(["<s>", "</s>", "<unk>", "<SPECIAL_17>"], False)[0].tolist() == [1, 2, 0, 17]
    assert info.tokenizer.encode("<s></s>", add_special_tokens=False).ids == [1, 2]


# ---- preprocess-data equals preprocess_data.py -------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["hf", "fastokens"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_preprocess_data_writes_megatrons_bytes(case, engine, files, tmp_path):
    prefix = tmp_path / "out"
    flags = CASES[case].format(**files).split()
    arguments = ["--input", str(CORPUS), "--output-prefix", str(prefix), "--workers", "1", "--engine", engine, *flags]
    if case == "bert_lower" and engine == "fastokens":  # BERT's normalizer: fastokens refuses, auto takes the library
        with pytest.raises(FastEngineUnavailable, match=r"BertNormalizer\); use engine hf"):
            preprocess_data(arguments)
        return
    summary = preprocess_data(arguments)
    assert summary.engine == engine
    for name, sha256 in MEGATRON_SHA256[case].items():
        assert _sha256(tmp_path / f"out_{name}") == sha256, name



@pytest.mark.parametrize("case", ["llama2", "gpt_sentencepiece", "hf_gpt2"])
def test_gigatoken_on_its_thread_pool_writes_megatrons_bytes(case, files, tmp_path):
    """``--workers 2``: gigatoken splits each batch over its pool (Encoder's ``parallel``), the same bytes."""
    prefix = tmp_path / "out"
    flags = CASES[case].format(**files).split()
    summary = preprocess_data(["--input", str(CORPUS), "--output-prefix", str(prefix), "--workers", "2",
                               "--engine", "gigatoken", *flags])
    assert summary.engine == "gigatoken"
    for name, sha256 in MEGATRON_SHA256[case].items():
        assert _sha256(tmp_path / f"out_{name}") == sha256, name

def test_a_json_list_is_one_sequence_per_element_and_an_empty_text_an_empty_document(files, tmp_path):
    corpus = tmp_path / "in.jsonl"
    corpus.write_text('{"text": ["Hello world", "", "Hello world"]}\n{"text": ""}\n{"text": ["", ""]}\n'
                      '{"text": "Hello world"}\n')
    preprocess_data(["--input", str(corpus), "--output-prefix", str(tmp_path / "o"), "--workers", "1",
                     "--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model", files["model"], "--append-eod"])
    dataset = MMapIndexedDataset(tmp_path / "o_text_document")
    assert dataset.document_indices.tolist() == [0, 2, 2, 2, 3]
    assert [dataset[i].tolist() for i in range(len(dataset))] == [[22557, 1526], [22557, 1526, 2], [22557, 1526, 2]]


def test_partitions_deal_lines_round_robin_then_concatenate(files, tmp_path):
    """--partitions 2 over a glob: partition 0 holds lines 1, 3, ..., partition 1 lines 2, 4, ...; the
    output is partition 0's documents, then 1's."""
    corpus = tmp_path / "a.jsonl"
    texts = [f"document {i}" for i in range(5)]
    corpus.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    args = ["--input", str(tmp_path / "*.jsonl"), "--workers", "2", "--partitions", "2", "--tokenizer-type",
            "Llama2Tokenizer", "--tokenizer-model", files["model"]]
    preprocess_data([*args, "--output-prefix", str(tmp_path / "rr")])
    preprocess_data([*args, "--output-prefix", str(tmp_path / "seq"), "--keep-sequential-samples"])
    info = load_tokenizer(TokenizerSpec(files["model"], "Llama2Tokenizer"))

    def texts_of(prefix):
        dataset = MMapIndexedDataset(prefix)
        return [info.tokenizer.decode(dataset[i].tolist()) for i in range(len(dataset))]

    assert texts_of(tmp_path / "rr_text_document") == [texts[i] for i in (0, 2, 4, 1, 3)]
    assert texts_of(tmp_path / "seq_text_document") == texts


@pytest.mark.parametrize(("flags", "message"), [
    (["--split-sentences"], "--split-sentences: needs NLTK's punkt data"),
    (["--tokenizer-special-tokens", "<a>"], "--tokenizer-special-tokens: not supported"),
    (["--workers", "3", "--partitions", "2"], "must be a positive multiple of --partitions"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
])
def test_refused_flags_are_named_in_one_line(flags, message, files, tmp_path):
    base = ["--input", str(CORPUS), "--output-prefix", str(tmp_path / "o"), "--workers", "2",
            "--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model", files["model"]]
    with pytest.raises(TokenmillError, match=message) as raised:
        preprocess_data([*base, *flags])
    assert "\n" not in str(raised.value)
    assert not list(tmp_path.glob("o_*"))


def test_a_bad_line_names_file_and_line_and_leaves_no_output(files, tmp_path):
    corpus = tmp_path / "in.jsonl"
    corpus.write_text('{"text": "a"}\n{"text": 3}\n')
    with pytest.raises(TokenmillError, match=r"in.jsonl:2: 'text' is int, not a string or a list of strings"):
        preprocess_data(["--input", str(corpus), "--output-prefix", str(tmp_path / "o"), "--workers", "1",
                         "--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model", files["model"]])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]



def test_a_bad_line_in_a_later_batch_comes_after_the_batches_before_it(files, tmp_path, monkeypatch):
    """The next batch is parsed (and its encode started) before a batch is proven and written: a bad line there
    is still raised only once every batch before it went through, and no output is left."""
    import tokenmill.megatron.preprocess_data as module

    monkeypatch.setattr(module, "_BATCH_BYTES", 64)
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(f'{{"text": "document {number} " }}\n' for number in range(40)) + '{"text": [1]}\n')
    written = []
    real = module._documents
    monkeypatch.setattr(module, "_documents", lambda *args: written.append(len(args[2])) or real(*args))
    with pytest.raises(TokenmillError, match=r"in.jsonl:41: 'text' is a list holding a int \(1\), not only strings"):
        preprocess_data(["--input", str(corpus), "--output-prefix", str(tmp_path / "o"), "--workers", "2",
                         "--engine", "fastokens", "--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model",
                         files["model"]])
    assert written == [3] * 13  # batches of 3 lines (>= 64 bytes); the 14th holds lines 40 and 41
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]

# ---- conversions ------------------------------------------------------------------------------------------------

def _protobuf_field(number: int, payload: bytes | int) -> bytes:
    def varint(value: int) -> bytes:
        out = bytearray()
        while True:
            out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
            value >>= 7
            if not value:
                return bytes(out)
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def test_a_unigram_sentencepiece_model_is_refused_in_one_line(tmp_path):
    model = tmp_path / "unigram.model"
    model.write_bytes(_protobuf_field(1, _protobuf_field(1, b"<unk>") + _protobuf_field(3, 2))
                      + _protobuf_field(2, _protobuf_field(3, 1)))
    with pytest.raises(TokenmillError, match="unigram.model: Llama2Tokenizer model cannot be converted .* not a BPE"):
        load_family(TokenizerSpec(str(model), "Llama2Tokenizer"))


def test_a_model_read_in_any_field_layout_gives_the_same_pieces():
    """sentencepiece writes each piece as fields 1, 2, 3 with one-byte lengths (read directly); any other layout
    (fields reordered, a type or score left out, a piece over 127 bytes) goes through the generic reader."""
    score = struct.pack("<f", -1.5)
    long_piece = "\u2581" + "x" * 200

    def fixed32(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 5]) + payload

    pieces = [_protobuf_field(1, b"<unk>") + fixed32(2, b"\0\0\0\0") + _protobuf_field(3, 2),
              _protobuf_field(1, "\u2581a".encode()) + fixed32(2, score),
              _protobuf_field(3, 3) + fixed32(2, score) + _protobuf_field(1, b"</s>"),
              _protobuf_field(1, long_piece.encode()) + fixed32(2, score) + _protobuf_field(3, 1),
              _protobuf_field(1, b"b")]
    read, settings = read_model(b"".join(_protobuf_field(1, piece) for piece in pieces)
                                + _protobuf_field(2, _protobuf_field(3, 2) + _protobuf_field(35, 1)))
    assert read == [("<unk>", 0.0, 2), ("\u2581a", -1.5, 1), ("</s>", -1.5, 3), (long_piece, -1.5, 1), ("b", 0.0, 1)]
    assert (settings["model_type"], settings["byte_fallback"]) == (2, True)
    assert read_model(MISTRAL_MODEL.read_bytes())[0][:4] == [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3),
                                                             ("<0x00>", 0.0, 6)]

def test_a_file_that_is_no_model_is_refused(tmp_path):
    model = tmp_path / "x.model"
    model.write_bytes(b"\xff\xff\xff")
    with pytest.raises(TokenmillError, match="x.model: not a SentencePiece model"):
        load_family(TokenizerSpec(str(model), "Llama2Tokenizer"))


def test_mistrals_tekken_dict_reads_as_its_vocab_list(files, tmp_path):
    """Megatron reads only the list; tokenmill also takes Mistral's dict file, whose ``vocab`` is that list."""
    tekken_dict = tmp_path / "tekken.json"
    tekken_dict.write_bytes(orjson.dumps({"config": {}, "vocab": orjson.loads(Path(files["tiktoken"]).read_bytes())}))
    as_dict = load_family(TokenizerSpec(str(tekken_dict), "TikTokenizer"))
    as_list = load_family(TokenizerSpec(files["tiktoken"], "TikTokenizer"))
    assert as_dict.hf_json == as_list.hf_json


def test_converted_types_equal_their_library_on_mixed_text(files):
    texts = [json.loads(line)["text"] for line in (DATA / "mixed.jsonl").read_text(encoding="utf-8").splitlines()]
    texts += ["x  y", " lead", "", "  ", "\n\n", "\u2581 \u262f literal", "a\r\nb\tc"]
    for spec in (TokenizerSpec(files["model"], "Llama2Tokenizer"), TokenizerSpec(files["tiktoken"], "TikTokenizer"),
                 TokenizerSpec(files["tiktoken"], "TikTokenizer", "v1")):
        info = load_tokenizer(spec)
        reference_ids, reference_lengths = info.encode_reference(texts, False)
        converted = [encoding.ids for encoding in info.tokenizer.encode_batch(texts, add_special_tokens=False)]
        assert np.concatenate([np.array(ids, np.int64) for ids in converted]).tolist() == reference_ids.tolist()
        assert [len(ids) for ids in converted] == reference_lengths.tolist()


# ---- the same types in pack and in the workflow -------------------------------------------------------------------

# Modalities 0.5.0's pack_encoded_data with PreTrainedSPTokenizer (tokenizer_model_file: the Mistral v1 .model),
# eod_token </s>, jq .text, processing_batch_size 1000 (a throwaway venv with transformers 4.57.6): each document
# is sp.encode(text) + [2], 2-byte tokens.
MODALITIES_SP_SHA256 = {"mixed.jsonl": "b2d0a3b222ac88f4fe21de46c5faf9e392303deb703824f44a076d399eab99d1"}


@pytest.mark.parametrize("engine", ["hf", "fastokens"])
def test_pack_with_a_sentencepiece_model_writes_modalities_bytes(engine, tmp_path):
    from tokenmill.pack.pretraining import PackSettings, pack

    out = tmp_path / "mixed.pbin"
    pack([str(DATA / "mixed.jsonl")], str(out), PackSettings(str(MISTRAL_MODEL), tokenizer_type="Llama2Tokenizer",
                                                    eod=TYPE_EOD, engine=engine))
    assert _sha256(out) == MODALITIES_SP_SHA256["mixed.jsonl"]
    tokenizer = json.loads(Path(f"{out}.meta.json").read_text())["tokenizer"]
    assert (tokenizer["type"], tokenizer["reference"], tokenizer["eod_id"]) == ("Llama2Tokenizer", "sentencepiece", 2)


@pytest.mark.slow
def test_a_workflow_tokenizer_of_a_megatron_type_builds_what_preprocess_data_writes_and_names_caches_for_it(
        workflow_dir):
    """{type: Llama2Tokenizer, path: M.model}: the .bin/.idx are preprocess_data.py's with --append-eod, and the
    caches are named for a job with --tokenizer-type Llama2Tokenizer --tokenizer-model M.model."""
    import yaml
    from conftest import run_snakemake

    from tokenmill.megatron.job_tokenizer import job_tokenizer_identifiers

    shutil.copy(MISTRAL_MODEL, workflow_dir / "data/tokenizers/mistral.model")
    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)
    (workflow_dir / "data/raw/demo.jsonl").write_bytes(b"".join(lines[:1200]))
    config = {"tokenizers": {"mistral": {"type": "Llama2Tokenizer", "path": "data/tokenizers/mistral.model"}},
              "datasets": {"demo": {"inputs": ["data/raw/demo.jsonl"], "tokenizer": "mistral"}},
              "sampling": {"seq_lengths": [128], "seeds": [1], "num_samples": {"train": 100}}}
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    preprocess_data(["--input", str(workflow_dir / "data/raw/demo.jsonl"), "--output-prefix",
                     str(workflow_dir / "pp"), "--workers", "1", "--tokenizer-type", "Llama2Tokenizer",
                     "--tokenizer-model", str(MISTRAL_MODEL), "--append-eod"])
    for suffix in (".bin", ".idx"):
        assert (workflow_dir / f"data/megatron/demo_text_document{suffix}").read_bytes() == \
            (workflow_dir / f"pp_text_document{suffix}").read_bytes()
    cache = workflow_dir / "data/cache/demo/seq128_seed1"
    description = json.loads(next(cache.glob("*-GPTDataset-train-description.txt")).read_text())
    assert description["tokenizer"] == job_tokenizer_identifiers(
        "0.19", "--tokenizer-type Llama2Tokenizer --tokenizer-model data/tokenizers/mistral.model")
    assert "--tokenizer-type Llama2Tokenizer\n--tokenizer-model data/tokenizers/mistral.model\n" in \
        (cache / "megatron_args.txt").read_text()
