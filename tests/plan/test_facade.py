"""The build plan as the workflow holds it (tokenmill.plan.facade.Plan): its three objects over one set of units."""

from __future__ import annotations

import yaml

from conftest import REPO, plan_of
from tokenmill.config import validate_config
from tokenmill.plan import Plan


def test_the_demo_config_plans_the_demo(monkeypatch):
    monkeypatch.chdir(REPO)
    plan = Plan(validate_config(yaml.safe_load((REPO / "config/config.yaml").read_text()), "config/config.yaml"))
    assert list(plan.units.builds) == ["demo"]
    assert plan.outputs.cache_dirs("demo") == ["data/cache/demo/seq512_seed1234", "data/cache/demo/seq2048_seed1234"]


def test_the_plan_is_three_objects_over_one_set_of_units_and_forwards_no_call(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"]})
    assert plan.outputs.units is plan.units and plan.commands.units is plan.units
    assert plan.commands.outputs is plan.outputs
    assert [name for name in vars(Plan) if not name.startswith("__")] == []  # no method of its own: ask the one
    assert plan.outputs.all_targets()[:2] == ["data/index/a.idx", "data/packed/a.pbin"]
    assert plan.commands.pack_options("a")[-2:] == ["--eod", "<|endoftext|>"]
