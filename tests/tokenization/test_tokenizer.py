"""Loading a tokenizer: parsed once per process and text, shared, and never changed by those who share it."""

import shutil

from conftest import GPT2, GPT2_EOD
from tokenmill.tokenization.engine import Encoder
from tokenmill.tokenization.tokenizer import check_eod_in_file, load_tokenizer


def test_a_copy_of_a_loaded_file_is_the_same_tokenizer_and_names_its_own_path(tmp_path):
    copy = shutil.copy(GPT2, tmp_path / "copy.tokenizer.json")
    first, second = load_tokenizer(GPT2, GPT2_EOD), load_tokenizer(copy, GPT2_EOD)
    assert second.tokenizer is first.tokenizer
    assert (second.path, second.sha256, second.eod_id) == (str(copy), first.sha256, 50256)
    assert check_eod_in_file(copy, GPT2_EOD) is True and check_eod_in_file(copy, "Ċ") is False


def test_a_conversation_encoder_reads_special_strings_as_text_without_changing_the_shared_tokenizer():
    pretraining = load_tokenizer(GPT2, GPT2_EOD)
    conversations = Encoder(load_tokenizer(GPT2, GPT2_EOD), "hf", split_special_tokens=True)
    text = f"a{GPT2_EOD}b"
    ids, _ = conversations.encode_batch([text], add_special_tokens=False)
    assert 50256 not in ids.tolist() and len(ids) > 3  # the EOD's spelling is seven tokens of text
    assert pretraining.tokenizer.encode(text, add_special_tokens=False).ids == [64, 50256, 65]
    assert load_tokenizer(GPT2, GPT2_EOD).tokenizer.encode_special_tokens is False


def test_a_file_with_truncation_and_padding_says_so_on_every_load(tmp_path):
    import json

    config = json.loads(GPT2.read_text())
    config["truncation"] = {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0}
    path = tmp_path / "truncating.tokenizer.json"
    path.write_text(json.dumps(config))
    for _ in range(2):
        info = load_tokenizer(path, GPT2_EOD)
        assert info.ignored_settings["truncation"]["max_length"] == 8
        assert len(info.tokenizer.encode("word " * 20).ids) > 8  # not truncated
