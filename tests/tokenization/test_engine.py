"""The tokenizer engine: fastokens where it is proven, Hugging Face otherwise, and proof in every job.

The fast engine must give the exact ids of Hugging Face's ``tokenizers`` (the golden Modalities
hashes in test_pack.py run with ``auto``, so with fastokens); these tests add what the engine
choice and the in-job proof promise, on an adversarial file.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from conftest import (DATA, DEMO_JSONL, GPT2, GPT2_EOD, MIXED_JSONL, TEKKEN, run_tokenmill, train_sentencepiece,
                      write_jsonl_bytes)
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.pack.pretraining import EngineMismatch, PackSettings, pack

from tokenmill.tokenization.engine import Encoder, FastEngineUnavailable, gigatoken_installed
from tokenmill.tokenization.families import TokenizerSpec
from tokenmill.tokenization.proof import ProofSampler, input_key
from tokenmill.tokenization.tokenizer import fast_engine_refusal, load_tokenizer

MINILM = DATA / "minilm-bert.tokenizer.json"
# What auto takes for a proven tokenizer.json: gigatoken where the extra is installed, else fastokens.
AUTO_FAST = "gigatoken" if gigatoken_installed() else "fastokens"
FAST_ENGINES = ("fastokens", "gigatoken") if gigatoken_installed() else ("fastokens",)


@pytest.fixture
def without_gigatoken(monkeypatch):
    """auto as it chooses where the gigatoken extra is not installed (for what is said of fastokens)."""
    monkeypatch.setattr("tokenmill.tokenization.engine.gigatoken_installed", lambda: False)


def adversarial_texts() -> list[str]:
    """Where encoders disagree if they ever do (issue 10's list), plus one 5 MB line: longer than pack's
    4 MiB batch (``--batch-bytes``) and the reader's 1 MiB chunk, so that it crosses both."""
    prose = ("The quick brown fox — naïve café, jalapeño; 東京は晴れ。 Привет, мир! مرحبا بالعالم שלום עולם "
             "   spaced   out\t\ttabs\n\n\nnewlines 12345 3.14159 ")
    return [
        "special strings in text: <|endoftext|> and </s> and <s> and <unk> and <SPECIAL_12> inline",
        "<|endoftext|>", "</s>", "<s>text</s>",
        "NFC: caf\u00e9 r\u00e9sum\u00e9 / NFD: cafe\u0301 re\u0301sume\u0301",
        "emoji ZWJ: 👩‍👩‍👧‍👦 👨🏽‍💻 🏳️‍🌈 and flags 🇫🇷🇯🇵 and ᄀᄁ Hangul jamo",
        " " * 50 + "\t" * 20 + "\n" * 30 + "\u3000\u00a0\u2003" * 10 + "end",
        "a" * 10_000,
        "!" * 10_000,
        "def f(x):\n    return {'k': [x ** 2 for x in range(10)]}  # code\n\tif (a && b) { return *p++; }\n",
        "中文字符测试，日本語のテキスト、한국어 텍스트입니다。" * 20,
        "العربية من اليمين إلى اليسار עברית מימין לשמאל" * 20,
        "mixed\u200bzero\u200cwidth\u200djoiners\ufeffbom inside",
        prose * (5_000_000 // len(prose.encode("utf-8"))),  # a 5 MB line
    ]


@pytest.fixture(scope="module")
def adversarial_jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("adversarial") / "adversarial.jsonl"
    write_jsonl_bytes(path, [json.dumps({"text": text}, ensure_ascii=False).encode() for text in adversarial_texts()])
    return path


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer, eod", [(GPT2, GPT2_EOD), (TEKKEN, "</s>")], ids=["gpt2", "tekken"])
def test_both_engines_write_the_same_bytes_as_hugging_face_on_adversarial_text(tmp_path, adversarial_jsonl,
                                                                                tokenizer, eod):
    for engine in ("hf", *FAST_ENGINES):
        run_tokenmill("pack", adversarial_jsonl, "--tokenizer", tokenizer, "--eod", eod, "--engine", engine,
                      "--check-fraction", "1", "--workers", "2", "-o", tmp_path / f"{engine}.pbin")
    for engine in FAST_ENGINES:
        assert (tmp_path / "hf.pbin").read_bytes() == (tmp_path / f"{engine}.pbin").read_bytes()
        fast = read_sidecar(tmp_path / f"{engine}.pbin")["engine"]
        assert (fast["name"], fast["checked_documents"], fast["mismatches"]) == (engine, 14, 0)
    assert read_sidecar(tmp_path / "hf.pbin")["engine"]["name"] == "hf"

    reference = Tokenizer.from_file(str(tokenizer))
    eod_id = reference.token_to_id(eod)
    pbin = PbinFile(tmp_path / "fastokens.pbin")
    for i, text in enumerate(adversarial_texts()[:-1]):
        ids = reference.encode(text).ids
        assert pbin.document(i).tolist() == ids + ([eod_id] if ids[-1] != eod_id else [])


@pytest.mark.slow
def test_auto_takes_fastokens_only_where_the_tokenizer_json_is_proven(tmp_path):
    # gigatoken where it was measured faster than fastokens (GPT-2's family), else fastokens (Tekken's)
    assert (Encoder(load_tokenizer(GPT2)).name, Encoder(load_tokenizer(TEKKEN)).name) == (AUTO_FAST, "fastokens")
    bert = Encoder(load_tokenizer(MINILM))
    assert (bert.name, bert.reason) == ("hf", "engine auto: HF, as fastokens is not proven for this tokenizer "
                                              "(model 'WordPiece' is not BPE)")
    gpt2 = json.loads(GPT2.read_text())
    variants = {
        "BPE dropout is set": {"model": {**gpt2["model"], "dropout": 0.1}},
        "BPE byte fallback is set": {"model": {**gpt2["model"], "byte_fallback": True}},
        "normalizer 'NFC'": {"normalizer": {"type": "NFC"}},
        "pre-tokenizer Metaspace": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}]}},
        "post-processor 'TemplateProcessing'": {"post_processor": {
            "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                                                     {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}}}},
        "added token '<|endoftext|>' has lstrip/rstrip/single_word rules": {
            "added_tokens": [{**gpt2["added_tokens"][0], "lstrip": True}]},
    }
    for reason, change in variants.items():
        assert fast_engine_refusal({**gpt2, **change}) == reason
        path = tmp_path / "variant.tokenizer.json"
        path.write_text(json.dumps({**gpt2, **change}))
        encoder = Encoder(load_tokenizer(path))
        assert encoder.name == "hf" and reason in encoder.reason
    assert fast_engine_refusal(gpt2) is None


@pytest.mark.slow
def test_auto_packs_an_input_under_1_mb_with_hugging_face_itself_and_the_same_bytes(tmp_path):
    lines = (DATA.parent.parent / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_bytes(b"".join(lines[:300]))  # ~0.3 MB: loading fastokens would take longer than HF
    large.write_bytes(b"".join(lines[:1500]))  # ~1.6 MB
    assert small.stat().st_size < 1 << 20 < large.stat().st_size
    for path in (small, large):
        for engine in ("auto", "fastokens"):
            run_tokenmill("pack", path, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--engine", engine,
                          "-o", tmp_path / f"{path.stem}.{engine}.pbin")
        auto, fast = (tmp_path / f"{path.stem}.{engine}.pbin" for engine in ("auto", "fastokens"))
        assert auto.read_bytes() == fast.read_bytes()
    small_engine = read_sidecar(tmp_path / "small.auto.pbin")["engine"]
    size_mb = small.stat().st_size / 1e6
    assert (small_engine["name"], small_engine["reason"]) == (
        "hf", f"engine auto: HF, as this input (~{size_mb:.2f} MB of text) takes it less time than loading "
              f"fastokens would")
    assert read_sidecar(tmp_path / "large.auto.pbin")["engine"]["name"] == AUTO_FAST


def test_forcing_fastokens_on_a_tokenizer_it_cannot_load_is_one_line(tmp_path):
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text": "hello"}'])
    result = run_tokenmill("pack", source, "--tokenizer", MINILM, "--no-eod", "--engine", "fastokens", "-o",
                           tmp_path / "x.pbin", check=False)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "minilm-bert.tokenizer.json: fastokens cannot load it" in result.stderr


def sparse_gpt2(folder: Path) -> Path:
    """GPT-2's tokenizer.json with every id from 1000 up moved 100 higher: Hugging Face loads a
    vocabulary with a gap in its ids, fastokens 0.3 does not ("unsupported model type")."""
    config = json.loads(GPT2.read_text(encoding="utf-8"))
    config["model"]["vocab"] = {token: i + 100 * (i >= 1000) for token, i in config["model"]["vocab"].items()}
    for token in config["added_tokens"]:
        token["id"] += 100
    path = folder / "sparse.tokenizer.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    assert fast_engine_refusal(config) is None  # nothing in it that auto's check of the file refuses
    return path


@pytest.mark.slow
def test_auto_takes_hugging_face_where_fastokens_cannot_load_the_tokenizer_and_says_why(tmp_path):
    sparse = sparse_gpt2(tmp_path)
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    source = tmp_path / "demo.jsonl"
    source.write_bytes(b"".join(lines[:1000]))
    assert source.stat().st_size > 1 << 20  # over 1 MB, auto takes fastokens where the file allows it
    auto = run_tokenmill("pack", source, "--tokenizer", sparse, "--eod", GPT2_EOD, "-o", tmp_path / "auto.pbin")
    run_tokenmill("pack", source, "--tokenizer", sparse, "--eod", GPT2_EOD, "--engine", "hf",
                  "-o", tmp_path / "hf.pbin")
    assert (tmp_path / "auto.pbin").read_bytes() == (tmp_path / "hf.pbin").read_bytes()
    engine = read_sidecar(tmp_path / "auto.pbin")["engine"]
    if gigatoken_installed():  # gigatoken loads a vocabulary with a gap, and is proven on it
        assert engine["name"] == read_sidecar(tmp_path / "auto.pbin")["sources"][0]["engine"] == "gigatoken"
        assert engine["checked_documents"] > 0
    else:
        assert engine["name"] == "hf"
        assert engine["reason"].startswith("engine auto: HF, as fastokens cannot load this tokenizer (model error: ")
        assert f"; {engine['reason']}, 0 documents checked" in auto.stderr.splitlines()[-1]
        assert read_sidecar(tmp_path / "auto.pbin")["sources"][0]["engine"] == "hf"

    forced = run_tokenmill("pack", source, "--tokenizer", sparse, "--no-eod", "--engine", "fastokens", "-o",
                           tmp_path / "f.pbin", check=False)
    assert forced.returncode == 1 and forced.stderr.count("\n") == 1 and "Traceback" not in forced.stderr
    assert forced.stderr.startswith(f"tokenmill: error: {sparse}: fastokens cannot load it (model error: ")
    assert forced.stderr.endswith("); use engine hf\n")
    assert not (tmp_path / "f.pbin").exists()


@pytest.mark.slow
def test_auto_falls_back_to_hugging_face_in_pack_threads_and_in_process_encoders(tmp_path, monkeypatch,
                                                                                without_gigatoken):
    import tokenmill.tokenization.engine

    sparse = sparse_gpt2(tmp_path)
    # a small input with two threads: no 1 MB file to tokenize, the same code path
    monkeypatch.setattr(tokenmill.tokenization.engine, "FAST_ENGINE_PAYS_BYTES", 0)
    settings = dict(eod=GPT2_EOD, workers=2, batch_bytes=4096)
    said = []
    meta = pack([str(MIXED_JSONL)] * 2, str(tmp_path / "auto.pbin"),
                PackSettings(str(sparse), allow_duplicate_inputs=True, **settings), log=said.append)
    pack([str(MIXED_JSONL)] * 2, str(tmp_path / "hf.pbin"),
         PackSettings(str(sparse), engine="hf", allow_duplicate_inputs=True, **settings), log=lambda message: None)
    assert (tmp_path / "auto.pbin").read_bytes() == (tmp_path / "hf.pbin").read_bytes()
    assert meta["engine"]["name"] == "hf" and [source["engine"] for source in meta["sources"]] == ["hf", "hf"]
    assert "fastokens cannot load this tokenizer" in meta["engine"]["reason"] and meta["engine"]["reason"] in said[-1]

    # an encoder in this process (sft, the on-access datasets) takes HF in place, on the first batch
    info = load_tokenizer(sparse)
    texts = ["hello world", "<|endoftext|> and more"]
    encoder = Encoder(info, "auto", fall_back=True)
    assert encoder.name == "fastokens"  # chosen from the file, before fastokens has tried it
    ids, lengths = encoder.encode_batch(texts, False)
    hf_ids, hf_lengths = Encoder(info, "hf").encode_batch(texts, False)
    assert np.array_equal(ids, hf_ids) and np.array_equal(lengths, hf_lengths)
    assert encoder.name == "hf" and "fastokens cannot load this tokenizer" in encoder.reason
    for engine, fall_back in (("auto", False), ("fastokens", True)):  # pack falls back itself; by name, no fallback
        with pytest.raises(FastEngineUnavailable, match=r"fastokens cannot load it \(.*\); use engine hf$"):
            Encoder(info, engine, fall_back=fall_back).encode_batch(texts, False)


def test_a_difference_in_more_documents_than_the_sidecar_states_is_caught(tmp_path, monkeypatch):
    # 20,000 short documents, 20 % of them holding "ж" (Cyrillic, not a risky code point: only the
    # whole-document sample can see it), on which the planted engine gives one wrong id.
    lines = [json.dumps({"text": f"document {i} " + ("ж word" if i % 5 == 0 else "plain word")},
                        ensure_ascii=False).encode() for i in range(20_000)]
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    settings = PackSettings(str(GPT2), eod=GPT2_EOD, engine="fastokens")  # the default check_fraction
    clean = pack([str(source)], str(tmp_path / "clean.pbin"), settings, log=lambda message: None)
    detects = clean["engine"]["proof"]["detects"]
    stated = float(detects.split(">= ")[1].split(" %")[0])
    assert stated < 20 and detects.endswith("in a job of >= 20000 documents")
    assert clean["engine"]["proof"]["documents"] == clean["engine"]["checked_documents"] > 0
    plant_mismatch(monkeypatch, "ж")
    with pytest.raises(EngineMismatch, match=rf"{source}:\d+: fast encoder disagrees with the tokenizer at token 2 "):
        pack([str(source)], str(tmp_path / "x.pbin"), settings, log=lambda message: None)


def test_a_family_of_identical_documents_is_drawn_independently_in_pack(tmp_path, monkeypatch):
    """One document repeated as 20 % of a job (every fifth line the same text, the rest distinct): drawn by
    content, the family was checked all together or not at all (1.5 % of trials caught it); drawn by
    line under the input's key, each copy is drawn on its own, so the sample holds ~0.2 % of them and a
    difference in the family is caught, as the sidecar's statement says."""
    lines = [json.dumps({"text": "the same templated document ж" if i % 5 == 0 else f"distinct document {i}"},
                        ensure_ascii=False).encode() for i in range(20_000)]
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    settings = PackSettings(str(GPT2), eod=GPT2_EOD, engine="fastokens")
    family = np.arange(0, 20_000, 5) + 1  # their line numbers
    chosen = ProofSampler([], settings.check_fraction).choose(["the same templated document ж"] * len(family),
                                                               family, input_key(str(source)))
    assert 0 < len(chosen.documents) < len(family) / 50
    plant_mismatch(monkeypatch, "ж")
    with pytest.raises(EngineMismatch, match=rf"{source}:\d+: fast encoder disagrees"):
        pack([str(source)], str(tmp_path / "x.pbin"), settings, log=lambda message: None)


def plant_mismatch(monkeypatch, marker: str):
    """Make the fast engine give one wrong id for texts containing ``marker`` (a bug it might have)."""
    real = Encoder.encode_batch

    def encode_batch(self, texts, add_special_tokens):
        tokens, lengths = real(self, texts, add_special_tokens)
        if self.name == "fastokens":
            tokens = tokens.copy()
            starts = np.cumsum(lengths) - lengths
            for i, text in enumerate(texts):
                if marker in text:
                    tokens[starts[i] + 2] += 1
        return tokens, lengths

    monkeypatch.setattr(Encoder, "encode_batch", encode_batch)


def test_a_planted_mismatch_stops_the_job_naming_file_line_and_token(tmp_path, monkeypatch):
    plant_mismatch(monkeypatch, "<|endoftext|>")  # texts with special-token strings are always checked
    lines = [json.dumps({"text": f"ordinary text {i}"}).encode() for i in range(300)]
    lines[123] = b'{"text": "a planted <|endoftext|> difference"}'
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    # forced: under 1 MB, auto would take Hugging Face itself (see the small-input test)
    settings = PackSettings(str(GPT2), eod=GPT2_EOD, check_fraction=0.0, engine="fastokens")
    with pytest.raises(EngineMismatch, match=rf"{source}:124: fast encoder disagrees with the tokenizer at token 2 "):
        pack([str(source)], str(tmp_path / "x.pbin"), settings, log=lambda message: None)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["x.jsonl"]


def test_on_mismatch_hf_re_encodes_that_input_with_hugging_face(tmp_path, monkeypatch):
    plant_mismatch(monkeypatch, "planted")
    clean = write_jsonl_bytes(tmp_path / "clean.jsonl", [b'{"text": "nothing to see"}'] * 50)
    planted = write_jsonl_bytes(tmp_path / "planted.jsonl", [json.dumps({"text": f"text {i}"}).encode()
                                                             for i in range(200)] + [b'{"text": "planted here"}'])
    settings = dict(eod=GPT2_EOD, check_fraction=1.0, batch_bytes=512)
    said = []
    outputs = {name: dict(out_path=str(tmp_path / f"{name}.pbin"), megatron_prefix=str(tmp_path / name),
                          datatrove_name=str(tmp_path / name)) for name in ("fallback", "hf")}
    meta = pack([str(clean), str(planted)], settings=PackSettings(str(GPT2), on_mismatch="hf", engine="fastokens",
                                                                  **settings), log=said.append, **outputs["fallback"])
    pack([str(clean), str(planted)], settings=PackSettings(str(GPT2), engine="hf", **settings),
         log=lambda message: None, **outputs["hf"])
    # every format's writer went back to where the planted input began: the same bytes as Hugging Face's
    for suffix in (".pbin", ".bin", ".idx", ".ds", ".ds.index", ".ds.metadata"):
        assert (tmp_path / f"fallback{suffix}").read_bytes() == (tmp_path / f"hf{suffix}").read_bytes(), suffix
    assert [source["engine"] for source in meta["sources"]] == ["fastokens", "hf"]
    assert meta["engine"]["mismatches"] == 1
    assert "planted.jsonl:201: fast encoder disagrees" in meta["sources"][1]["mismatch"]
    assert said[-1].endswith("; 1 of 2 inputs re-encoded with Hugging Face after a mismatch")


def test_a_planted_mismatch_near_a_rare_code_point_is_caught_in_an_excerpt(tmp_path, monkeypatch):
    plant_mismatch(monkeypatch, "🙂")
    lines = [json.dumps({"text": f"ordinary text {i}"}).encode() for i in range(100)]
    lines[49] = json.dumps({"text": "a long first paragraph\nwith a smile 🙂 in its second line\nand more"}).encode()
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    with pytest.raises(EngineMismatch, match=rf"{source}:50: fast encoder disagrees with the tokenizer at token 2 "
                                             rf"of an excerpt \(characters 0-\d+\) around a rare code point"):
        pack([str(source)], str(tmp_path / "x.pbin"), PackSettings(str(GPT2), check_fraction=0.0, engine="fastokens"),
             log=lambda message: None)


def test_a_line_over_max_line_bytes_is_a_bad_line_that_is_never_read(tmp_path):
    lines = [b'{"text": "short"}', json.dumps({"text": "long " * 2000}).encode(), b'{"text": "short again"}']
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    result = run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--max-line-bytes", "1000", "-o",
                           tmp_path / "x.pbin", check=False)
    assert result.returncode == 1
    assert f"{source}:2: line of 10012 bytes, over max_line_bytes (1000)" in result.stderr
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--max-line-bytes", "1000", "--on-bad-line", "skip",
                  "-o", tmp_path / "x.pbin")
    assert PbinFile(tmp_path / "x.pbin").num_documents == 2


@pytest.mark.parametrize("tokenizer, vocab_size", [(GPT2, 50257), (TEKKEN, 131072), (MINILM, 30522)],
                         ids=["gpt2", "tekken", "minilm"])
def test_the_vocabulary_size_read_from_the_file_is_the_tokenizers_own(tokenizer, vocab_size):
    reference = Tokenizer.from_file(str(tokenizer)).get_vocab(with_added_tokens=True)
    assert load_tokenizer(tokenizer).vocab_size == max(reference.values()) + 1 == vocab_size


CONTROL_STRINGS = "[INST] </s> <s> <SPECIAL_12> <|endoftext|>"


def chat_lines(count: int) -> list[bytes]:
    """Conversations whose messages hold control-token strings (which must stay text) and rare code points."""
    texts = [f"question {i}: what is {CONTROL_STRINGS}?" if i % 3 == 0 else f"plain question {i} 👩‍💻 e\u0301"
             for i in range(count)]
    return [json.dumps({"role": "system", "conversations": [{"from": "human", "value": text},
                                                           {"from": "gpt", "value": f"answer {i} " * (i % 7 + 1)}]},
                       ensure_ascii=False).encode() for i, text in enumerate(texts)]


def sft_config(source, engine: str, check_fraction: float = 0.01) -> dict:
    return {"tokenizers": {"tekken": {"path": str(TEKKEN), "engine": engine, "check_fraction": check_fraction}},
            "sft": {"chat": {"inputs": [str(source)], "tokenizer": "tekken",
                             "special_tokens": {"bos_token": "<s>", "eos_token": "</s>"},
                             "message_construction": ["role", "conversations"], "seq_length": 256}}}


@pytest.mark.slow
def test_sft_with_the_fast_engine_writes_the_bytes_of_hugging_face_and_keeps_control_strings_as_text(tmp_path):
    from tokenmill.training.sft_datasets import InstructionDataset, loss_mask_path
    from tokenmill.pack.sft import write_sft

    source = write_jsonl_bytes(tmp_path / "chat.jsonl", chat_lines(120))
    metas = {engine: write_sft("chat", sft_config(source, engine, 1.0), tmp_path / f"{engine}.pbin")
             for engine in ("hf", "fastokens")}
    for suffix in (".pbin", ".loss_mask.pbin"):
        assert (tmp_path / f"hf{suffix}").read_bytes() == (tmp_path / f"fastokens{suffix}").read_bytes()
    assert loss_mask_path(tmp_path / "hf.pbin").name == "hf.loss_mask.pbin"
    engine = metas["fastokens"]["engine"]
    assert (engine["name"], engine["checked_messages"]) == ("fastokens", 360)
    assert (metas["hf"]["engine"]["name"], metas["hf"]["engine"]["checked_messages"]) == ("hf", 0)

    dataset = InstructionDataset(source, TEKKEN, [".role", ".conversations"], {"bos_token": "<s>", "eos_token": "</s>"},
                                 engine="fastokens", check_fraction=1.0)
    question = dataset[0]["pieces"]["conversations"][0].ids
    assert dataset.tokenizer.decode(question, skip_special_tokens=False) == f"question 0: what is {CONTROL_STRINGS}?"
    assert not set(question) & set(dataset.special_ids.values())  # no control id came from the data
    import pickle

    copy = pickle.loads(pickle.dumps(dataset))  # a DataLoader worker's: its own engine, control strings still text
    assert copy.encoder.name == "fastokens" and copy.encoder.split_special_tokens
    assert copy[0]["pieces"]["conversations"][0].ids == question


@pytest.mark.slow
def test_sft_and_the_on_access_datasets_stop_at_a_planted_mismatch(tmp_path, monkeypatch):
    import pickle

    from tokenmill.training.datasets import MemMapDataset
    from tokenmill.pack.sft import write_sft

    plant_mismatch(monkeypatch, "question 9:")  # line 10's first message
    source = write_jsonl_bytes(tmp_path / "chat.jsonl", chat_lines(30))
    with pytest.raises(EngineMismatch, match=rf"{source}:10: fast encoder disagrees with the tokenizer at token 2 "):
        write_sft("chat", sft_config(source, "fastokens", 1.0), tmp_path / "x.pbin")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["chat.jsonl"]

    lines = write_jsonl_bytes(tmp_path / "lines.jsonl",
                              [json.dumps({"text": f"question {i}: {CONTROL_STRINGS}"}).encode() for i in range(12)])
    fast = MemMapDataset(lines, TEKKEN, engine="fastokens", check_fraction=0.0)
    hf = MemMapDataset(lines, TEKKEN)
    assert np.array_equal(fast[3], hf[3])  # a control string in text: always proven, and equal
    with pytest.raises(EngineMismatch, match=rf"{lines}:10: fast encoder disagrees with the tokenizer at token 2 "):
        fast[9]
    copy = pickle.loads(pickle.dumps(fast))  # as a DataLoader worker receives it: it loads its own engine
    assert copy.encoder.name == "fastokens" and np.array_equal(copy[4], hf[4])


@pytest.mark.slow
def test_a_tokenizer_file_replaced_in_place_is_never_encoded_with_its_old_contents(tmp_path):
    import shutil

    from tokenmill.training.datasets import MemMapDataset

    lines = write_jsonl_bytes(tmp_path / "lines.jsonl", [json.dumps({"text": f"line {i}: café 🙂"}).encode()
                                                         for i in range(5)])
    swapped = tmp_path / "tokenizer.json"
    shutil.copy(GPT2, swapped)
    before = MemMapDataset(lines, swapped, engine="fastokens", check_fraction=0.0)
    assert np.array_equal(before[2], MemMapDataset(lines, GPT2)[2])

    shutil.copy(TEKKEN, swapped)  # same path, other bytes: fastokens' earlier load must not serve it
    after = MemMapDataset(lines, swapped, engine="fastokens", check_fraction=0.0)
    assert np.array_equal(after[2], MemMapDataset(lines, TEKKEN)[2])

    # A file that changes between the HF load and fastokens' (a job's tokenizer overwritten under it)
    changing = tmp_path / "changing.json"
    changing.write_text(json.dumps(json.loads(GPT2.read_text())))  # bytes no fastokens load has seen
    info = load_tokenizer(changing)
    shutil.copy(TEKKEN, changing)
    with pytest.raises(TokenmillError, match=rf"{changing}: changed since it was loaded"):
        Encoder(info, "fastokens").encode_batch(["x"], add_special_tokens=False)


def test_one_choice_of_engine_for_pack_sft_and_the_datasets(without_gigatoken):
    from tokenmill.tokenization.engine import FAST_ENGINE_PAYS_BYTES, choose_engine

    gpt2, bert = load_tokenizer(GPT2), load_tokenizer(MINILM)
    assert choose_engine("hf", gpt2) == ("hf", "engine hf asked for")
    assert choose_engine("auto", gpt2, FAST_ENGINE_PAYS_BYTES) == ("fastokens", "engine auto: fastokens")
    assert choose_engine("auto", gpt2, 500_000, ", compressed input counted 4x") == (
        "hf", "engine auto: HF, as this input (~0.50 MB of text, compressed input counted 4x) takes it less time "
              "than loading fastokens would")
    assert choose_engine("auto", None, 500_000)[0] == "hf"  # decided before the tokenizer is loaded
    assert choose_engine("auto", bert) == ("hf", "engine auto: HF, as fastokens is not proven for this tokenizer "
                                                 "(model 'WordPiece' is not BPE)")
    assert choose_engine("fastokens", bert, 10) == ("fastokens", "engine fastokens: fastokens (not proven: model "
                                                                 "'WordPiece' is not BPE)")
    assert choose_engine("auto", gpt2)[0] == choose_engine("auto")[0] == "fastokens"  # the datasets: size unknown
    with pytest.raises(TokenmillError, match="engine must be one of"):
        choose_engine("fast", gpt2)


def test_a_mismatch_names_the_reference_library_it_was_proven_against(tmp_path, monkeypatch):
    """For Megatron's SentencePiece types the truth is ``sentencepiece``'s ids, and the error says so."""
    settings = PackSettings(str(DATA / "mistral-v1.tokenizer.model"), eod="</s>", engine="fastokens",
                            check_fraction=1.0, tokenizer_type="Llama2Tokenizer")
    plant_mismatch(monkeypatch, " ")
    with pytest.raises(EngineMismatch, match=r"fast encoder disagrees .* \(fastokens \d+, sentencepiece \d+\)$"):
        pack([str(MIXED_JSONL)], str(tmp_path / "x.pbin"), settings, log=lambda message: None)


def test_fastokens_is_refused_for_a_model_whose_control_spellings_it_reads_as_pieces(tmp_path, without_gigatoken):
    """On a small byte-fallback SentencePiece model fastokens reads the text ``</s>`` (and ``<s>``, ``<unk>``,
    ``<0x41>``) as the piece, where sentencepiece and Megatron encode the characters: one probe at the first batch
    refuses it, and auto takes Hugging Face (equal to sentencepiece there); with Mistral's model it is kept."""
    train_sentencepiece(tmp_path / "sp.model")
    info = load_tokenizer(TokenizerSpec(str(tmp_path / "sp.model"), "Llama2Tokenizer"))
    texts = ["a </s> b", "<0x41> and <unk>", "plain"]
    encoder = Encoder(info, "auto", input_bytes=1e9, fall_back=True)
    assert encoder.name == "fastokens"
    ids, lengths = encoder.encode_batch(texts, False)
    reference_ids, reference_lengths = info.encode_reference(texts, False)
    assert ids.tolist() == reference_ids.tolist() and lengths.tolist() == reference_lengths.tolist()
    assert encoder.name == "hf" and "it reads the text '<unk>' as that piece, which sentencepiece" in encoder.reason
    with pytest.raises(FastEngineUnavailable, match=r"sp.model: fastokens cannot load it \(it reads the text "
                                                    r"'<unk>' as that piece, which sentencepiece encodes as text\)"):
        Encoder(info, "fastokens").encode_batch(texts, False)
    mistral = load_tokenizer(TokenizerSpec(str(DATA / "mistral-v1.tokenizer.model"), "Llama2Tokenizer"))
    assert Encoder(mistral, "fastokens").encode_batch(texts, False)[1].tolist() == \
        mistral.encode_reference(texts, False)[1].tolist()


def test_the_proof_checks_every_control_spelling_of_a_sentencepiece_model():
    mistral = load_tokenizer(TokenizerSpec(str(DATA / "mistral-v1.tokenizer.model"), "Llama2Tokenizer"))
    assert {"<s>", "</s>", "<unk>", "<0x41>"} <= set(mistral.added_tokens())


# ---------------------------------------------------------------------------------------------
# gigatoken, the third engine (the extra tokenmill[gigatoken]): the same proof, the same bytes.

needs_gigatoken = pytest.mark.skipif(not gigatoken_installed(), reason="the gigatoken extra is not installed")


def corpus_texts() -> list[str]:
    """Every text of the test corpora (tests/data/mixed.jsonl, the demo corpus, Megatron's types' file) and the
    adversarial texts but their 20 MB line."""
    texts = adversarial_texts()[:-1]
    for path in (MIXED_JSONL, DEMO_JSONL, DATA / "megatron_types.jsonl"):
        for line in path.read_bytes().splitlines():
            try:
                text = json.loads(line).get("text")
            except (ValueError, AttributeError):
                continue  # the bad lines these files hold on purpose
            if isinstance(text, str):
                texts.append(text)
    return texts


@needs_gigatoken
@pytest.mark.parametrize("family", ["gpt2", "tekken", "sentencepiece", "llama2", "mistral"])
def test_gigatoken_gives_the_reference_ids_of_every_text_of_the_test_corpora(tmp_path, family):
    """Byte-identical ids across engines: gigatoken's flat ids and lengths equal the reference library's
    (Hugging Face, or sentencepiece for Megatron's SentencePiece types) on every text, and fastokens' where it
    is proven for the tokenizer."""
    if family in ("sentencepiece", "llama2"):
        train_sentencepiece(tmp_path / "sp.model")
    source = {"gpt2": GPT2, "tekken": TEKKEN,
              "sentencepiece": TokenizerSpec(str(tmp_path / "sp.model"), "SentencePieceTokenizer"),
              "llama2": TokenizerSpec(str(tmp_path / "sp.model"), "Llama2Tokenizer"),
              "mistral": TokenizerSpec(str(DATA / "mistral-v1.tokenizer.model"), "Llama2Tokenizer")}[family]
    info = load_tokenizer(source)
    texts = corpus_texts()
    assert len(texts) > 1000
    reference_ids, reference_lengths = info.encode_reference(texts, False)
    encoder = Encoder(info, "gigatoken")
    assert (encoder.name, encoder.reason) == ("gigatoken", "engine gigatoken")
    ids, lengths = encoder.encode_batch(texts, False)
    assert ids.dtype == np.uint32 and lengths.dtype == np.int64
    assert np.array_equal(lengths, reference_lengths) and np.array_equal(ids, reference_ids)
    pooled_ids, pooled_lengths = Encoder(info, "gigatoken", parallel=True).encode_batch(texts, False)  # its pool
    assert np.array_equal(pooled_lengths, lengths) and np.array_equal(pooled_ids, ids)
    assert "gigatoken" in encoder.versions()
    if family in ("gpt2", "tekken", "mistral"):  # fastokens is refused for the small model (its probes)
        fast_ids, fast_lengths = Encoder(info, "fastokens").encode_batch(texts, False)
        assert np.array_equal(fast_ids, ids) and np.array_equal(fast_lengths, lengths)
    auto = Encoder(info, "auto", input_bytes=1e9)  # where gigatoken was measured faster than fastokens
    assert (auto.name, auto.reason) == (("fastokens", "engine auto: fastokens, as gigatoken was not measured faster "
                                                      "on a tokenizer of another family (e.g. a Split regex, as "
                                                      "Tekken's)") if family == "tekken"
                                        else ("gigatoken", "engine auto: gigatoken"))


@needs_gigatoken
@pytest.mark.slow
@pytest.mark.parametrize("tokenizer, eod", [(GPT2, GPT2_EOD), (TEKKEN, "</s>")], ids=["gpt2", "tekken"])
def test_pack_writes_the_same_bytes_whatever_the_engine(tmp_path, monkeypatch, tokenizer, eod):
    """.pbin, Megatron's .bin/.idx and the skipped lines of the test corpus (bad lines included), the same
    with every engine, two threads and small batches (so that batches are encoded side by side)."""
    monkeypatch.setattr("tokenmill.tokenization.engine.FAST_ENGINE_PAYS_BYTES", 0)  # auto: a fast engine at 0.6 MB
    source = tmp_path / "corpus.jsonl"
    source.write_bytes(MIXED_JSONL.read_bytes() + b"not json\n" + DEMO_JSONL.read_bytes()[:600_000].rsplit(b"\n", 1)[0]
                       + b"\n{\"no text\": 1}\n")
    metas = {}
    for engine in ("hf", "fastokens", "gigatoken", "auto"):
        metas[engine] = pack([str(source)], str(tmp_path / f"{engine}.pbin"),
                             PackSettings(str(tokenizer), eod=eod, engine=engine, on_bad_line="skip", workers=2,
                                          batch_bytes=64 << 10, check_fraction=0.05),
                             log=lambda message: None, megatron_prefix=str(tmp_path / engine))
    assert metas["auto"]["engine"]["name"] == ("gigatoken" if tokenizer == GPT2 else "fastokens")
    assert metas["gigatoken"]["engine"]["checked_documents"] > 0
    for engine in ("fastokens", "gigatoken", "auto"):
        for suffix in (".pbin", ".bin", ".idx"):
            assert (tmp_path / f"{engine}{suffix}").read_bytes() == (tmp_path / f"hf{suffix}").read_bytes()
        assert metas[engine]["skipped"] == metas["hf"]["skipped"] and sum(metas["hf"]["skipped"].values()) == 2


@needs_gigatoken
def test_auto_takes_fastokens_where_gigatoken_cannot_load_the_tokenizer_and_by_name_it_is_one_line(tmp_path,
                                                                                                     monkeypatch):
    import gigatoken

    def refuse(data):
        raise ValueError("unsupported pre-tokenizer\nsecond line")

    monkeypatch.setattr(gigatoken.Tokenizer, "from_json", staticmethod(refuse))
    path = tmp_path / "gpt2.tokenizer.json"
    path.write_text(json.dumps(json.loads(GPT2.read_text()), indent=1))  # bytes no gigatoken load has seen
    info, texts = load_tokenizer(path), ["hello world", "<|endoftext|> and more"]
    encoder = Encoder(info, "auto", fall_back=True)
    assert encoder.name == "gigatoken"
    ids, lengths = encoder.encode_batch(texts, False)
    assert np.array_equal(ids, info.encode_reference(texts, False)[0])
    assert (encoder.name, encoder.reason) == (
        "fastokens", "engine auto: fastokens, as gigatoken cannot load this tokenizer (unsupported pre-tokenizer)")
    with pytest.raises(FastEngineUnavailable, match=r"gpt2.tokenizer.json: gigatoken cannot load it \(unsupported "
                                                    r"pre-tokenizer\); use engine auto or fastokens$"):
        Encoder(info, "gigatoken").encode_batch(texts, False)
    # pack: the input is packed again from its start with fastokens, the same bytes as HF's (a small input with
    # two threads: no 1 MB file to tokenize, the same code path)
    monkeypatch.setattr("tokenmill.tokenization.engine.FAST_ENGINE_PAYS_BYTES", 0)
    settings = dict(eod=GPT2_EOD, workers=2, batch_bytes=4096, check_fraction=0.1)
    meta = pack([str(MIXED_JSONL)], str(tmp_path / "auto.pbin"), PackSettings(str(path), **settings),
                log=lambda message: None)
    pack([str(MIXED_JSONL)], str(tmp_path / "hf.pbin"), PackSettings(str(path), engine="hf", **settings),
         log=lambda message: None)
    assert (tmp_path / "auto.pbin").read_bytes() == (tmp_path / "hf.pbin").read_bytes()
    assert meta["engine"]["name"] == meta["sources"][0]["engine"] == "fastokens"
    assert "gigatoken cannot load this tokenizer" in meta["engine"]["reason"]


def test_gigatoken_is_never_taken_for_a_post_processor_or_conversations_and_asked_for_it_is_one_line(monkeypatch):
    from tokenmill.tokenization.engine import choose_engine, gigatoken_refusal

    gpt2 = load_tokenizer(GPT2)
    assert gigatoken_refusal(gpt2) is None
    assert gigatoken_refusal(gpt2, split_special_tokens=True) == (
        "it cannot keep control-token strings in text as text (split_special_tokens)")
    if gigatoken_installed():
        assert choose_engine("auto", gpt2, split_special_tokens=True) == (
            "fastokens", "engine auto: fastokens, as gigatoken is not for this tokenizer (it cannot keep "
                         "control-token strings in text as text (split_special_tokens))")
        with pytest.raises(TokenmillError, match=r"gpt2.tokenizer.json: engine gigatoken is not proven for this "
                                                  r"tokenizer: it cannot keep control-token strings"):
            choose_engine("gigatoken", gpt2, split_special_tokens=True)
    bos = dataclasses.replace(gpt2, post_processor_ids=((50256,), ()))
    assert gigatoken_refusal(bos) == "it applies no post-processor, and this one adds the ids ((50256,), ())"
    monkeypatch.setattr("tokenmill.tokenization.engine.gigatoken_installed", lambda: False)
    assert choose_engine("auto", gpt2) == ("fastokens", "engine auto: fastokens")
    with pytest.raises(TokenmillError, match=r"^engine gigatoken: the gigatoken package is not installed "
                                             r"\(pip install 'tokenmill\[gigatoken\]'\)$"):
        choose_engine("gigatoken", gpt2)


@needs_gigatoken
def test_the_engine_preloaded_is_the_one_auto_will_choose_for_each_family(tmp_path):
    from tokenmill.tokenization.engine import gigatoken_family, preferred_fast_engine

    train_sentencepiece(tmp_path / "sp.model")
    cases = {GPT2: "gigatoken", TEKKEN: "fastokens", MINILM: "fastokens",
             TokenizerSpec(str(tmp_path / "sp.model"), "Llama2Tokenizer"): "gigatoken",
             TokenizerSpec(str(DATA / "mistral-v1.tokenizer.model"), "SentencePieceTokenizer"): "gigatoken"}
    for source, engine in cases.items():
        assert preferred_fast_engine("auto", source) == engine, source
        info = load_tokenizer(source)
        if info.fast_engine_refusal is None:
            assert Encoder(info, "auto", input_bytes=1e9).name == engine == ("gigatoken" if gigatoken_family(info)[1]
                                                                              else "fastokens")
    assert preferred_fast_engine("gigatoken", TEKKEN) == "gigatoken"
    assert preferred_fast_engine("fastokens") == "fastokens"


@needs_gigatoken
def test_waiting_for_the_fast_engine_returns_once_its_load_has_ended_and_is_a_no_op_without_one(tmp_path):
    from tokenmill.tokenization.engine import fast_engine_loading, preload_fast_engine, wait_for_fast_engine

    copy = tmp_path / "gpt2.tokenizer.json"  # a path of its own: its load is started here, not by another test
    copy.write_bytes(GPT2.read_bytes())
    preload_fast_engine(copy, "gigatoken")
    wait_for_fast_engine(copy)
    assert not fast_engine_loading(copy)
    wait_for_fast_engine(tmp_path / "never-loaded.json")
    broken = tmp_path / "broken.tokenizer.json"  # a load that fails: the wait ends, the failure is Encoder's to tell
    broken.write_text('{"model": {"type": "BPE"}}')
    preload_fast_engine(broken, "gigatoken")
    wait_for_fast_engine(broken)
    assert not fast_engine_loading(broken)
