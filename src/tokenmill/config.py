"""The workflow configuration's JSON Schema, shipped inside the package, and validation against it.

``schemas/config.schema.yaml`` is the one schema: the workflow's ``common.smk`` validates the whole
config with it (``workflow/schemas/config.schema.yaml`` links here), and verbs that read a config
themselves (``tokenmill sft``) validate the sections they use with the same definitions, so a typo
or a wrong type fails the same way in both, naming the key. Cost: parsing a small YAML file.
"""

from __future__ import annotations

import functools
from importlib import resources

import yaml

from tokenmill.errors import TokenmillError

__all__ = ["schema", "validate_sections"]


@functools.cache
def schema() -> dict:
    """The parsed configuration schema."""
    return yaml.safe_load(resources.files("tokenmill").joinpath("schemas/config.schema.yaml").read_text("utf-8"))


def validate_sections(config: object, sections: tuple[str, ...], source: str) -> None:
    """Validate the top-level ``sections`` of ``config`` (required, each against its schema).

    Args:
        config: the parsed configuration.
        sections: top-level keys to check, e.g. ``("tokenizers", "sft")``; others are left alone.
        source: names the configuration in errors (its file, or ``-`` for stdin).

    Raises:
        TokenmillError: the first violation, as ``source: key.path: what is wrong``.
    """
    import jsonschema

    full = schema()
    partial = {"$schema": full["$schema"], "type": "object", "required": list(sections),
               "properties": {name: full["properties"][name] for name in sections}}
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(partial).iter_errors(config))
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "(top level)"
        raise TokenmillError(f"{source}: {where}: {error.message}")
