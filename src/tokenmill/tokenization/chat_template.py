"""A model's own chat template: conversations rendered and tokenized as transformers' ``apply_chat_template`` does,
with assistant-only loss masks.

Template: ``chat_template: tokenizer`` reads the tokenizer's folder (the folder of its ``tokenizer.json``) as
transformers does: ``chat_template.jinja`` if present, else ``tokenizer_config.json``'s ``chat_template`` (a string,
or named templates: ``tool_use`` for a conversation with tools where there is one, else ``default``); any other
value is the path of a ``.jinja`` file. The template sees ``messages``, ``tools``, ``documents`` (None),
``add_generation_prompt`` and the folder's special tokens (``bos_token``, ``eos_token``, ``unk_token``,
``sep_token``, ``pad_token``, ``cls_token``, ``mask_token`` from ``tokenizer_config.json``, else
``special_tokens_map.json``).

Date: transformers' ``strftime_now(format)`` formats ``datetime.now()``, so a template that writes the date or
time ("Today Date: 26 Jul 2024") renders differently on each day, or second, of a build, and the prefix rule
below compares renders made moments apart. Here it formats one fixed moment, the template's ``date``: the SFT set's
``template_date``, by default :data:`DEFAULT_TEMPLATE_DATE` (2024-07-26 00:00:00), the date Llama 3.1's and
3.2's own templates write when no clock is given (their ``date_string`` fallback), so that the default renders
what those templates render without one. A rebuild on any day is byte-identical, and the moment is recorded in
the sidecar. Cost: every conversation carries that one date; a model meant to see another sets
``template_date``. The moment has no time zone (``%Z``/``%z`` give nothing, as for transformers' naive
``now()``; ``%s``, seconds since 1970, counts it as UTC, not in the host's zone), and month and day names are the
C locale's, as Python leaves them.

Jinja semantics are transformers' (5.x, ``utils/chat_template_utils.py``): an ``ImmutableSandboxedEnvironment`` with
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension and a ``{% generation %}`` tag; globals
``raise_exception`` (a ``TemplateError``), ``strftime_now`` (at a fixed moment: Date, above), a sandboxed ``dict``
and ``namespace``; the filter ``tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)``
(plain ``json.dumps``, not Jinja's HTML-escaping one). Messages pass as transformers passes them: keys whose value
is null are dropped, and a message's ``reasoning_content`` (or ``thinking``/``reasoning``) is given under both
``reasoning_content`` and ``thinking``. The rendered text is tokenized with ``add_special_tokens=False`` and
special-token strings parsed as tokens (as transformers' tokenizer call does), so a BOS appears exactly where the
template writes ``{{ bos_token }}``, once.

Conversations: an OpenAI ``messages`` list (``role`` system/user/assistant/tool, ``content`` a string or a list
of parts, optional ``tool_calls``, ``reasoning_content``, ``name``, ``tool_call_id``) with the line's ``tools``
if any; or a ShareGPT ``conversations`` list of ``{"from", "value"}`` whose ``from`` maps to a role by
:data:`SHAREGPT_ROLES` (``human``/``user`` → user, ``gpt``/``assistant``/``chatgpt`` → assistant, ``system``,
``tool``/``function``/``observation`` → tool).

Loss mask (which tokens are trained):

* ``train_on: all``: every token.
* A template with ``{% generation %}…{% endgeneration %}``: exactly transformers' ``assistant_masks``
  (``return_assistant_tokens_mask=True``): 1 on every token whose character offsets overlap a generated span.
* Otherwise the prefix rule. For each assistant message ``i``, render ``messages[:i]`` with
  ``add_generation_prompt=True`` (the prompt the model sees) and ``messages[:i+1]``; the assistant's span is the
  text between their ends (its content and what the template closes the turn with, e.g. ``<|im_end|>\\n``).
  Valid only where each such render is a prefix of the whole conversation's render and the span's ends fall on
  token boundaries; a template that breaks it (one that drops earlier ``<think>`` blocks) is refused in one line
  naming the conversation's file, line and turn and the template: never a silently wrong mask.
* ``train_on: last_assistant``: the last assistant span only.

Tokens: with a fast engine (fastokens, :mod:`tokenmill.tokenization.engine`) the rendered texts of a batch are
encoded in one call, proven against Hugging Face on a sample as ``pack`` proves documents. For a byte-level BPE
tokenizer (GPT-2, Llama 3, Qwen: no normalizer, offsets untrimmed) the token boundaries are read off the ids
themselves: each id's bytes (a table built once from the vocabulary), laid end to end, must spell the text's UTF-8
exactly (checked for every text); a span's byte range then gives its tokens by bisection, all spans of a batch at
once, the same tokens as Hugging Face's character offsets give. Another tokenizer has each text cut at its span
ends and the pieces encoded alone, the mask read off their lengths where their ids join into the whole's. A text
neither way resolves (an added token that strips spaces, a span end inside a character's bytes) is encoded by
Hugging Face ``tokenizers`` with offsets, the library transformers itself calls, as every text is with the ``hf``
engine.

Renders: the template is compiled once; each render's context is made directly from globals flattened once (the
attributes Jinja's ``new_context`` sets, checked against it once per template: 1 µs instead of 3); a message's
keys are read without the sandbox's failed attribute lookup first (same result: a dict's own attributes still go
through the sandbox); the sandbox's verdict on any other attribute (``loop.index0``, a string's ``strip``) is kept
per (exact type, name) once found safe, for the builtin types, loops and namespaces, whose verdict depends on
nothing else (``jinja2.sandbox.is_internal_attribute``, ``modifies_known_mutable``; ``str.format`` never kept: the
sandbox wraps it per string); the span recording is skipped where the template has no generation block. Every
id a text is encoded to is checked against the text's bytes in C (``_kernels.spell_tokens``, the GIL released).

Cost: one render of the conversation, plus, for the prefix rule, two renders per assistant turn (one where it
is the last message: the render through it is the whole), i.e. renders of about every growing prefix: quadratic in
the turns, ~5 renders for a conversation of 5 messages. A render costs ~3 µs plus ~2-3 µs a message here; with
fastokens the renders are ~70 % of the time, on one core (Jinja holds the GIL). :class:`ChatRenderer` (the
render stage alone, which pickles) lets ``tokenmill sft --workers N`` render in N processes while this one
encodes (:func:`tokenmill.pack.sft.encode_conversations`).
Measured by ``bench/chat_template_bench.py`` (bench/RESULTS.md) on 2,000 synthetic 2-to-9-message conversations
(1.06 M tokens) with the GPT-2-based folders of the tests, 2 busy cores, against transformers 5.24.0's
``apply_chat_template(tokenize=True, return_assistant_tokens_mask=True)``: see bench/RESULTS.md for the figures;
the same ids for every conversation, and the same masks where transformers has them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property, partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tokenmill import _kernels
from tokenmill.config import default
from tokenmill.errors import BadLine, TokenmillError
from tokenmill.inputs.text_selection import conversation_record
from tokenmill.tokenization.engine import Encoder
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION, ProofSampler, ProofTally, encode_proven

__all__ = ["ChatTemplate", "ChatRenderer", "ChatTemplateEncoder", "Rendered", "load_chat_template",
           "chat_template_file", "conversation_of", "start_render_worker", "render_in_worker", "template_date",
           "SHAREGPT_ROLES", "DEFAULT_TEMPLATE_DATE",
           "TRAIN_ON", "SPECIAL_TOKEN_NAMES", "TOKENIZER_TEMPLATE"]

TOKENIZER_TEMPLATE = "tokenizer"  # chat_template: tokenizer — the template of the tokenizer's own folder
TRAIN_ON = ("assistant", "last_assistant", "all")
SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "chatgpt": "assistant", "system": "system", "tool": "tool", "function": "tool",
                  "observation": "tool"}
OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")  # transformers' names, in its order
# what getattr finds on a dict itself; any other name the sandbox looks up as a key (``message.role``)
_DICT_ATTRIBUTES = frozenset(dir(dict))
_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")  # transformers' test for generation markers
# the moment strftime_now formats unless the SFT set's template_date names one (see the module docstring)
DEFAULT_TEMPLATE_DATE = default("sft.*.template_date")
_DIRECTIVE = re.compile(r"%.", re.DOTALL)  # a strftime directive, ``%%`` included (so ``%%s`` stays text)
_TEMPLATE_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2})?)?")  # the schema's pattern


def template_date(value: str, where: str = "template_date") -> datetime:
    """The moment ``strftime_now`` formats, from ``YYYY-MM-DD``, ``YYYY-MM-DDTHH:MM`` or ``YYYY-MM-DDTHH:MM:SS``
    (a space for the ``T`` too; no time zone): midnight where no time is given.

    Raises:
        TokenmillError: another form, or a date that does not exist (``2026-02-30``), naming ``where``.
    """
    if not isinstance(value, str) or not _TEMPLATE_DATE.fullmatch(value):
        raise TokenmillError(f"{where}: {value!r} is not a date YYYY-MM-DD or a time YYYY-MM-DDTHH:MM[:SS]")
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise TokenmillError(f"{where}: {value!r} is not a date ({exc})") from None


def _strftime_at(moment: datetime, format: str) -> str:  # format: transformers' name for it (a keyword)
    """transformers' ``strftime_now(format)``, at ``moment`` rather than now; ``%s`` (the C library's seconds since
    1970, counted in the host's time zone) counted in UTC, so that no host setting changes the bytes."""
    if "%s" in format:
        epoch = str(int(moment.replace(tzinfo=timezone.utc).timestamp()))
        format = _DIRECTIVE.sub(lambda found: epoch if found.group() == "%s" else found.group(), format)
    return moment.strftime(format)


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template and what it is rendered with.

    Attributes:
        templates: the Jinja source by name (``default``, and ``tool_use`` where the folder has one).
        source: where it was read: ``<folder>/chat_template.jinja``, ``<folder>/tokenizer_config.json`` or the
            ``.jinja`` path (named in errors).
        special_tokens: the special tokens the template sees, by name (``bos_token``, ...).
        date: the moment ``strftime_now`` formats in every render (module docstring).
    """

    templates: dict[str, str]
    source: str
    special_tokens: dict[str, str] = field(default_factory=dict)
    date: datetime = field(default_factory=lambda: template_date(DEFAULT_TEMPLATE_DATE))

    @cached_property
    def _strftime_now(self):
        return partial(_strftime_at, self.date)  # (a partial: the template pickles to render workers)

    @cached_property
    def sha256(self) -> str:
        """sha256 of the templates (JSON, sorted by name) and special tokens: what the sidecar records."""
        text = json.dumps({"templates": self.templates, "special_tokens": self.special_tokens}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def has_generation(self, name: str = "default") -> bool:
        """Whether the template marks assistant text with ``{% generation %}`` (transformers' own test)."""
        return not _compiled(self.templates[name])[1].never  # the compiled template's test, made once

    def name_for(self, tools: list | None) -> str:
        """The template a conversation is rendered with: ``tool_use`` where it has tools and one exists."""
        return "tool_use" if tools is not None and "tool_use" in self.templates else "default"

    def render(self, messages: list[dict], tools: list | None = None, add_generation_prompt: bool = False,
               name: str = "default") -> tuple[str, list[tuple[int, int]]]:
        """``(text, spans)``: the rendered conversation and the ``[start, end)`` character spans of its
        ``{% generation %}`` blocks, in order (empty for a template without).

        Raises:
            jinja2.TemplateError: what the template raises (``raise_exception``, an undefined call, ...).
        """
        compiled, recorder, context_of = _compiled(self.templates[name])
        context = context_of({"messages": messages, "tools": tools, "documents": None,
                              "add_generation_prompt": add_generation_prompt, **self.special_tokens,
                              "strftime_now": self._strftime_now})
        if recorder.never:  # no {% generation %} in it: nothing to record, the pieces joined at once
            return "".join(compiled.root_render_func(context)), []
        pieces: list[str] = []
        recorder.pieces, recorder.spans = pieces, []
        try:
            for piece in compiled.root_render_func(context):
                pieces.append(piece)
            return "".join(pieces), recorder.spans
        finally:
            recorder.pieces = None


_COMPILED: dict[str, tuple[object, object, object]] = {}


def _compiled(source: str):
    """The template compiled in transformers' environment, its generation-span recorder, and the function that
    makes a render's context from its variables (cached by source)."""
    if source not in _COMPILED:
        _COMPILED[source] = _compile(source)
    return _COMPILED[source]


class _GenerationSpans:
    """Where the ``{% generation %}`` blocks of the render under way start and end (one render at a time per
    compiled template: each process renders in one thread; ``sft --workers N`` renders in N processes)."""

    def __init__(self, never: bool):
        self.never = never  # the template has no generation block: renders skip the recording
        self.pieces: list[str] | None = None  # the render's output so far, while spans are recorded
        self.spans: list[tuple[int, int]] = []

    def mark(self, text: str) -> str:
        """A block's rendered text, its span recorded at the end of the output so far."""
        if self.pieces is not None:
            start = sum(map(len, self.pieces))
            self.spans.append((start, start + len(text)))
        return text


def _compile(source: str):
    """``source`` compiled as transformers compiles a chat template: Jinja's immutable sandbox with trimmed and
    left-stripped blocks and loop controls; the ``generation`` block tag; ``raise_exception``, a ``tojson`` filter
    that keeps non-ASCII text, and ``dict``/``namespace`` that refuse private names (``strftime_now`` comes with
    each render's variables, at the template's date: there is no clock here)."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    recorder = _GenerationSpans(never=not _GENERATION_TAG.search(source))

    class GenerationBlock(jinja2.ext.Extension):
        tags = {"generation"}

        def parse(self, parser):  # {% generation %} ... {% endgeneration %}: the body through recorder.mark
            line = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("record"), [], [], body).set_lineno(line)

        def record(self, caller) -> str:
            return recorder.mark(caller())

    def fail(message):
        raise jinja2.exceptions.TemplateError(message)

    def refuse_private(name) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"a chat template cannot store {name!r} on a namespace")

    class SafeNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            attributes = dict(*args[1:], **kwargs)
            for name in attributes:
                refuse_private(name)
            jinja2.utils.Namespace.__init__(args[0], attributes)

        def __setitem__(self, name, value):
            refuse_private(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

    class DictMaker:  # dict(...) and dict.fromkeys(...), the two uses templates make of it
        __call__ = staticmethod(dict)
        fromkeys = staticmethod(dict.fromkeys)

    # the sandbox's verdict on an attribute depends on the object's type and the name alone
    # (jinja2.sandbox.is_internal_attribute, modifies_known_mutable): for these exact types it is kept once found
    # safe (str.format/format_map never: the sandbox wraps those per object)
    remembered_types = frozenset({str, int, float, bool, type(None), list, tuple, jinja2.runtime.LoopContext,
                                  SafeNamespace})
    safe_attributes: set[tuple[type, str]] = set()

    class Environment(ImmutableSandboxedEnvironment):
        def getattr(self, obj, attribute):  # message.role: the sandbox's answer, without its AttributeError
            kind = type(obj)
            if kind is dict and attribute not in _DICT_ATTRIBUTES:
                try:
                    return obj[attribute]
                except KeyError:
                    return self.undefined(obj=obj, name=attribute)
            if (kind, attribute) in safe_attributes:  # loop.index0, ns.found, text.strip: known safe
                try:
                    return getattr(obj, attribute)
                except AttributeError:
                    pass
            elif kind in remembered_types and attribute not in ("format", "format_map"):
                try:
                    value = getattr(obj, attribute)
                except AttributeError:
                    pass
                else:
                    if self.is_safe_attribute(obj, attribute, value):
                        safe_attributes.add((kind, attribute))
            return ImmutableSandboxedEnvironment.getattr(self, obj, attribute)

    env = Environment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda value, ensure_ascii=False, indent=None, separators=None, sort_keys=False: \
        json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    env.globals.update(raise_exception=fail, dict=DictMaker(), namespace=SafeNamespace)
    compiled = env.from_string(source)
    compiled.globals = dict(compiled.globals)  # a ChainMap over env.globals: each render's context copies it
    return compiled, recorder, _context_maker(compiled)


def _context_maker(compiled):
    """A function of a render's variables to the ``jinja2.runtime.Context`` that ``compiled.new_context`` makes:
    the same attributes, set directly (1 µs instead of 3.3: no globals copied twice, no set of their names made
    per render, no blocks to copy), checked once against Jinja's own; Jinja's own where they differ or the template
    has blocks."""
    from jinja2.runtime import Context, EvalContext

    environment, template_globals, name = compiled.environment, compiled.globals, compiled.name
    globals_keys = frozenset(template_globals)  # read only: Jinja tests names against it

    def context_of(variables: dict):
        context = Context.__new__(Context)
        context.__dict__.update(parent={**template_globals, **variables}, vars={}, environment=environment,
                                eval_ctx=EvalContext(environment, name), exported_vars=set(), name=name,
                                globals_keys=globals_keys, blocks={})
        return context

    probe = {"messages": []}
    if compiled.blocks or environment.context_class is not Context or \
            {key: value for key, value in vars(context_of(probe)).items() if key != "eval_ctx"} != \
            {key: value for key, value in vars(compiled.new_context(probe)).items() if key != "eval_ctx"}:
        return compiled.new_context
    return context_of


def _token_string(value: object) -> str | None:
    """A special token as a tokenizer_config.json spells it: a string, or an AddedToken dict's ``content``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TokenmillError(f"{path}: cannot read it as JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise TokenmillError(f"{path}: not a JSON object")
    return data


def load_chat_template(chat_template: str, tokenizer_path: str | os.PathLike,
                       date: str | datetime = DEFAULT_TEMPLATE_DATE) -> ChatTemplate:
    """The chat template that ``chat_template`` names, with the tokenizer folder's special tokens.

    Args:
        chat_template: ``tokenizer`` (the template of the tokenizer's folder) or a ``.jinja`` file's path.
        tokenizer_path: the ``tokenizer.json`` (its folder holds ``tokenizer_config.json``), or that folder.
        date: the moment ``strftime_now`` formats, or its text (:func:`template_date`).

    Raises:
        TokenmillError: no template in the folder, an unreadable file, a template that does not compile
            (naming the file and line), a ``date`` that is not one.
    """
    moment = date if isinstance(date, datetime) else template_date(date)
    folder = Path(tokenizer_path) if os.path.isdir(tokenizer_path) else Path(tokenizer_path).parent
    config_path = folder / "tokenizer_config.json"
    config = _read_json(config_path) if config_path.is_file() else {}
    special = {name: token for name in SPECIAL_TOKEN_NAMES
               if (token := _token_string(config.get(name))) is not None}
    legacy_path = folder / "special_tokens_map.json"
    if legacy_path.is_file():
        for name, value in _read_json(legacy_path).items():
            if name in SPECIAL_TOKEN_NAMES and name not in special and _token_string(value) is not None:
                special[name] = _token_string(value)
    if chat_template != TOKENIZER_TEMPLATE:
        source = str(chat_template)
        templates = {"default": _read_text(Path(chat_template))}
    elif (folder / "chat_template.jinja").is_file():
        source = str(folder / "chat_template.jinja")
        templates = {"default": _read_text(folder / "chat_template.jinja")}
    else:
        source = str(config_path)
        value = config.get("chat_template")
        if isinstance(value, list):  # named templates: [{"name": ..., "template": ...}]
            value = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        if isinstance(value, str):
            templates = {"default": value}
        elif isinstance(value, dict) and isinstance(value.get("default"), str):
            templates = {name: text for name, text in value.items() if isinstance(text, str)}
        else:
            raise TokenmillError(f"{folder}: the tokenizer has no chat template (no chat_template.jinja, and "
                                 f"{config_path.name} {'has no string' if config else 'missing or without a'} "
                                 f"chat_template); name a .jinja file with chat_template: PATH")
    template = ChatTemplate(templates, source, special, moment)
    for name, text in templates.items():
        _check_compiles(text, source, name)
    return template


def chat_template_file(chat_template: str | None, tokenizer_path: str | os.PathLike) -> str | None:
    """The file whose edits change what ``chat_template`` renders (for a workflow's inputs), or None for none:
    the ``.jinja`` path itself, else the folder's ``chat_template.jinja`` where it exists, else its
    ``tokenizer_config.json``."""
    if chat_template is None:
        return None
    if chat_template != TOKENIZER_TEMPLATE:
        return str(chat_template)
    folder = Path(tokenizer_path) if os.path.isdir(tokenizer_path) else Path(tokenizer_path).parent
    jinja = folder / "chat_template.jinja"
    return str(jinja if jinja.is_file() else folder / "tokenizer_config.json")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenmillError(f"{path}: cannot read the chat template ({exc.strerror or exc})") from None


def _check_compiles(text: str, source: str, name: str) -> None:
    import jinja2

    try:
        _compiled(text)
    except jinja2.TemplateSyntaxError as exc:
        where = f" ({name} template)" if name != "default" else ""
        raise TokenmillError(f"{source}:{exc.lineno}: the chat template{where} does not compile "
                             f"({exc.message})") from None


def conversation_of(record: dict, path: str, line: int) -> tuple[list[dict], list | None]:
    """``(messages, tools)`` of one line, as transformers passes them to the template.

    OpenAI ``messages`` are taken as they are (null-valued keys dropped, reasoning aliased); ShareGPT
    ``conversations`` become ``{"role", "content"}`` by :data:`SHAREGPT_ROLES`. A line with both uses ``messages``.

    Raises:
        BadLine: no ``messages``/``conversations`` list, an empty one, a turn that is not an object, a
            missing or unknown role, content that is not a string, a list of parts or null; tools not a list.
    """
    tools = record.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise BadLine(path, line, "tools is not a list")
    if isinstance(record.get("messages"), list):
        turns, key = record["messages"], "messages"
    elif isinstance(record.get("conversations"), list):
        turns, key = record["conversations"], "conversations"
    else:
        raise BadLine(path, line, "no messages or conversations list")
    if not turns:
        raise BadLine(path, line, f"empty {key}")
    messages = []
    for number, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise BadLine(path, line, f"{key}[{number}] is not an object")
        if key == "conversations":
            speaker = turn.get("from")
            if not isinstance(speaker, str) or not isinstance(turn.get("value"), str):
                raise BadLine(path, line, f"{key}[{number}] needs string 'from' and 'value'")
            if speaker not in SHAREGPT_ROLES:
                raise BadLine(path, line, f"{key}[{number}]: unknown 'from' {speaker!r} "
                                          f"(known: {', '.join(SHAREGPT_ROLES)})")
            messages.append({"role": SHAREGPT_ROLES[speaker], "content": turn["value"]})
            continue
        role = turn.get("role")
        if role not in OPENAI_ROLES:
            raise BadLine(path, line, f"{key}[{number}]: " + (f"unknown role {role!r} (known: "
                                                             f"{', '.join(OPENAI_ROLES)})" if isinstance(role, str)
                                                             else "no string 'role'"))
        content = turn.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise BadLine(path, line, f"{key}[{number}]: content is not a string, a list of parts or null")
        if len(turn) == 2 and content is not None:  # role and content alone (most turns): as they are
            messages.append(turn)
            continue
        message = {name: value for name, value in turn.items() if value is not None}
        reasoning = (next((message[name] for name in _REASONING_FIELDS if name in message), None)
                     if len(message) > 2 else None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        messages.append(message)
    return messages, tools


class Rendered(NamedTuple):
    """A conversation rendered: its text, its trained ``[start, end)`` character spans, whether the prefix rule
    found them (their ends must then be token boundaries), and its file and line."""

    text: str
    spans: list[tuple[int, int]]
    by_prefix: bool
    path: str
    line: int


class ChatRenderer:
    """The render stage of :class:`ChatTemplateEncoder`: conversations → rendered texts and their trained
    character spans. Pure Python (Jinja); it pickles (the template and ``train_on``; compiled again on first use in
    another process), so that ``tokenmill sft --workers N`` renders batches in N worker processes
    (:mod:`tokenmill.pack.sft`).

    Args:
        template: the loaded template.
        train_on: ``assistant``, ``last_assistant`` or ``all``.

    Raises:
        TokenmillError: an unknown ``train_on``.
    """

    def __init__(self, template: ChatTemplate, train_on: str = "assistant"):
        if train_on not in TRAIN_ON:
            raise TokenmillError(f"train_on must be one of {', '.join(TRAIN_ON)}, not {train_on!r}")
        self.template, self.train_on = template, train_on

    def render_batch(self, conversations: list[tuple[dict, str, int]]) -> list[Rendered | BadLine]:
        """Each ``(record, path, line)`` rendered, or the :class:`BadLine` it is (the template raised on it).

        Raises:
            TokenmillError: the prefix rule fails on a conversation (naming file, line, turn and template).
        """
        rendered: list[Rendered | BadLine] = []
        for record, path, line in conversations:
            try:
                rendered.append(Rendered(*self._render(record, path, line), path, line))
            except BadLine as bad:
                rendered.append(bad)
        return rendered

    def render_lines(self, path: str, first_line: int, lines: list[bytes]) -> list[Rendered | BadLine]:
        """:meth:`render_batch` of JSONL lines numbered from ``first_line``, each parsed first
        (:func:`tokenmill.inputs.text_selection.conversation_record`: a line that is not a JSON object is a bad line).

        Raises:
            TokenmillError: see :meth:`render_batch`.
        """
        rendered: list[Rendered | BadLine] = []
        for line, raw in enumerate(lines, start=first_line):
            try:
                rendered.append(Rendered(*self._render(conversation_record(raw, path, line), path, line), path, line))
            except BadLine as bad:
                rendered.append(bad)
        return rendered

    def _render(self, record: dict, path: str, line: int) -> tuple[str, list[tuple[int, int]], bool]:
        """The conversation's text, its trained character spans, and whether the prefix rule found them (so
        their ends must be token boundaries)."""
        import jinja2

        messages, tools = conversation_of(record, path, line)
        name = self.template.name_for(tools)
        try:
            text, spans = self.template.render(messages, tools, name=name)
            if self.train_on == "all":
                return text, [(0, len(text))], False
            by_prefix = not self.template.has_generation(name)
            if by_prefix:
                spans = self._prefix_spans(messages, tools, name, text, path, line)
        except jinja2.TemplateError as exc:
            raise BadLine(path, line, f"the chat template raised: {exc.message or type(exc).__name__}") from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise BadLine(path, line, f"the chat template failed: {type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        if self.train_on == "last_assistant":
            spans = spans[-1:]
        return text, spans, by_prefix

    def _prefix_spans(self, messages: list[dict], tools: list | None, name: str, text: str, path: str,
                      line: int) -> list[tuple[int, int]]:
        spans = []
        for turn, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            prompt, _ = self.template.render(messages[:turn], tools, add_generation_prompt=True, name=name)
            # through the last message is the whole conversation, rendered already
            through = text if turn == len(messages) - 1 else self.template.render(messages[:turn + 1], tools,
                                                                                     name=name)[0]
            for part, what in ((prompt, "with the generation prompt"), (through, "")):
                if not text.startswith(part):
                    raise TokenmillError(
                        f"{path}:{line}: turn {turn}: the chat template {self.template.source} renders the "
                        f"conversation up to this assistant turn{' ' + what if what else ''} as text that is not a "
                        f"prefix of the whole conversation's (it rewrites earlier turns, e.g. drops <think> blocks), "
                        f"so the assistant tokens cannot be found; use a template with {{% generation %}} blocks")
            if not through.startswith(prompt):
                raise TokenmillError(f"{path}:{line}: turn {turn}: the chat template {self.template.source}'s "
                                     f"generation prompt is not where the assistant turn starts")
            spans.append((len(prompt), len(through)))
        return spans


# The renderer of a worker process (``sft --workers N``): set once by start_render_worker, used by render_in_worker.
_WORKER_RENDERER: ChatRenderer | None = None


def start_render_worker(renderer: ChatRenderer) -> None:
    """A render worker process's initializer: keep ``renderer`` for :func:`render_in_worker` (its template is
    compiled on first use)."""
    global _WORKER_RENDERER
    _WORKER_RENDERER = renderer


def render_in_worker(path: str, first_line: int, lines: list[bytes]) -> list[Rendered | BadLine]:
    """:meth:`ChatRenderer.render_lines` with the renderer :func:`start_render_worker` gave this process.

    Raises:
        TokenmillError: see :meth:`ChatRenderer.render_batch`.
    """
    return _WORKER_RENDERER.render_lines(path, first_line, lines)


class ChatTemplateEncoder:
    """Conversations → ``(ids, trained)`` through a chat template and a Hugging Face tokenizer.

    Args:
        template: the loaded template.
        tokenizer: a ``tokenizers.Tokenizer`` (special-token strings in the rendered text are read as tokens:
            its ``encode_special_tokens`` must be off, as loading leaves it).
        train_on: ``assistant`` (every assistant turn), ``last_assistant`` or ``all``.
        engine: a fast :class:`~tokenmill.tokenization.engine.Encoder` over the same tokenizer (made with
            ``split_special_tokens=False``), or None for Hugging Face alone. With fastokens, a batch's texts are
            encoded in one call (proven against Hugging Face on ``check_fraction`` of them, as ``pack`` proves its
            documents) and their masks read off the ids' bytes (byte-level BPE) or off pieces cut at span ends;
            a text neither resolves is encoded by Hugging Face with offsets, as without an engine (module docstring).
        check_fraction: see :class:`tokenmill.tokenization.proof.ProofSampler`.

    Attributes:
        proof: what the proof checked so far (:class:`tokenmill.tokenization.proof.ProofTally`).
        by_offsets: conversations masked through Hugging Face's offsets (all of them without a fast engine).

    Raises:
        TokenmillError: an unknown ``train_on``.
    """

    def __init__(self, template: ChatTemplate, tokenizer, train_on: str = "assistant", engine: Encoder | None = None,
                 check_fraction: float = DEFAULT_CHECK_FRACTION):
        self.renderer = ChatRenderer(template, train_on)
        self.template, self.train_on = template, train_on
        self.tokenizer = tokenizer
        self.engine = engine
        self.sampler = ProofSampler(engine.info.added_tokens(), check_fraction) if engine is not None else None
        self.proof = ProofTally()
        self.by_offsets = 0
        self._tally_lock = threading.Lock()  # encode_rendered may run in several threads (sft's encode stage)
        # token boundaries read off the fast engine's ids (None: the tokenizer is not byte-level BPE)
        self._byte_table = _ByteTable.of(tokenizer) if engine is not None and engine.name != "hf" else None

    def encode_batch(self, conversations: list[tuple[dict, str, int]]) -> list[tuple[np.ndarray, np.ndarray] | BadLine]:
        """Each ``(record, path, line)`` as ``(ids int64, trained bool)``, or the :class:`BadLine` it is: the
        renders (:meth:`ChatRenderer.render_batch`), then :meth:`encode_rendered`.

        A line the template raises on (``raise_exception``, a missing key) is a bad line carrying the template's
        message; a template that breaks the prefix rule raises at once (it is the template that is wrong).

        Raises:
            TokenmillError: the prefix rule fails on a conversation, or an assistant span does not fall on
                token boundaries (naming file, line, turn and template); a fast engine that disagrees with
                Hugging Face (``EngineMismatch``).
        """
        return self.encode_rendered(self.renderer.render_batch(conversations))

    def encode_rendered(self, rendered: list[Rendered | BadLine]) -> list[tuple[np.ndarray, np.ndarray] | BadLine]:
        """The encode stage: each rendered conversation as ``(ids int64, trained bool)``, bad lines passed through,
        in order. Safe in several threads at once (the engines release the GIL; the tallies are locked).

        Raises:
            TokenmillError: an assistant span of the prefix rule that does not fall on token boundaries; a fast
                engine that disagrees with Hugging Face (``EngineMismatch``).
        """
        good = [item for item in rendered if not isinstance(item, BadLine)]
        fast = self._encode_fast(good) if self.engine is not None and self.engine.name != "hf" else [None] * len(good)
        slow = [item for item, result in zip(good, fast) if result is None]
        with self._tally_lock:
            self.by_offsets += len(slow)
        encodings = iter(self.tokenizer.encode_batch([item.text for item in slow], add_special_tokens=False)
                         if slow else [])
        results: list[tuple[np.ndarray, np.ndarray] | BadLine] = []
        fast_results, slow_items = iter(fast), iter(slow)
        for item in rendered:
            if isinstance(item, BadLine):
                results.append(item)
                continue
            result = next(fast_results)
            if result is None:
                text, spans, by_prefix, path, line = next(slow_items)
                encoding = next(encodings)
                result = (np.asarray(encoding.ids, dtype=np.int64),
                          self._mask(encoding.offsets, spans, len(text) if by_prefix else None, path, line))
            results.append(result)
        return results

    def _encode_fast(self, good: list[Rendered]) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """The fast engine's ``(ids, trained)`` of each rendered conversation, or None where its token boundaries
        could not be read off its ids (that one is encoded with offsets instead)."""
        if not good:
            return []
        texts = [item.text for item in good]
        whole, proof = encode_proven(self.engine, texts, False, self.sampler,
                                     [f"{item.path}:{item.line}" for item in good])
        with self._tally_lock:
            self.proof += proof
        if self._byte_table is not None:
            masks = self._byte_table.masks(texts, [item.spans for item in good], [item.by_prefix for item in good],
                                           whole)
            return [None if trained is None else (ids, trained) for ids, trained in zip(whole, masks)]
        return self._pieces(good, whole)

    def _pieces(self, good: list[Rendered], whole: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """For a tokenizer without a byte table: each text cut at its span ends and the pieces encoded alone;
        where their ids join into the whole's, the mask is read off their lengths, else None."""
        pieces, cuts = [], []
        for text, spans in ((item.text, item.spans) for item in good):
            ends = sorted({end for span in spans for end in span if 0 < end < len(text)})
            bounds = [0, *ends, len(text)]
            cuts.append(bounds)
            pieces += [text[start:end] for start, end in zip(bounds, bounds[1:])]
        piece_ids, lengths = self.engine.encode_batch(pieces, False) if pieces else (np.zeros(0), np.zeros(0))
        piece_ids = np.asarray(piece_ids, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        results, piece = [], 0
        for spans, ids, bounds in zip((item.spans for item in good), whole, cuts):
            count = len(bounds) - 1
            joined = piece_ids[starts[piece]:starts[piece + count]]
            if not np.array_equal(joined, ids):
                results.append(None)
            else:
                trained = np.zeros(len(ids), dtype=bool)
                for k, (start, end) in enumerate(zip(bounds, bounds[1:])):
                    if start != end and any(a <= start and end <= b for a, b in spans):
                        trained[starts[piece + k] - starts[piece]:starts[piece + k + 1] - starts[piece]] = True
                results.append((ids, trained))
            piece += count
        return results

    def _mask(self, offsets: list[tuple[int, int]], spans: list[tuple[int, int]], length: int | None, path: str,
              line: int) -> np.ndarray:
        """1 on every token overlapping a span (transformers' ``assistant_masks`` walk); for the prefix rule's
        spans (``length``: the text's, else None), each span's ends must also be token boundaries."""
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        trained = np.zeros(len(offsets), dtype=bool)
        # transformers walks tokens and spans together; for ordered spans and offsets that is: a token is trained
        # where it ends after a span starts and starts before that span ends
        for start, end in spans:
            trained |= (offsets[:, 1] > start) & (offsets[:, 0] < end)
        if length is not None:
            starts, ends = np.append(offsets[:, 0], length), np.append(offsets[:, 1], 0)
            for turn, (start, end) in enumerate(spans):
                if start != end and not (np.any(starts == start) and np.any(ends == end)):
                    raise TokenmillError(f"{path}:{line}: assistant span {turn} (characters {start}-{end}) of the "
                                         f"chat template {self.template.source} does not fall on token boundaries")
        return trained


def _byte_level_alphabet() -> dict[str, int]:
    """The byte each character of a byte-level BPE vocabulary stands for (GPT-2's table: printable Latin-1
    characters stand for themselves, the other bytes for U+0100 onwards in byte order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [byte for byte in range(256) if byte not in printable]
    return {**{chr(byte): byte for byte in printable}, **{chr(256 + k): byte for k, byte in enumerate(others)}}


class _ByteTable:
    """The bytes each token of a byte-level BPE tokenizer spells, so that a text's token boundaries are read off
    its ids: the cumulative byte lengths, wherever the tokens' bytes joined are exactly the text's UTF-8 (checked
    for every text; an added token that strips spaces, say, fails it and that text takes Hugging Face's offsets).

    Hugging Face's offsets are characters: a token overlaps a character span exactly where its bytes overlap the
    span's bytes (span ends are character boundaries), so the masks are those of its offsets; only tokenizers
    without a normalizer and whose post-processor leaves offsets untrimmed have a table.
    """

    def __init__(self, length: np.ndarray, flat: bytes):
        self.length = length  # bytes each id spells; -1: not a byte-level token
        self.start = np.concatenate([[0], np.cumsum(np.maximum(length, 0))[:-1]]).astype(np.int64)
        self.flat = np.frombuffer(flat, dtype=np.uint8)

    @classmethod
    def of(cls, tokenizer) -> _ByteTable | None:
        """The table of a ``tokenizers.Tokenizer``, or None where it is not byte-level BPE as above (0.2-0.5 s
        for GPT-2's 50 k tokens, once: the vocabulary translated to bytes as one string)."""
        def state(component) -> dict:
            return json.loads(component.__getstate__()) if component is not None else {}

        pre, post = state(tokenizer.pre_tokenizer), state(tokenizer.post_processor)
        pre_types = [item.get("type") for item in pre.get("pretokenizers", [pre])]
        if (type(tokenizer.model).__name__ != "BPE" or tokenizer.normalizer is not None or "ByteLevel" not in pre_types
                or '"trim_offsets": true' in json.dumps(post)):
            return None
        alphabet = _byte_level_alphabet()
        tokens = [""] * tokenizer.get_vocab_size(with_added_tokens=True)
        length = np.full(len(tokens), -1, dtype=np.int64)
        for token, token_id in tokenizer.get_vocab(with_added_tokens=False).items():
            if token_id < len(tokens):
                tokens[token_id], length[token_id] = token, len(token)
        outside = set("".join(tokens)) - alphabet.keys()
        for token_id, token in enumerate(tokens):  # a vocabulary of byte-level characters has none of these
            if outside and not outside.isdisjoint(token):
                tokens[token_id], length[token_id] = "", -1
        flat = "".join(tokens).translate({ord(char): byte for char, byte in alphabet.items()}).encode("latin-1")
        positions = np.concatenate([[0], np.cumsum(np.maximum(length, 0))])  # where each id's bytes are in flat
        pieces, start = [], 0
        for token_id, added in sorted(tokenizer.get_added_tokens_decoder().items()):
            if token_id < len(tokens):  # its bytes replace whatever the vocabulary spelled
                pieces += [flat[start:positions[token_id]], added.content.encode("utf-8")]
                start = int(positions[token_id + 1])
                length[token_id] = len(pieces[-1])
        return cls(length, b"".join([*pieces, flat[start:]]))

    def masks(self, texts: list[str], spans: list[list[tuple[int, int]]], by_prefix: list[bool],
              ids: list[np.ndarray]) -> list[np.ndarray | None]:
        """Each text's mask (1 on a token whose bytes overlap a span), or None where its ids do not spell it or,
        for the prefix rule's spans, a span's end is not a token boundary (Hugging Face's offsets then decide).
        All texts at once: their tokens' byte ends laid end to end, each span found in them by bisection."""
        encoded = [text.encode("utf-8") for text in texts]
        sizes = np.array([len(each) for each in encoded], dtype=np.int64)
        counts = np.array([len(each) for each in ids], dtype=np.int64)
        flat_ids = np.concatenate(ids).astype(np.int64) if ids else np.zeros(0, dtype=np.int64)
        token_ends = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        text_ends = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        byte_ends = np.empty(len(flat_ids) + 1, dtype=np.int64)  # byte_ends[i]: bytes spelled before token i
        spelled = np.zeros(len(texts), dtype=np.uint8)
        _kernels.spell_tokens(flat_ids, self.length, self.start, self.flat,
                              np.frombuffer(b"".join(encoded), dtype=np.uint8), token_ends, text_ends, byte_ends,
                              spelled)
        spelled = spelled.astype(bool)
        bases = byte_ends[token_ends]  # where each text's tokens start: a spelled text's bytes lie from there
        firsts, stops, owners, checked = [], [], [], []
        for k in np.flatnonzero(spelled).tolist():
            text, base = texts[k], int(bases[k])
            for start, end in spans[k]:
                if not text.isascii():
                    start, end = len(text[:start].encode("utf-8")), len(text[:end].encode("utf-8"))
                firsts.append(base + start)
                stops.append(base + end)
                owners.append(k)
                checked.append(by_prefix[k] and start != end)
        starts, ends = np.asarray(firsts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
        owners = np.asarray(owners, dtype=np.int64)
        first = np.searchsorted(byte_ends[1:], starts, side="right")  # the first token ending after the start
        stop = np.searchsorted(byte_ends[:-1], ends, side="left")  # the first token starting at the end or later
        # the prefix rule's spans begin and end on token boundaries (or at the text's end / start)
        on_bounds = (((starts == bases[owners] + sizes[owners])
                      | (byte_ends[np.minimum(first, len(byte_ends) - 1)] == starts))
                     & ((ends == bases[owners]) | (byte_ends[stop] == ends)))
        spelled[owners[np.asarray(checked, dtype=bool) & ~on_bounds]] = False
        marks = np.zeros(len(flat_ids) + 1, dtype=np.int64)
        np.add.at(marks, first, 1)
        np.add.at(marks, np.maximum(stop, first), -1)
        trained = np.cumsum(marks[:-1]) > 0
        masks: list[np.ndarray | None] = [None] * len(texts)
        for k in np.flatnonzero(spelled).tolist():
            masks[k] = trained[token_ends[k]:token_ends[k + 1]].copy()
        return masks
