"""The Jinja sandbox a chat template renders in: transformers' globals and filters, the generation spans, one
compile per source, and a moment in place of the clock. (Templates rendered whole, against transformers' own ids,
are tests/tokenization/test_chat_template.py's.)"""

from datetime import datetime

import jinja2
import pytest

from tokenmill.tokenization.template_sandbox import sandboxed, strftime_at


def test_a_source_is_compiled_once_and_knows_its_generation_blocks():
    plain = sandboxed("{{ messages | length }}")
    assert sandboxed("{{ messages | length }}") is plain
    assert not plain.has_generation
    assert sandboxed("{%- generation -%}x{%- endgeneration -%}").has_generation


def test_generation_blocks_give_their_character_spans_in_order():
    template = sandboxed("{% for m in messages %}<{{ m.role }}>"
                         "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}"
                         "{% else %}{{ m.content }}{% endif %}{% endfor %}")
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                {"role": "user", "content": "?"}, {"role": "assistant", "content": "ok!"}]
    text, spans = template.render({"messages": messages})
    assert text == "<user>hi<assistant>yo<user>?<assistant>ok!"
    assert [text[start:end] for start, end in spans] == ["yo", "ok!"]
    assert template.render({"messages": messages[:1]}) == ("<user>hi", [])  # nothing left from the render before


def test_transformers_globals_and_tojson():
    template = sandboxed("{% set d = dict(a=1) %}{{ d | tojson }}|{{ dict.fromkeys(['x']) | tojson }}|"
                         "{{ messages | tojson(indent=1) }}")
    text, _ = template.render({"messages": ["é<"]})
    assert text == '{"a": 1}|{"x": null}|[\n "é<"\n]'
    with pytest.raises(jinja2.TemplateError, match="^roles must alternate$"):
        sandboxed("{{ raise_exception('roles must alternate') }}").render({"messages": []})


@pytest.mark.parametrize("source", ["{% set ns = namespace(_secret=1) %}",
                                    "{% set ns = namespace() %}{% set ns._secret = 1 %}"])
def test_a_namespace_refuses_private_names(source):
    with pytest.raises(jinja2.exceptions.SecurityError, match="cannot store '_secret' on a namespace"):
        sandboxed(source).render({"messages": []})


def test_a_template_with_blocks_renders_through_jinja_s_own_context():
    # blocks are what the direct context leaves out: such a template takes Jinja's new_context, same text
    source = "{% block body %}{{ messages[0] }}{% endblock %}"
    assert sandboxed(source).render({"messages": ["one"]}) == ("one", [])


@pytest.mark.parametrize("format, expected", [
    ("%d %b %Y %H:%M:%S", "31 Jan 2026 13:45:07"),
    ("%s", "1769867107"),  # the moment read as UTC, whatever the host's zone
    ("%%s|%Z%z", "%s|"),  # %%s stays text; a moment without a zone gives none
])
def test_strftime_at_formats_the_moment_given(format, expected):
    assert strftime_at(datetime(2026, 1, 31, 13, 45, 7), format) == expected
