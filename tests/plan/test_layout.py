"""The layout (tokenmill.plan.layout): every output's path, and the way back from a path to its build."""

from __future__ import annotations

import os
from pathlib import Path

from tokenmill.config import default
from tokenmill.plan.layout import (CACHE_FOLDER, DATA_FOLDER, OUTPUT_FOLDERS, PACKED_FOLDER, RAW_FOLDER, STALE_FOLDER,
                                   build_of, cache_dir, cache_folder, formats_view, megatron_prefix, olmo_folder,
                                   packed_index_dir, packed_path, stale_path)


def test_a_file_of_the_layout_names_its_build_and_workflow_folder():
    assert build_of("data/packed/demo.pbin") == (Path("."), "demo")
    assert build_of("/x/y/data/megatron/demo.gpt2_text_document") == (Path("/x/y"), "demo.gpt2")
    assert build_of("data/megatron/demo_text_document.idx") == (Path("."), "demo")
    assert build_of("w/data/cache/demo/seq512_seed1234") == (Path("w"), "demo")
    for elsewhere in ("other/demo.pbin", "megatron/x_text_document", "data/cache/seq512_seed1234"):
        assert build_of(elsewhere) is None


def test_every_folder_lies_in_the_data_folder_and_a_stale_path_mirrors_its_place():
    assert all(folder.startswith(f"{DATA_FOLDER}/") for folder in (*OUTPUT_FOLDERS, STALE_FOLDER, RAW_FOLDER))
    assert {PACKED_FOLDER, CACHE_FOLDER} <= set(OUTPUT_FOLDERS) and RAW_FOLDER not in OUTPUT_FOLDERS
    assert os.path.dirname(packed_path("a")) == PACKED_FOLDER
    assert cache_dir("a", 512, 7) == f"{cache_folder('a')}/seq512_seed7" == "data/cache/a/seq512_seed7"
    assert packed_index_dir("a", 512, 7) == "data/cache/a/seq512_seed7_best_fit"
    assert stale_path("data/packed/b.shard3.pbin") == "data/stale/packed/b.shard3.pbin"


def test_the_schemas_job_path_defaults_are_the_layouts_folders():
    """sampling.megatron_path_prefix and olmo_path_prefix default to how a job in the working folder spells the
    layout's Megatron and OLMo folders (their own spelling in the schema: a config default, documented there)."""
    assert default("sampling.megatron_path_prefix") == os.path.dirname(megatron_prefix("a")) + "/"
    assert default("sampling.olmo_path_prefix") == os.path.dirname(olmo_folder("a")) + "/"


def test_a_verify_stamp_and_report_page_name_their_formats_unless_they_are_the_default():
    """Two configs making one build in different formats check and report it each under its own name: running them
    in turn reruns nothing. A dataset or SFT set name holds no "+"."""
    assert formats_view(["megatron", "pbin"], default("datasets.*.formats")) == ""
    assert formats_view(["pbin", "megatron", "datatrove"], default("datasets.*.formats")) == "+datatrove+megatron+pbin"
    assert formats_view(["pbin"], default("datasets.*.formats")) == "+pbin"
    assert formats_view(["pbin"], default("sft.*.formats")) == ""
    assert formats_view(["pbin", "olmo"], default("sft.*.formats")) == "+olmo+pbin"
