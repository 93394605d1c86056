"""A model's chat template: ids equal transformers' ``apply_chat_template``, masks equal its ``assistant_masks`` where
the template has ``{% generation %}`` blocks, and assistant-only masks by the prefix rule elsewhere.

The expected ids and masks (``tests/data/chat_template_reference.json``) were made by transformers 5.24.0 in a
throwaway venv, from the folders and conversations of ``chat_template_cases.py``::

    python3 -m venv /tmp/tf && /tmp/tf/bin/pip install transformers==5.24.0 tokenizers jinja2
    /tmp/tf/bin/python tests/tokenization/chat_template_cases.py > tests/data/chat_template_reference.json
"""

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chat_template_cases as cases
from conftest import REPO, built_once
from tokenmill.errors import BadLine, TokenmillError
from tokenmill.tokenization.chat_template import ChatTemplateEncoder, conversation_of, load_chat_template
from tokenmill.tokenization.engine import Encoder
from tokenmill.tokenization.tokenizer import load_tokenizer

REFERENCE = json.loads((REPO / "tests/data/chat_template_reference.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def folders(request, tmp_path_factory):
    """A tokenizer folder per template (~3 s), made once per run for every xdist worker; the tests only read them."""
    root = built_once(request.config, tmp_path_factory, "chat_templates",
                      lambda root: [cases.make_folder(name, root) for name in cases.TEMPLATES])
    return {name: root / name for name in cases.TEMPLATES}


TOKENIZERS = {}  # loaded once per folder: the tests only read them


def encoder(folder, train_on="assistant", template="tokenizer"):
    if folder not in TOKENIZERS:
        TOKENIZERS[folder] = load_tokenizer(folder / "tokenizer.json").tokenizer
    tokenizer = TOKENIZERS[folder]
    # the date transformers' clock was frozen at for the reference (chat_template_cases.reference)
    template = load_chat_template(template, folder / "tokenizer.json", cases.TEMPLATE_DATE)
    return ChatTemplateEncoder(template, tokenizer, train_on), tokenizer


def encode(folder, conversation, **options):
    chat, tokenizer = encoder(folder, **options)
    [result] = chat.encode_batch([(conversation, "chats.jsonl", 1)])
    return result, tokenizer


@pytest.mark.parametrize("case", sorted(REFERENCE["cases"]))
def test_ids_and_generation_masks_equal_transformers(folders, case):
    name, number = case.split("/")
    (ids, trained), _ = encode(folders[name], cases.CONVERSATIONS[int(number)])
    expected = REFERENCE["cases"][case]
    assert ids.tolist() == expected["input_ids"]
    if "assistant_masks" in expected:  # the template with {% generation %}: transformers' own mask
        assert trained.astype(int).tolist() == expected["assistant_masks"]


def test_the_fast_engine_gives_the_same_ids_and_masks(folders):
    """fastokens encodes each rendered text whole (proven against HF on every one here) and cut at its span ends;
    ids and masks equal the HF path's, and so transformers'."""
    for name, numbers in cases.CASES.items():
        info = load_tokenizer(folders[name] / "tokenizer.json")
        template = load_chat_template("tokenizer", folders[name], cases.TEMPLATE_DATE)
        fast = ChatTemplateEncoder(template, info.tokenizer, engine=Encoder(info, "fastokens"), check_fraction=1.0)
        slow = ChatTemplateEncoder(template, info.tokenizer)
        batch = [(cases.CONVERSATIONS[number], "chats.jsonl", number + 1) for number in numbers]
        for number, (ids, trained), (want_ids, want_trained) in zip(numbers, fast.encode_batch(batch),
                                                                    slow.encode_batch(batch)):
            assert ids.tolist() == REFERENCE["cases"][f"{name}/{number}"]["input_ids"]
            assert ids.tolist() == want_ids.tolist() and trained.tolist() == want_trained.tolist(), (name, number)
        assert fast.by_offsets == 0, name  # GPT-2 is byte-level BPE: every boundary read off the ids' bytes
        assert fast.proof.sidecar_entry(1.0, "conversations")["conversations"] == len(numbers)  # all proven


def test_without_a_byte_table_the_pieces_decide(folders):
    """A tokenizer that is not byte-level BPE cuts each text at its span ends and encodes the pieces: the same
    ids and masks, and where the pieces do not join, HF's offsets."""
    for name, numbers in cases.CASES.items():
        info = load_tokenizer(folders[name] / "tokenizer.json")
        template = load_chat_template("tokenizer", folders[name], cases.TEMPLATE_DATE)
        fast = ChatTemplateEncoder(template, info.tokenizer, engine=Encoder(info, "fastokens"))
        fast._byte_table = None  # as for a tokenizer without one
        batch = [(cases.CONVERSATIONS[number], "chats.jsonl", number + 1) for number in numbers]
        for number, (ids, trained), (want_ids, want_trained) in zip(
                numbers, fast.encode_batch(batch), ChatTemplateEncoder(template, info.tokenizer).encode_batch(batch)):
            assert ids.tolist() == want_ids.tolist() and trained.tolist() == want_trained.tolist(), (name, number)
        # Llama 3's "<|end_header_id|>\n\n" + content (the dated one's too): alone, "\n\n" is one token; before
        # "4." GPT-2's pattern splits it in two, so the pieces do not join, and those conversations take HF's offsets
        assert fast.by_offsets == (len(numbers) if name in ("llama3", "dated") else 0), name


def test_texts_the_ids_do_not_spell_take_hf_offsets(folders, tmp_path):
    """An added token that strips the spaces around it spells less than the text: the byte table gives that
    conversation up and HF's offsets mask it, the same as HF alone."""
    config = json.loads((folders["chatml_generation"] / "tokenizer.json").read_text(encoding="utf-8"))
    for added in config["added_tokens"]:
        if added["content"] == "<|im_end|>":
            added["lstrip"] = True
    (tmp_path / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    config_file = "tokenizer_config.json"
    (tmp_path / config_file).write_bytes((folders["chatml_generation"] / config_file).read_bytes())
    info = load_tokenizer(tmp_path / "tokenizer.json")
    template = load_chat_template("tokenizer", tmp_path)
    fast = ChatTemplateEncoder(template, info.tokenizer, engine=Encoder(info, "fastokens"))
    batch = [({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "so  "}]}, "c", 1),
             (cases.CONVERSATIONS[0], "c", 2)]
    got, want = fast.encode_batch(batch), ChatTemplateEncoder(template, info.tokenizer).encode_batch(batch)
    assert [(ids.tolist(), trained.tolist()) for ids, trained in got] == \
        [(ids.tolist(), trained.tolist()) for ids, trained in want]
    assert fast.by_offsets == 1  # "so  <|im_end|>": the token takes the two spaces


ENGINES = {}
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["", " ", "\n\n", "  x  ", "🙂🙂", "東京", "é\u0301", "<|im_end|>", "a\n\n\nb", " \t"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=4), st.sampled_from(["chatml_tools", "chatml_generation",
                                                                               "llama3"]))
def test_the_byte_table_masks_as_hf_offsets_do(folders, turns, name):
    """Any text, any template: the fast engine's ids and masks (boundaries read off the ids' bytes) equal HF's
    with its offsets, or both refuse the conversation in the same words."""
    if name not in ENGINES:  # fastokens, the template and the encoders (the byte table: 0.25 s) made once per template
        info = load_tokenizer(folders[name] / "tokenizer.json")
        template = load_chat_template("tokenizer", folders[name], cases.TEMPLATE_DATE)
        ENGINES[name] = [ChatTemplateEncoder(template, info.tokenizer, engine=engine)
                         for engine in (Encoder(info, "fastokens"), None)]
    messages = [message for user, assistant in turns
                for message in ({"role": "user", "content": user}, {"role": "assistant", "content": assistant})]
    batch = [({"messages": messages}, "c", 1)]
    outcomes = []
    for encoder in ENGINES[name]:  # an encoder keeps only tallies between batches
        try:
            [(ids, trained)] = encoder.encode_batch(batch)
            outcomes.append((ids.tolist(), trained.tolist()))
        except TokenmillError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]


def test_the_reference_was_made_by_the_transformers_named_at_the_date_given_here():
    assert REFERENCE["transformers"] == "5.24.0"
    assert REFERENCE["template_date"] == cases.TEMPLATE_DATE  # both sides see one moment through strftime_now
    assert len(REFERENCE["cases"]) == sum(map(len, cases.CASES.values())) == 32


@pytest.mark.parametrize("name, end", [("chatml_tools", "<|im_end|>\n"), ("llama3", "<|eot_id|>"),
                                       ("mistral", "</s>"), ("gemma", "<end_of_turn>\n")])
def test_prefix_rule_trains_exactly_the_assistant_turns(folders, name, end):
    """Worked example: the trained tokens are the assistant contents, each with the template's end of turn."""
    conversation = {"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
                                 {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6."}]}
    (ids, trained), tokenizer = encode(folders[name], conversation)
    runs = np.split(ids[trained], np.flatnonzero(np.diff(np.flatnonzero(trained)) > 1) + 1)
    assert [tokenizer.decode(run.tolist(), skip_special_tokens=False) for run in runs] == ["4." + end, "6." + end]
    (_, last), _ = encode(folders[name], conversation, train_on="last_assistant")
    assert last.sum() == len(runs[1]) and last[-len(runs[1]):].all()  # the last turn ends the conversation
    (_, everything), _ = encode(folders[name], conversation, train_on="all")
    assert everything.all()


def test_generation_blocks_mark_what_they_wrap(folders):
    """``{% generation %}`` wraps the content and ``<|im_end|>``: the ``\\n`` after it is not trained."""
    (ids, trained), tokenizer = encode(folders["chatml_generation"], cases.CONVERSATIONS[0])
    assert tokenizer.decode(ids[trained].tolist(), skip_special_tokens=False) == "4.<|im_end|>"


def test_bos_comes_only_from_the_template(folders):
    """Llama 3's template writes ``{{ bos_token }}``: exactly one BOS, first; ChatML's writes none: no BOS."""
    (ids, _), _ = encode(folders["llama3"], cases.CONVERSATIONS[0])
    assert ids[0] == 50259 and (ids == 50259).sum() == 1
    (ids, _), _ = encode(folders["chatml_tools"], cases.CONVERSATIONS[0])
    assert ids[0] == 50257  # <|im_start|>


def test_sharegpt_conversations_map_to_roles(folders):
    openai = cases.CONVERSATIONS[1]
    sharegpt = {"conversations": [{"from": {"system": "system", "user": "human", "assistant": "gpt"}[m["role"]],
                                   "value": m["content"]} for m in openai["messages"]]}
    assert conversation_of(sharegpt, "x.jsonl", 1) == (openai["messages"], None)
    (ids, trained), _ = encode(folders["chatml_tools"], sharegpt)
    assert ids.tolist() == REFERENCE["cases"]["chatml_tools/1"]["input_ids"]
    assert trained.sum() > 0


def test_a_template_that_drops_earlier_reasoning_is_refused(folders):
    """The reasoning template shows a ``<think>`` block only after the last user turn: rendering the first two
    messages is not a prefix of the whole conversation, so no mask is guessed."""
    with pytest.raises(TokenmillError, match=r"^chats.jsonl:1: turn 1: the chat template .*think/tokenizer_config"
                                             r"\.json renders .* not a prefix .*drops <think> blocks"):
        encode(folders["think"], cases.CONVERSATIONS[6])
    # with generation blocks the same conversation needs no prefix rule; with train_on: all neither
    (ids, trained), _ = encode(folders["think"], cases.CONVERSATIONS[6], train_on="all")
    assert trained.all()


@pytest.mark.parametrize("record, reason", [
    ({"text": "hi"}, "no messages or conversations list"),
    ({"messages": []}, "empty messages"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0]: unknown role 'robot'"),
    ({"messages": [{"content": "x"}]}, "messages[0]: no string 'role'"),
    ({"messages": [{"role": "user", "content": 3}]}, "messages[0]: content is not a string"),
    ({"messages": ["hi"]}, "messages[0] is not an object"),
    ({"conversations": [{"from": "alien", "value": "x"}]}, "conversations[0]: unknown 'from' 'alien'"),
    ({"conversations": [{"from": "human"}]}, "conversations[0] needs string 'from' and 'value'"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": {}}, "tools is not a list"),
])
def test_bad_lines_name_file_and_line(folders, record, reason):
    chat, _ = encoder(folders["chatml_tools"])
    [bad] = chat.encode_batch([(record, "chats.jsonl", 7)])
    assert isinstance(bad, BadLine)
    assert str(bad).startswith("chats.jsonl:7: ")
    assert bad.reason.startswith(reason)


def test_what_the_template_raises_is_a_bad_line(folders):
    """Mistral's template refuses a system message with ``raise_exception``: the line is bad, with its message."""
    chat, _ = encoder(folders["mistral"])
    good, bad = chat.encode_batch([(cases.CONVERSATIONS[0], "chats.jsonl", 1),
                                   (cases.CONVERSATIONS[1], "chats.jsonl", 2)])
    assert good[0].tolist() == REFERENCE["cases"]["mistral/0"]["input_ids"]
    assert str(bad) == "chats.jsonl:2: the chat template raised: Conversation roles must alternate " \
                       "user/assistant/user/assistant/..."


def test_template_sources(tmp_path, folders):
    """``tokenizer``: chat_template.jinja first, then tokenizer_config.json (named templates too); else a path."""
    folder = folders["chatml_generation"]
    assert load_chat_template("tokenizer", folder / "tokenizer.json").source == str(folder / "tokenizer_config.json")
    assert load_chat_template("tokenizer", folder).has_generation()
    jinja = tmp_path / "mine.jinja"
    jinja.write_text(cases.LLAMA3, encoding="utf-8")
    template = load_chat_template(str(jinja), folder / "tokenizer.json")
    assert (template.source, template.templates["default"]) == (str(jinja), cases.LLAMA3)
    assert template.special_tokens == {"eos_token": "<|im_end|>"}  # the tokenizer folder's, whatever the file
    named = tmp_path / "named"
    named.mkdir()
    (named / "tokenizer_config.json").write_text(json.dumps({"chat_template": [
        {"name": "default", "template": "{{ messages[0].content }}"},
        {"name": "tool_use", "template": "tools: {{ tools | length }}"}]}), encoding="utf-8")
    template = load_chat_template("tokenizer", named)
    assert template.name_for(None) == "default" and template.name_for([{}]) == "tool_use"
    (named / "chat_template.jinja").write_text("{{ 'jinja file' }}", encoding="utf-8")
    assert load_chat_template("tokenizer", named).templates == {"default": "{{ 'jinja file' }}"}


def test_template_errors_are_one_line(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(TokenmillError, match="the tokenizer has no chat template .*name a .jinja file"):
        load_chat_template("tokenizer", tmp_path)
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}\n{{ m.content }\n{% endfor %}", encoding="utf-8")
    with pytest.raises(TokenmillError, match=rf"^{broken}:2: the chat template does not compile \("):
        load_chat_template(str(broken), tmp_path)
    with pytest.raises(TokenmillError, match="missing.jinja: cannot read the chat template"):
        load_chat_template(str(tmp_path / "missing.jinja"), tmp_path)
    with pytest.raises(TokenmillError, match="train_on must be one of assistant, last_assistant, all"):
        ChatTemplateEncoder(None, None, "users")


def test_the_sandbox_and_transformers_filters(tmp_path):
    """``tojson`` keeps non-ASCII and ``<`` as they are (Jinja's own escapes them), ``strftime_now`` works, and
    the sandbox refuses attribute escapes."""
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages | tojson }}|{{ strftime_now('%Y') | length }}", encoding="utf-8")
    text, _ = load_chat_template(str(template), tmp_path).render([{"role": "user", "content": "<é>"}])
    assert text == '[{"role": "user", "content": "<é>"}]|4'
    template.write_text("{{ messages.__class__.__mro__ }}", encoding="utf-8")
    from jinja2.exceptions import SecurityError, UndefinedError
    with pytest.raises((SecurityError, UndefinedError)):
        load_chat_template(str(template), tmp_path).render([])


def test_strftime_now_gives_the_template_date_never_the_clock(tmp_path):
    """transformers formats ``datetime.now()``; here every render formats one moment: the documented default
    (2024-07-26, midnight) or the date given, in macros too, and in a render worker's copy of the template."""
    import pickle

    template = tmp_path / "t.jinja"
    template.write_text("{% macro clock() %}{{ strftime_now('%H:%M:%S') }}{% endmacro %}"
                        "{{ strftime_now('%d %b %Y') }} {{ clock() }}|{{ strftime_now(format='%A') }}",
                        encoding="utf-8")
    assert load_chat_template(str(template), tmp_path).render([])[0] == "26 Jul 2024 00:00:00|Friday"
    dated = load_chat_template(str(template), tmp_path, "2026-01-31T13:45:07")
    assert dated.render([])[0] == "31 Jan 2026 13:45:07|Saturday"
    assert pickle.loads(pickle.dumps(dated)).render([])[0] == "31 Jan 2026 13:45:07|Saturday"
    assert load_chat_template(str(template), tmp_path, "2026-01-31").date.isoformat() == "2026-01-31T00:00:00"


def test_no_host_setting_changes_what_strftime_now_gives(tmp_path, monkeypatch):
    """The C library counts ``%s`` (seconds since 1970) in the host's time zone: here the moment is read as UTC,
    whatever ``TZ`` says (``%%s`` stays text)."""
    import time

    (tmp_path / "t.jinja").write_text("{{ strftime_now('%s|%%s|%Z%z|%c') }}", encoding="utf-8")
    for zone in ("UTC", "Asia/Tokyo", "America/New_York"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        text, _ = load_chat_template(str(tmp_path / "t.jinja"), tmp_path).render([])
        assert text == "1721952000|%s||Fri Jul 26 00:00:00 2024", zone
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("value, message", [
    ("2026-02-30", "'2026-02-30' is not a date (day is out of range for month)"),
    ("31/01/2026", "'31/01/2026' is not a date YYYY-MM-DD or a time YYYY-MM-DDTHH:MM[:SS]"),
    ("2026-01-31T13:45:07+02:00", "is not a date YYYY-MM-DD or a time"),
    ("2026-01-31T25:00", "is not a date (hour must be in 0..23)"),
])
def test_a_template_date_that_is_not_one_is_refused(tmp_path, value, message):
    (tmp_path / "t.jinja").write_text("{{ strftime_now('%Y') }}", encoding="utf-8")
    with pytest.raises(TokenmillError, match=re.escape(message)):
        load_chat_template(str(tmp_path / "t.jinja"), tmp_path, value)


def test_a_template_that_writes_the_time_keeps_the_prefix_rule(folders, tmp_path):
    """The prefix rule compares renders made moments apart: with the clock, a template writing the time (to the
    microsecond here, so that it always moves) was refused as one that "rewrites earlier turns". With one moment
    three encodings give one set of ids and masks, the assistant turns trained; a template that does rewrite
    earlier turns is still refused for it, whatever time it writes."""
    jinja = tmp_path / "timed.jinja"
    jinja.write_text("{{ 'Time: ' + strftime_now('%H:%M:%S.%f') + '\\n' }}" + cases.CHATML_TOOLS, encoding="utf-8")
    tokenizer = load_tokenizer(folders["chatml_tools"] / "tokenizer.json").tokenizer
    batch = [(cases.CONVERSATIONS[number], "chats.jsonl", number + 1) for number in (0, 1, 3)]
    runs = []
    for _ in range(3):
        chat = ChatTemplateEncoder(load_chat_template(str(jinja), folders["chatml_tools"]), tokenizer)
        runs.append([(ids.tolist(), trained.tolist()) for ids, trained in chat.encode_batch(batch)])
    assert runs[0] == runs[1] == runs[2]
    ids, trained = runs[0][1]
    assert tokenizer.decode(ids, skip_special_tokens=False).startswith("Time: 00:00:00.000000\n<|im_start|>system")
    assert tokenizer.decode([i for i, t in zip(ids, trained) if t], skip_special_tokens=False) == \
        "Seven.<|im_end|>\n Eleven, of course. <|im_end|>\n"
    jinja.write_text("{{ strftime_now('%H:%M:%S.%f') }}" + cases.THINK, encoding="utf-8")
    chat = ChatTemplateEncoder(load_chat_template(str(jinja), folders["think"]), tokenizer)
    with pytest.raises(TokenmillError, match=r"^chats.jsonl:7: turn 1: .* not a prefix .*drops <think> blocks"):
        chat.encode_batch([(cases.CONVERSATIONS[6], "chats.jsonl", 7)])


@pytest.mark.parametrize("source", [
    "{% for m in messages %}{{ loop.index0 }}{{ m.content.strip() }}{{ loop.last }}{% endfor %}",
    "{% set ns = namespace(n=1) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{{ 'a b'.split() }}",
    "{{ messages.append(1) }}",
    "{{ messages.pop() }}",
    "{{ '{0.__class__}'.format(messages) }}",
    "{{ 'x'.format_map({}) }}",
    "{% for m in messages %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}",
    "{{ messages[0].content.__class__.__mro__ }}",
])
def test_remembered_attributes_keep_the_sandbox_verdicts(tmp_path, source):
    """The render keeps the sandbox's verdict per (type, attribute) once found safe (``loop.index0``): rendered
    twice, so the second render goes through what was remembered, each probe gives what Jinja's own immutable
    sandbox gives (the same text, or the same refusal)."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def outcome(render):
        try:
            return render()
        except jinja2.TemplateError as exc:
            return type(exc).__name__

    reference = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                              extensions=[jinja2.ext.loopcontrols]).from_string(source)
    path = tmp_path / "t.jinja"
    path.write_text(source, encoding="utf-8")
    template = load_chat_template(str(path), tmp_path)
    messages = [{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo"}]
    want = outcome(lambda: reference.render(messages=[dict(m) for m in messages]))
    for _ in range(2):
        assert outcome(lambda: template.render([dict(m) for m in messages])[0]) == want


def test_spell_tokens_worked_example():
    """``_kernels.spell_tokens``: ids 0..3 spell "ab", "c", "", none; each text spelled exactly, or not (a byte
    off, too few or too many bytes, an id that spells none, one outside the table), byte ends cumulative."""
    from tokenmill import _kernels

    lengths, starts = np.array([2, 1, 0, -1], dtype=np.int64), np.array([0, 2, 3, 3], dtype=np.int64)
    table = np.frombuffer(b"abc", dtype=np.uint8)
    texts = [b"abc", b"abd", b"ab", b"a", b"", b"ab", b"c"]
    ids = [[0, 1], [0, 1], [0, 2], [0], [], [0, 3], [7]]
    token_ends = np.cumsum([0, *map(len, ids)]).astype(np.int64)
    text_ends = np.cumsum([0, *map(len, texts)]).astype(np.int64)
    flat = np.array([i for each in ids for i in each], dtype=np.int64)
    byte_ends, spelled = np.empty(len(flat) + 1, dtype=np.int64), np.zeros(len(texts), dtype=np.uint8)
    _kernels.spell_tokens(flat, lengths, starts, table, np.frombuffer(b"".join(texts), dtype=np.uint8), token_ends,
                          text_ends, byte_ends, spelled)
    assert spelled.tolist() == [1, 0, 1, 0, 1, 0, 0]
    assert byte_ends.tolist() == [0, 2, 3, 5, 6, 8, 8, 10, 12, 12, 12]
    with pytest.raises(ValueError, match="inconsistent sizes"):
        _kernels.spell_tokens(flat, lengths, starts, table, table, token_ends, text_ends, byte_ends, spelled)


def test_the_demo_chatml_template_masks_the_demo_conversations():
    """``config/chatml.jinja`` (the README's runnable example) on ``data/raw/chat.jsonl`` with GPT-2: every turn's
    text rendered in order, the prefix rule holds, and exactly the assistant turns with their ``<|im_end|>\\n``
    are trained."""
    info = load_tokenizer(REPO / "data/tokenizers/gpt2.tokenizer.json")
    template = load_chat_template(str(REPO / "config/chatml.jinja"), REPO / "data/tokenizers")
    lines = (REPO / "data/raw/chat.jsonl").read_text(encoding="utf-8").splitlines()[:5]
    batch = [(json.loads(line), "chat.jsonl", number) for number, line in enumerate(lines, start=1)]
    for (record, _, _), (ids, trained) in zip(batch, ChatTemplateEncoder(template, info.tokenizer).encode_batch(batch)):
        turns = record["conversations"]
        assert info.tokenizer.decode(ids.tolist()) == "".join(
            f"<|im_start|>{'user' if turn['from'] == 'human' else 'assistant'}\n{turn['value']}<|im_end|>\n"
            for turn in turns)
        assert info.tokenizer.decode(ids[trained].tolist()) == "".join(
            f"{turn['value']}<|im_end|>\n" for turn in turns if turn["from"] == "gpt")
