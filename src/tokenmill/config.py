"""The workflow configuration's JSON Schema, shipped inside the package, and validation against it.

``schemas/config.schema.yaml`` is the one schema, and the one place defaults live: the workflow's
``common.smk`` validates the whole config with :func:`validate_config` (``workflow/schemas/
config.schema.yaml`` is a copy of it, kept equal by a test), and verbs that read a config themselves
(``tokenmill sft``) validate the sections they use with the same definitions, so a typo or a wrong
type fails the same way in both: one line naming the key path and, for an unknown key, the nearest
valid one. Cost: parsing a small YAML file.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

import yaml

from tokenmill.errors import TokenmillError

# The schema ships as a file beside this module (importlib.resources would cost 24 ms of imports
# on every command; the package is never installed zipped).
_SCHEMA = Path(__file__).parent / "schemas" / "config.schema.yaml"

__all__ = ["schema", "default", "validate_sections", "validate_config", "fill_defaults", "read_config_file"]


@functools.cache
def schema() -> dict:
    """The parsed configuration schema (with libyaml's parser where PyYAML has it: 1 ms, not 20)."""
    return yaml.load(_SCHEMA.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def default(key_path: str) -> object:
    """The schema's default of a key, by its path with ``*`` for any name: ``datasets.*.text`` is
    ``.text``. The CLI's and the library's defaults are read here, so that they are the config's.

    Raises:
        KeyError: no such key, or a key without a default.
    """
    node = schema()
    for key in key_path.split("."):
        node = node["additionalProperties"] if key == "*" else node["properties"][key]
    return copy.deepcopy(node["default"])


def validate_sections(config: object, sections: tuple[str, ...], source: str) -> None:
    """Validate the top-level ``sections`` of ``config`` (required, each against its schema).

    Args:
        config: the parsed configuration.
        sections: top-level keys to check, e.g. ``("tokenizers", "sft")``; others are left alone.
        source: names the configuration in errors (its file, or ``-`` for stdin).

    Raises:
        TokenmillError: the first violation, as ``source: key.path: what is wrong``.
    """
    full = schema()
    _check({"$schema": full["$schema"], "type": "object", "required": list(sections),
            "properties": {name: full["properties"][name] for name in sections}}, config, source)


def validate_config(config: object, source: str) -> dict:
    """Validate a whole workflow config and return a copy with every default filled in.

    Raises:
        TokenmillError: the first violation, as ``source: key.path: what is wrong``.
    """
    _check(schema(), config, source)
    if not config.get("datasets") and not config.get("sft"):  # either alone is a config: pretraining or SFT
        raise TokenmillError(f"{source}: datasets: a config needs at least one dataset or sft set")
    return fill_defaults(schema(), copy.deepcopy(config))


def fill_defaults(node_schema: dict, value: object) -> object:
    """``value`` (valid under ``node_schema``) with the schema's defaults set where keys are missing,
    in objects and in each entry of a name → object map (``datasets.<name>``)."""
    if not isinstance(value, dict) or node_schema.get("type") != "object":
        return value
    for key, property_schema in node_schema.get("properties", {}).items():
        if key not in value and "default" in property_schema:
            value[key] = copy.deepcopy(property_schema["default"])
        if key in value:
            value[key] = fill_defaults(property_schema, value[key])
    entries = node_schema.get("additionalProperties")
    if isinstance(entries, dict):
        for key in value.keys() - node_schema.get("properties", {}).keys():
            value[key] = fill_defaults(entries, value[key])
    return value


def _check(full_schema: dict, config: object, source: str) -> None:
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(full_schema).iter_errors(config))
    if error is None:
        return
    where = ".".join(map(str, error.absolute_path)) or "(top level)"
    message = error.message
    unexpected = re.findall(r"'([^']*)'", message) if error.validator == "additionalProperties" else []
    if unexpected:  # name the nearest valid key, as a user fixing a typo wants
        known = list(error.schema.get("properties", {}))
        import difflib  # only for a message: 30 ms of imports that a valid config never pays
        nearest = difflib.get_close_matches(unexpected[0], known, n=1)
        message = f"unknown key {unexpected[0]!r}" + (f" (did you mean {nearest[0]!r}?)" if nearest else
                                                      f" (valid keys: {', '.join(known)})")
    import datetime

    if isinstance(error.instance, datetime.date):  # an unquoted 2026-01-31 in YAML (template_date)
        message = f"{error.instance.isoformat()} is a YAML date, not a string: quote it"
    raise TokenmillError(f"{source}: {where}: {message}")


def read_config_file(path: str) -> object:
    """The YAML of a config file (``-``: standard input), not yet validated.

    Raises:
        TokenmillError: an unreadable file or one that is not YAML, naming it.
    """
    import sys

    try:
        if path == "-":
            return yaml.safe_load(sys.stdin.read())
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise TokenmillError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
