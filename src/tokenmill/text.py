"""Select the text of one JSONL line with a jq pattern, classifying every way a line can be bad.

A plain ``.key`` pattern is answered by orjson (strict JSON and UTF-8, ~500 MB/s); any other
pattern is compiled once with the ``jq`` package and its first output is taken, as Modalities does.
Patterns are data: they are compiled by jq, never evaluated as Python.
"""

from __future__ import annotations

import json
import re

import orjson

from tokenmill.errors import TokenmillError

__all__ = ["TextSelector"]

_PLAIN_KEY = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)$")


def _json_failure(line: bytes) -> str:
    """Why orjson refused ``line``: invalid UTF-8 (with its byte) or invalid JSON (with position)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start} of the line"
    try:
        json.loads(line)
    except ValueError as exc:
        return f"invalid JSON ({exc})"
    return "invalid JSON"


class TextSelector:
    """Extracts the text string of a JSON line, or says why it cannot.

    Args:
        pattern: jq pattern, e.g. ``.text`` or ``.meta.body``.

    Raises:
        TokenmillError: the pattern is not valid jq.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        plain = _PLAIN_KEY.match(pattern)
        self.key = plain.group(1) if plain else None
        self.program = None
        if self.key is None:
            import jq  # only needed for non-trivial patterns

            try:
                self.program = jq.compile(pattern)
            except ValueError as exc:
                raise TokenmillError(f"text pattern {pattern!r} is not valid jq "
                                     f"({str(exc).splitlines()[0]})") from None

    def select(self, line: bytes) -> tuple[str | None, str | None]:
        """``(text, None)`` for a good line, ``(None, reason)`` for a bad one."""
        if not line.strip():
            return None, "blank line"
        if self.key is not None:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                return None, _json_failure(line)
            if not isinstance(record, dict):
                return None, f"not a JSON object (a {type(record).__name__})"
            if self.key not in record:
                return None, f"no key {self.key!r}"
            text = record[self.key]
        else:
            try:
                decoded = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return None, f"invalid UTF-8 at byte {exc.start} of the line"
            try:
                text = next(iter(self.program.input_text(decoded)), None)
            except ValueError as exc:
                reason = str(exc).splitlines()[0]
                return None, "invalid JSON" if "parse error" in reason.lower() else f"jq error: {reason}"
            if text is None:
                return None, f"jq pattern {self.pattern!r} gave no text"
        if not isinstance(text, str):
            return None, f"text is not a string (a {type(text).__name__})"
        if not text:
            return None, "empty text"
        return text, None
