"""The config (tokenmill.config): the schema's defaults, its one copy in workflow/, misspelt keys named."""

from __future__ import annotations


import pytest

from conftest import REPO
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError


def test_a_misspelt_key_names_its_path_and_the_nearest_valid_key():
    config = {"tokenizers": {"gpt2": {"path": "x"}},
              "datasets": {"demo": {"inputs": ["x"], "tokenizer": "gpt2", "on_bad_lines": "skip"}}}
    with pytest.raises(TokenmillError, match="unknown key 'on_bad_lines'") as error:
        validate_config(config, "my.yaml")
    assert str(error.value) == "my.yaml: datasets.demo: unknown key 'on_bad_lines' (did you mean 'on_bad_line'?)"


def test_an_unquoted_yaml_date_is_named_and_told_to_be_quoted():
    import yaml

    config = yaml.safe_load("tokenizers: {t: {path: x}}\nsft: {chat: {inputs: [x], tokenizer: t, chat_template: "
                            "tokenizer, seq_length: 8, template_date: 2026-01-31}}")
    with pytest.raises(TokenmillError) as error:
        validate_config(config, "my.yaml")
    assert str(error.value) == "my.yaml: sft.chat.template_date: 2026-01-31 is a YAML date, not a string: quote it"
    config["sft"]["chat"]["template_date"] = "2026-01-31"
    assert validate_config(config, "my.yaml")["sft"]["chat"]["template_date"] == "2026-01-31"


def test_defaults_come_from_the_schema():
    config = validate_config({"tokenizers": {"t": {"path": "x"}},
                              "datasets": {"d": {"inputs": ["x"], "tokenizer": "t"}}}, "my.yaml")
    assert config["datasets"]["d"]["on_bad_line"] == "error" and config["datasets"]["d"]["text"] == ".text"
    assert config["tokenizers"]["t"]["engine"] == "auto" and config["sampling"]["split"] == "969,30,1"
    assert config["keep_parts"] is True and config["blends"] == {}


def test_the_workflow_schema_is_a_real_file_equal_to_the_package_schema():
    workflow_copy = REPO / "workflow/schemas/config.schema.yaml"
    assert not workflow_copy.is_symlink()  # a copy of workflow/ without -L (rsync, cluster staging) must work
    assert workflow_copy.read_bytes() == (REPO / "src/tokenmill/schemas/config.schema.yaml").read_bytes()


def test_the_cli_and_the_library_take_their_defaults_from_the_config_schema():
    from tokenmill.cli import build_parser
    from tokenmill.config import default, schema
    from tokenmill.pack.pretraining import PackSettings

    datasets = schema()["properties"]["datasets"]["additionalProperties"]["properties"]
    tokenizers = schema()["properties"]["tokenizers"]["additionalProperties"]["properties"]
    assert default("datasets.*.text") == datasets["text"]["default"] == ".text"
    pack = build_parser().parse_args(["pack", "x.jsonl", "--tokenizer", "t.json", "--eod", "!"])
    settings = PackSettings("t.json")
    for option, key in (("jq", "datasets.*.text"), ("on_bad_line", "datasets.*.on_bad_line"),
                        ("max_line_bytes", "datasets.*.max_line_bytes"), ("engine", "tokenizers.*.engine"),
                        ("check_fraction", "tokenizers.*.check_fraction"),
                        ("on_mismatch", "tokenizers.*.on_mismatch")):
        *_, name = key.split(".")
        schema_default = (datasets if key.startswith("datasets") else tokenizers)[name]["default"]
        assert getattr(pack, option) == getattr(settings, "text" if option == "jq" else option) == schema_default
    sample_index = build_parser().parse_args(["sample-index", "p", "-o", "c", "--seq-length", "8", "--seed", "1",
                                              "--epochs", "1", "--vocab-size", "8"])
    assert sample_index.split == schema()["properties"]["sampling"]["properties"]["split"]["default"]
    with pytest.raises(KeyError, match="no_such_key"):
        default("datasets.*.no_such_key")
