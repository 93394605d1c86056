"""The old import paths of the documented API (issue 41 moved the modules into rooms; issue 53 renamed
``tokenmill.packing`` ``tokenmill.best_fit`` and ``tokenmill.formats.mmidx`` ``tokenmill.formats.bin_idx``) still
work: each is the moved module itself, so a name or a monkeypatch set through either path is seen through both,
and importing it warns once, pointing at the importing line."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from test_layers import DEPRECATED_ALIASES

MOVED = {"tokenmill.datasets": "tokenmill.training.datasets", "tokenmill.loader": "tokenmill.training.loader",
         "tokenmill.sft": "tokenmill.training.sft_datasets",
         "tokenmill.megatron_tokenizer": "tokenmill.megatron.job_tokenizer",
         "tokenmill.formats.mmidx": "tokenmill.formats.bin_idx",
         "tokenmill.packing.best_fit": "tokenmill.best_fit.obfd",
         **{f"tokenmill.packing.{name}": f"tokenmill.best_fit.{name}"
            for name in ("packed_index", "packed_blend", "sft_packing", "olmo_cache")}}


def test_every_deprecated_alias_is_tested():
    assert sorted(MOVED) == sorted(DEPRECATED_ALIASES)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_path_is_the_moved_module_and_warns(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    new = importlib.import_module(MOVED[old])
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {MOVED[old]}") as caught:
        __import__(old)  # as an import statement does (importlib.import_module would be the importer)
        module = sys.modules[old]
    parent, _, name = old.rpartition(".")
    assert module is new and getattr(sys.modules[parent], name) is new
    assert caught[0].filename == __file__  # the line that imported the old path
    name = next(name for name in new.__all__ if callable(getattr(new, name)))

    def planted(*args, **kwargs):
        return "planted"

    monkeypatch.setattr(f"{old}.{name}", planted)  # through the old path ...
    assert getattr(new, name) is planted  # ... seen through the new one
    monkeypatch.undo()
    monkeypatch.setattr(f"{MOVED[old]}.{name}", planted)
    assert getattr(sys.modules[old], name) is planted


def test_the_readme_s_old_imports_run_in_a_fresh_interpreter():
    code = ("from tokenmill.datasets import PackedMemMapDatasetContinuous, NanosetBuilder\n"
            "from tokenmill.loader import ResumableSampler, collate_samples\n"
            "from tokenmill.sft import InstructionDataset, InstructionCollator, PackedInstructionDataset\n"
            "from tokenmill.megatron_tokenizer import job_tokenizer_identifiers\n"
            "import tokenmill, tokenmill.training.datasets as new\n"
            "assert tokenmill.datasets is new\n")
    result = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("DeprecationWarning") == 4, result.stderr
