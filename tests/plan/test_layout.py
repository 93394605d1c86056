"""The layout (tokenmill.plan.layout): every output's path, and the way back from a path to its build."""

from __future__ import annotations

from pathlib import Path




def test_a_file_of_the_layout_names_its_build_and_workflow_folder():
    from tokenmill.plan import build_of

    assert build_of("data/packed/demo.pbin") == (Path("."), "demo")
    assert build_of("/x/y/data/megatron/demo.gpt2_text_document") == (Path("/x/y"), "demo.gpt2")
    assert build_of("data/megatron/demo_text_document.idx") == (Path("."), "demo")
    assert build_of("w/data/cache/demo/seq512_seed1234") == (Path("w"), "demo")
    for elsewhere in ("other/demo.pbin", "megatron/x_text_document", "data/cache/seq512_seed1234"):
        assert build_of(elsewhere) is None
