"""The one table of format kinds (tokenmill.formats.kinds): the config's schema, the format versions and the pack
command agree with it, and no module spells a set of format names of its own."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from tokenmill import FORMAT_VERSIONS
from tokenmill.config import schema
from tokenmill.formats.kinds import (BEST_FIT_FORMATS, EOS_SCANNED, MADE_FROM_PBIN, OUTPUT_FORMATS, SOURCE_KINDS,
                                     TOKENS_READ_IN, source_unit)


def test_the_table_names_the_formats_the_config_takes_with_their_versions_and_pack_options():
    datasets = schema()["properties"]["datasets"]["additionalProperties"]["properties"]
    sft = schema()["properties"]["sft"]["additionalProperties"]["properties"]
    assert datasets["formats"]["items"]["enum"] == list(OUTPUT_FORMATS)
    assert set(sft["formats"]["items"]["enum"]) <= set(OUTPUT_FORMATS)
    assert all(kind.version_key in FORMAT_VERSIONS for kind in OUTPUT_FORMATS.values())
    from tokenmill.cli import build_parser

    pack = build_parser().parse_args(["pack", "x.jsonl", "--tokenizer", "t.json", "--eod", "!",
                                      *(part for kind in OUTPUT_FORMATS.values() for part in (kind.pack_flag, "out"))])
    assert all(getattr(pack, kind.pack_flag.lstrip("-").replace("-", "_"), None) == "out"
               for kind in OUTPUT_FORMATS.values() if kind.pack_flag != "-o")


def test_the_sets_drawn_from_the_table():
    assert MADE_FROM_PBIN == {"megatron", "datatrove", "olmo"}
    assert EOS_SCANNED == {"datatrove", "olmo"} and BEST_FIT_FORMATS == {"megatron", "olmo"}
    assert TOKENS_READ_IN == {"megatron", "pbin"} and None in SOURCE_KINDS


@pytest.mark.parametrize("kinds, unit", [({None}, "line"), ({"parquet"}, "row"), ({"pbin"}, "document"),
                                         ({"megatron", None}, "document"), ({"parquet", None}, "row"),
                                         ({"unknown"}, "line")])
def test_a_sources_documents_are_numbered_by_its_kind(kinds, unit):
    assert source_unit(kinds) == unit


def test_no_module_spells_a_set_of_format_names_of_its_own():
    name = r'"(?:pbin|megatron|datatrove|olmo)"'
    spelled = re.compile(rf"[{{(\[]\s*{name}\s*,\s*{name}")
    found = [f"{path.relative_to(REPO)}:{number}" for path in sorted((REPO / "src/tokenmill").rglob("*.py"))
             if path.name != "kinds.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if spelled.search(line)]
    assert found == []
