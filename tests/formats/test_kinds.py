"""The one table of format kinds (tokenmill.formats.kinds): the config's schema, the format versions and the pack
command agree with it, and no module spells a set of format names of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from tokenmill import FORMAT_VERSIONS
from tokenmill.config import schema
from tokenmill.errors import TokenmillError
from tokenmill.formats.kinds import (BEST_FIT_FORMATS, EOS_SCANNED, MADE_FROM_PBIN, OUTPUT_FORMATS, SAMPLED,
                                     SOURCE_KINDS, TOKENS_READ_IN, OutputFormat, format_of, formats_of, source_unit)
from tokenmill.formats.pbin import PbinFile, PbinWriter


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
    assert SAMPLED == {"megatron"}


def test_each_row_names_its_files_as_the_layout_spells_them_and_the_converted_ones_carry_every_hook():
    from tokenmill.plan.layout import format_files, format_named_path, part_path

    assert [format_files(kind, "b") for kind in OUTPUT_FORMATS.values()] == [  # DESIGN.md's tree
        ["data/packed/b.pbin", "data/packed/b.pbin.meta.json"],
        ["data/megatron/b_text_document.bin", "data/megatron/b_text_document.idx"],
        ["data/datatrove/b/b.ds", "data/datatrove/b/b.ds.index", "data/datatrove/b/b.ds.metadata"], ["data/olmo/b"]]
    assert [format_named_path(kind, "b") for kind in OUTPUT_FORMATS.values()] == [
        "data/packed/b.pbin", "data/megatron/b_text_document", "data/datatrove/b/b.ds", "data/olmo/b"]
    assert [part_path(kind, "b.part0") for kind in OUTPUT_FORMATS.values() if kind.in_pack_pass] == [
        "data/parts/b.part0.pbin", "data/parts/b.part0_text_document"]
    assert [kind.name for kind in formats_of(["olmo", "megatron"])] == ["pbin", "megatron", "olmo"]  # the .pbin's too
    for kind in OUTPUT_FORMATS.values():
        hooks = (kind.check, kind.made_from, kind.describe)
        assert all(hooks) if kind.made_from_pbin else not any(hooks)  # (the .pbin's: verify's and the views' own)
        assert (kind.convert is None) == (not kind.made_from_pbin)


def test_a_path_given_to_verify_or_inspect_is_known_by_its_row(tmp_path):
    from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder

    prefix = tmp_path / "m_text_document"
    with MMapIndexedDatasetBuilder(prefix, np.uint16) as builder:
        builder.add_document(np.array([1, 2, 3]), [3])
    (tmp_path / "raw.idx").write_bytes(b"not Megatron's magic")  # a raw line index is no output format's
    assert [kind.name if (kind := format_of(path)) else None
            for path in (f"{prefix}.bin", f"{prefix}.idx", prefix, tmp_path / "x.pbin", tmp_path / "d/x.ds.index",
                         tmp_path, tmp_path / "raw.idx")] == ["megatron", "megatron", "megatron", "pbin", "datatrove",
                                                               None, None]


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


# ---- A toy format: its module (below) plus its row, and the planner, verify and inspect take it up -------------

def _toy_path(name: Path) -> Path:
    return Path(f"{name}.toy") if not str(name).endswith(".toy") else Path(name)


def _toy_convert(pbin_path: Path, name: Path) -> dict:
    """The toy format: a .pbin's documents as one JSON list of lists of ids."""
    pbin = PbinFile(pbin_path)
    documents = [pbin.document(i).tolist() for i in range(pbin.num_documents)]
    _toy_path(name).write_text(json.dumps(documents))
    return {"documents": len(documents)}


def _toy_documents(path: Path) -> list[list[int]]:
    try:
        documents = json.loads(_toy_path(path).read_text())
    except (OSError, ValueError) as exc:
        raise TokenmillError(f"{path}: not a toy file ({exc})") from None
    return documents


def _toy_check(path: Path) -> list[str]:
    documents = _toy_documents(path)
    return [] if all(isinstance(document, list) for document in documents) else [f"{path}: not a list of lists"]


def _toy_made_from(pbin_path: Path, path: Path) -> list[str]:
    pbin, documents = PbinFile(pbin_path), _toy_documents(path)
    return [f"{path}: document {i} is not {pbin_path}'s" for i, document in enumerate(documents)
            if document != pbin.document(i).tolist()]


TOY = OutputFormat("toy", "pbin", "--toy", made_from_pbin=True, eos_scanned=False, best_fit=False, folder="toy",
                   stem="{build}/{build}", files=(".toy",), named_by=".toy", in_pack_pass=False, sampled=False,
                   same_documents=False, summary="toy {folder}/",
                   recognises=lambda path: str(path).endswith(".toy") and Path(path).is_file(), check=_toy_check,
                   made_from=_toy_made_from, describe=lambda path: [f"toy: {len(_toy_documents(path))} documents"],
                   document=lambda path, i: np.array(_toy_documents(path)[i]), convert=_toy_convert)


@pytest.fixture
def toy_format(monkeypatch):
    monkeypatch.setitem(OUTPUT_FORMATS, "toy", TOY)
    return TOY


def test_a_toy_format_in_one_module_and_its_row_is_planned_verified_and_inspected(toy_format, plan_folder):
    from tokenmill.config import validate_config
    from tokenmill.plan import Plan
    from tokenmill.verify.checks import made_from_problems, verify
    from tokenmill.views.inspect_file import describe, show_document

    config = validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
                              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}},
                              "sampling": {"seq_lengths": [512], "seeds": [1]}}, "my.yaml")
    config["datasets"]["a"]["formats"] = ["pbin", "toy"]  # (the schema's list is the shipped formats')
    plan = Plan(config)
    assert plan.outputs.built_files("a") == ["data/packed/a.pbin", "data/packed/a.pbin.meta.json", "data/toy/a/a.toy"]
    assert "data/toy/a/a.toy" in plan.outputs.all_targets() and plan.outputs.cache_dirs("a") == []
    assert plan.commands.verify_options("a")[-2:] == ["data/packed/a.pbin", "data/toy/a/a.toy"]
    assert "--made-from" in plan.commands.verify_options("a")
    assert plan.commands.pack_outputs("a") == ["-o", "data/packed/a.pbin"]  # converted, not in pack's pass
    assert "data/toy/a/a.toy" in plan.commands.output_identities()

    pbin = plan_folder / "a.pbin"
    with PbinWriter(pbin, 4) as writer:
        writer.write(np.array([5, 6, 7, 8, 9]), np.array([2, 3]))
    (plan_folder / "a.pbin.meta.json").write_text(json.dumps({"tokenizer": {"vocab_size": 50257}}))
    toy_format.convert(pbin, plan_folder / "a")
    toy = plan_folder / "a.toy"
    assert verify(toy) == [] and made_from_problems(pbin, [pbin, toy]) == []
    assert describe(toy) == ["toy: 2 documents"]
    assert show_document(toy, 1, id_field="")[:2] == ["document 1: 3 tokens", "ids: [7, 8, 9]"]
    toy.write_text("[[5, 6], [7, 8, 0]]")
    assert made_from_problems(pbin, [toy]) == [f"{toy}: document 1 is not {pbin}'s"]
