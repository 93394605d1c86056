"""Chat-template cases shared by tests/tokenization/test_chat_template.py and the recipe that made its reference ids.

Eight templates: Qwen 2.5-Instruct's own (verbatim, tools included), and seven written after the shipped ones (a
shorter ChatML with tools, a ChatML with ``{% generation %}`` blocks, Llama 3's, Mistral's ``[INST]``, Gemma's,
a Qwen3-style reasoning template that shows a ``<think>`` block only after the last user turn, and a Llama
3.1-style one that writes the date and time from ``strftime_now``), each in a
tokenizer folder made from ``data/tokenizers/gpt2.tokenizer.json`` with their control tokens added, and a set of
varied conversations (system, multi-turn, tools and tool calls, empty and unicode content, reasoning).

The reference ids and masks in ``tests/data/chat_template_reference.json`` were made by transformers itself, in a
throwaway venv (it is not a dependency)::

    python3 -m venv /tmp/tf && /tmp/tf/bin/pip install transformers==5.24.0 tokenizers jinja2
    /tmp/tf/bin/python tests/tokenization/chat_template_cases.py > tests/data/chat_template_reference.json

which runs, for every case, ``AutoTokenizer.from_pretrained(folder).apply_chat_template(messages, tools=tools,
tokenize=True, return_dict=True, return_assistant_tokens_mask=True)`` (the mask only for the template with
generation blocks) with transformers' clock frozen: its ``strftime_now`` formats ``datetime.now()``, which answers
:data:`TEMPLATE_DATE` here, the date tokenmill's side is given as ``template_date`` (a callable passed as a keyword
would not do: transformers 5.24 turns every keyword into plain data). This file imports nothing but the standard
library, so that venv runs it as it is.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPT2 = ROOT / "data" / "tokenizers" / "gpt2.tokenizer.json"

ADDED = ["<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
         "<|eot_id|>", "<s>", "</s>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"]

CHATML_TOOLS = """{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0]['role'] == 'system' %}
{{- messages[0]['content'] }}
{%- else %}
{{- 'You are a helpful assistant.' }}
{%- endif %}
{{- "\\n\\n# Tools\\n\\n<tools>" }}
{%- for tool in tools %}
{{- "\\n" }}
{{- tool | tojson }}
{%- endfor %}
{{- "\\n</tools><|im_end|>\\n" }}
{%- elif messages[0]['role'] == 'system' %}
{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if message.content %}
{{- message.content }}
{%- endif %}
{%- for tool_call in message.tool_calls or [] %}
{%- if message.content or not loop.first %}
{{- '\\n' }}
{%- endif %}
{{- '<tool_call>\\n' }}
{{- tool_call.function | tojson }}
{{- '\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

CHATML_GENERATION = """{% for message in messages %}
{% if message['role'] == 'assistant' %}
{{ '<|im_start|>assistant\\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}
{% else %}
{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}
{% endif %}
{% endfor %}
{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"""

LLAMA3 = """{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' \
+ message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}\
{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}\
{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"""

MISTRAL = """{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}\
{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == \
'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are \
supported!') }}{% endif %}{% endfor %}"""

GEMMA = """{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}\
{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}\
{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}\
{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}\
{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"""

# after Llama 3.1's shape: today's date from strftime_now where the renderer has it (its own fallback otherwise), and
# here the time of day too, in the system header that every render begins with
DATED = """{{- bos_token }}
{%- if not date_string is defined %}
{%- if strftime_now is defined %}
{%- set date_string = strftime_now("%d %b %Y") %}
{%- else %}
{%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
{%- set system_message = messages[0]['content'] | trim %}
{%- set messages = messages[1:] %}
{%- else %}
{%- set system_message = "" %}
{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' }}
{{- 'Today Date: ' + date_string + '\nTime: ' + strftime_now('%H:%M:%S') + '\n\n' }}
{{- system_message + '<|eot_id|>' }}
{%- for message in messages %}
{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"""

THINK = """{%- set ns = namespace(last_user=-1) %}
{%- for message in messages %}
{%- if message.role == 'user' %}
{%- set ns.last_user = loop.index0 %}
{%- endif %}
{%- endfor %}
{%- for message in messages %}
{%- if message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if loop.index0 > ns.last_user and message.reasoning_content %}
{{- '<think>\\n' + message.reasoning_content.strip() + '\\n</think>\\n\\n' }}
{%- endif %}
{{- message.content + '<|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# Qwen2.5-Instruct's own template, verbatim (its tokenizer_config.json's chat_template, JSON-decoded)
QWEN25 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""  # noqa: E501

# name: (template, special tokens of its tokenizer_config.json)
TEMPLATES = {
    "chatml_tools": (CHATML_TOOLS, {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    "qwen25": (QWEN25, {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    "chatml_generation": (CHATML_GENERATION, {"eos_token": "<|im_end|>"}),
    "llama3": (LLAMA3, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
    "mistral": (MISTRAL, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<|endoftext|>"}),
    "gemma": (GEMMA, {"bos_token": "<bos>", "eos_token": "<eos>"}),
    "think": (THINK, {"eos_token": "<|im_end|>"}),
    "dated": (DATED, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
}

# the moment strftime_now gives on both sides: tokenmill's template_date, and transformers' clock (reference())
TEMPLATE_DATE = "2026-01-31T13:45:07"

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                             "parameters": {"type": "object",
                                                            "properties": {"city": {"type": "string"}},
                                                            "required": ["city"]}}}

CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."}]},
    {"messages": [{"role": "system", "content": "You answer briefly."},
                  {"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "Seven."},
                  {"role": "user", "content": "Another?"}, {"role": "assistant", "content": " Eleven, of course. "}]},
    {"messages": [{"role": "user", "content": "Grüße aus Köln — 東京は? 🙂"},
                  {"role": "assistant", "content": "東京はいい天気です 🌞\nÄußerst schön."}]},
    {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""},
                  {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]},
    {"tools": [WEATHER],
     "messages": [{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": "",
                   "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                                    "arguments": {"city": "Paris"}}}]},
                  {"role": "tool", "content": "{\"temp\": 21}"},
                  {"role": "assistant", "content": "It is 21 °C in Paris."}]},
    {"messages": [{"role": "user", "content": "Is 91 prime?"},
                  {"role": "assistant", "content": "No: 91 = 7 × 13.",
                   "reasoning_content": "91 / 7 = 13, so it has a factor."}]},
    # the reasoning template drops this first <think> block once a later user turn exists: not a prefix
    {"messages": [{"role": "user", "content": "Is 91 prime?"},
                  {"role": "assistant", "content": "No.", "reasoning_content": "7 × 13 = 91."},
                  {"role": "user", "content": "And 97?"}, {"role": "assistant", "content": "Yes."}]},
]

# name: the conversations (by index) it renders; the others it refuses or would render the same way
CASES = {
    "chatml_tools": [0, 1, 2, 3, 4],
    "qwen25": [0, 1, 2, 3, 4],
    "chatml_generation": [0, 1, 2, 3],
    "llama3": [0, 1, 2, 3],
    "mistral": [0, 2, 3],
    "gemma": [0, 2, 3],
    "think": [0, 1, 2, 5],
    "dated": [0, 1, 2, 3],
}


@functools.cache
def _tokenizer_json() -> bytes:
    """GPT-2's tokenizer.json with :data:`ADDED` at ids 50257..: the same text for every template, so made once per
    process (a parse and a dump of GPT-2's 1.4 MB cost ~0.3 s, and the tests make ~30 folders)."""
    tokenizer = json.loads(GPT2.read_text(encoding="utf-8"))
    for number, token in enumerate(ADDED):
        tokenizer["added_tokens"].append({"id": 50257 + number, "content": token, "single_word": False,
                                          "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    return json.dumps(tokenizer, ensure_ascii=False).encode("utf-8")


def make_folder(name: str, root: Path) -> Path:
    """A tokenizer folder for template ``name`` under ``root``: GPT-2's tokenizer.json with the templates' control
    tokens added (ids 50257..), and a tokenizer_config.json with the template and its special tokens."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_bytes(_tokenizer_json())
    template, special = TEMPLATES[name]
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": template, **special}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
    return folder


def reference() -> dict:
    """What transformers gives for every case (run in the throwaway venv; see the module docstring)."""
    from datetime import datetime

    import transformers
    from transformers import AutoTokenizer
    from transformers.utils import chat_template_utils

    moment = datetime.fromisoformat(TEMPLATE_DATE)

    class FrozenClock(datetime):  # what transformers' strftime_now reads: datetime.now(), here TEMPLATE_DATE
        @classmethod
        def now(cls, tz=None):
            return moment

    chat_template_utils.datetime = FrozenClock
    out = {"transformers": transformers.__version__, "template_date": TEMPLATE_DATE, "cases": {}}
    with tempfile.TemporaryDirectory() as root:
        for name, numbers in CASES.items():
            tokenizer = AutoTokenizer.from_pretrained(str(make_folder(name, Path(root))))
            for number in numbers:
                record = CONVERSATIONS[number]
                result = tokenizer.apply_chat_template(record["messages"], tools=record.get("tools"), tokenize=True,
                                                       return_dict=True,
                                                       return_assistant_tokens_mask=name == "chatml_generation")
                case = {"input_ids": list(result["input_ids"])}
                if name == "chatml_generation":
                    case["assistant_masks"] = list(result["assistant_masks"])
                out["cases"][f"{name}/{number}"] = case
    return out


if __name__ == "__main__":
    json.dump(reference(), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
