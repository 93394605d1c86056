"""The Jinja sandbox a chat template renders in, as transformers' (5.x, ``utils/chat_template_utils.py``) is.

Semantics: an ``ImmutableSandboxedEnvironment`` with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols``
extension and a ``{% generation %}`` tag whose blocks' character spans are recorded; globals ``raise_exception`` (a
``TemplateError``), a sandboxed ``dict`` and ``namespace`` (neither stores a private name); the filter
``tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`` (plain ``json.dumps``, not Jinja's
HTML-escaping one). ``strftime_now`` comes with each render's variables: :func:`strftime_at` at one fixed moment,
never the clock (the caller's ``date``; :mod:`tokenmill.tokenization.chat_template` says why).

Speed: a template is compiled once per process (:func:`sandboxed`); each render's context is made directly from
globals flattened once (the attributes Jinja's ``new_context`` sets, checked against it once per template: 1 µs
instead of 3); a message's keys are read without the sandbox's failed attribute lookup first (same result: a dict's
own attributes still go through the sandbox); the sandbox's verdict on any other attribute (``loop.index0``, a
string's ``strip``) is kept per (exact type, name) once found safe, for the builtin types, loops and namespaces,
whose verdict depends on nothing else (``jinja2.sandbox.is_internal_attribute``, ``modifies_known_mutable``;
``str.format`` never kept: the sandbox wraps it per string); the span recording is skipped where the template has
no generation block. A render costs ~3 µs plus ~2-3 µs a message, on one core (Jinja holds the GIL).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

__all__ = ["SandboxedTemplate", "sandboxed", "strftime_at"]

# what getattr finds on a dict itself; any other name the sandbox looks up as a key (``message.role``)
_DICT_ATTRIBUTES = frozenset(dir(dict))
_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")  # transformers' test for generation markers
_DIRECTIVE = re.compile(r"%.", re.DOTALL)  # a strftime directive, ``%%`` included (so ``%%s`` stays text)


def strftime_at(moment: datetime, format: str) -> str:  # format: transformers' name for it (a keyword)
    """transformers' ``strftime_now(format)``, at ``moment`` rather than now; ``%s`` (the C library's seconds since
    1970, counted in the host's time zone) counted in UTC, so that no host setting changes the bytes."""
    if "%s" in format:
        epoch = str(int(moment.replace(tzinfo=timezone.utc).timestamp()))
        format = _DIRECTIVE.sub(lambda found: epoch if found.group() == "%s" else found.group(), format)
    return moment.strftime(format)


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


class SandboxedTemplate:
    """A chat template compiled in the sandbox, with its generation-span recorder and the function that makes a
    render's context from its variables. Made by :func:`sandboxed`, once per source and process."""

    def __init__(self, compiled, recorder: _GenerationSpans, context_of):
        self._compiled, self._recorder, self._context_of = compiled, recorder, context_of

    @property
    def has_generation(self) -> bool:
        """Whether the template marks assistant text with ``{% generation %}`` (transformers' own test)."""
        return not self._recorder.never

    def render(self, variables: dict) -> tuple[str, list[tuple[int, int]]]:
        """``(text, spans)``: the template rendered with ``variables`` and the ``[start, end)`` character spans of
        its ``{% generation %}`` blocks, in order (empty for a template without).

        Raises:
            jinja2.TemplateError: what the template raises (``raise_exception``, an undefined call, ...).
        """
        context, recorder = self._context_of(variables), self._recorder
        if recorder.never:  # no {% generation %} in it: nothing to record, the pieces joined at once
            return "".join(self._compiled.root_render_func(context)), []
        pieces: list[str] = []
        recorder.pieces, recorder.spans = pieces, []
        try:
            for piece in self._compiled.root_render_func(context):
                pieces.append(piece)
            return "".join(pieces), recorder.spans
        finally:
            recorder.pieces = None


_SANDBOXED: dict[str, SandboxedTemplate] = {}


def sandboxed(source: str) -> SandboxedTemplate:
    """``source`` compiled in the sandbox (cached by source, for this process).

    Raises:
        jinja2.TemplateSyntaxError: the template does not compile.
    """
    if source not in _SANDBOXED:
        _SANDBOXED[source] = _compile(source)
    return _SANDBOXED[source]


def _compile(source: str) -> SandboxedTemplate:
    """``source`` compiled as transformers compiles a chat template: Jinja's immutable sandbox with trimmed and
    left-stripped blocks and loop controls; the ``generation`` block tag; ``raise_exception``, a ``tojson`` filter
    that keeps non-ASCII text, and ``dict``/``namespace`` that refuse private names (``strftime_now`` comes with
    each render's variables, at the template's date: there is no clock here)."""
    import jinja2
    import jinja2.ext

    recorder = _GenerationSpans(never=not _GENERATION_TAG.search(source))
    namespace = _safe_namespace()
    # the sandbox's verdict on an attribute depends on the object's type and the name alone
    # (jinja2.sandbox.is_internal_attribute, modifies_known_mutable): for these exact types it is kept once found
    # safe (str.format/format_map never: the sandbox wraps those per object)
    remembered_types = frozenset({str, int, float, bool, type(None), list, tuple, jinja2.runtime.LoopContext,
                                  namespace})
    environment = _environment_class(remembered_types)(
        trim_blocks=True, lstrip_blocks=True, extensions=[_generation_block(recorder), jinja2.ext.loopcontrols])
    environment.filters["tojson"] = _tojson
    environment.globals.update(raise_exception=_raise_exception, dict=_DictMaker(), namespace=namespace)
    compiled = environment.from_string(source)
    compiled.globals = dict(compiled.globals)  # a ChainMap over env.globals: each render's context copies it
    return SandboxedTemplate(compiled, recorder, _context_maker(compiled))


def _generation_block(recorder: _GenerationSpans) -> type:
    """The ``{% generation %}`` tag: its body rendered through ``recorder.mark``."""
    import jinja2.ext

    class GenerationBlock(jinja2.ext.Extension):
        tags = {"generation"}

        def parse(self, parser):  # {% generation %} ... {% endgeneration %}: the body through recorder.mark
            line = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("record"), [], [], body).set_lineno(line)

        def record(self, caller) -> str:
            return recorder.mark(caller())

    return GenerationBlock


def _environment_class(remembered_types: frozenset[type]) -> type:
    """The sandbox, its attribute lookup shortened: a message's keys read at once, and the verdicts it reaches on
    ``remembered_types`` kept (the module docstring)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

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

    return Environment


def _raise_exception(message):
    """transformers' ``raise_exception(message)``."""
    import jinja2

    raise jinja2.exceptions.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    """transformers' ``tojson`` filter: plain ``json.dumps``, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _refuse_private(name) -> None:
    import jinja2

    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(f"a chat template cannot store {name!r} on a namespace")


def _safe_namespace() -> type:
    """Jinja's ``namespace``, refusing private names."""
    import jinja2

    class SafeNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            attributes = dict(*args[1:], **kwargs)
            for name in attributes:
                _refuse_private(name)
            jinja2.utils.Namespace.__init__(args[0], attributes)

        def __setitem__(self, name, value):
            _refuse_private(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

    return SafeNamespace


class _DictMaker:  # dict(...) and dict.fromkeys(...), the two uses templates make of it
    __call__ = staticmethod(dict)
    fromkeys = staticmethod(dict.fromkeys)


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
