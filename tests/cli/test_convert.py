"""cli.convert: each conversion of a .pbin says in one line what it wrote, its documents and tokens those of
the .pbin, and hf-tokenizer-folder names the folder it wrote (the formats' bytes: tests/formats/)."""

import json

import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, run_tokenmill
from tokenmill.formats.pbin import PbinFile


@pytest.fixture(scope="module")
def mixed_pbin(tmp_path_factory) -> tuple:
    """mixed.jsonl packed with GPT-2, and its documents and tokens."""
    pbin = tmp_path_factory.mktemp("convert") / "mixed.pbin"
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", pbin)
    packed = PbinFile(pbin)
    return pbin, packed.num_documents, packed.num_tokens


def test_to_megatron_says_the_documents_tokens_and_dtype_it_wrote(mixed_pbin, tmp_path):
    pbin, documents, tokens = mixed_pbin
    result = run_tokenmill("to-megatron", pbin, "-o", tmp_path / "mixed_text_document")
    # GPT-2's 50,257 ids: uint16 here, 2-byte tokens in datatrove's .ds, uint16 OLMo parts
    assert result.stderr == f"{tmp_path / 'mixed_text_document'}: {documents} documents, {tokens} tokens as uint16\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mixed_text_document.bin", "mixed_text_document.idx"]


def test_to_datatrove_says_the_ds_file_it_wrote_with_its_documents_and_token_size(mixed_pbin, tmp_path):
    pbin, documents, tokens = mixed_pbin
    result = run_tokenmill("to-datatrove", pbin, "-o", tmp_path / "mixed")
    assert result.stderr == f"{tmp_path / 'mixed.ds'}: {documents} documents, {tokens} tokens of 2 bytes\n"
    assert {"mixed.ds", "mixed.ds.index", "mixed.ds.metadata"} <= {path.name for path in tmp_path.iterdir()}


def test_to_olmo_says_its_parts_documents_and_tokens_on_stdout(mixed_pbin, tmp_path):
    pbin, documents, tokens = mixed_pbin
    result = run_tokenmill("to-olmo", pbin, "-o", tmp_path / "parts")
    assert result.stdout == f"{tmp_path / 'parts'}: 1 part(s), {documents} documents, {tokens} tokens (uint16)\n"
    assert (tmp_path / "parts" / "part-00000.npy").is_file()


def test_hf_tokenizer_folder_names_the_folder_and_the_eos_token_it_wrote(tmp_path):
    result = run_tokenmill("hf-tokenizer-folder", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "tok")
    assert result.stdout == (f"{tmp_path / 'tok'}: tokenizer.json and tokenizer_config.json "
                             f"(eos_token {GPT2_EOD!r})\n")
    assert json.loads((tmp_path / "tok" / "tokenizer_config.json").read_text())["eos_token"] == GPT2_EOD
