"""A chat line's conversation as transformers passes it to a template: OpenAI messages as they are (nulls dropped,
reasoning under both names), ShareGPT turns mapped to roles. (Bad lines, through the encoder, are
tests/tokenization/test_chat_template.py's.)"""

import pytest

from tokenmill.errors import BadLine
from tokenmill.tokenization.conversations import SHAREGPT_ROLES, conversation_of


def test_a_turn_of_role_and_content_is_passed_as_the_line_has_it():
    turn = {"role": "user", "content": "hi"}
    messages, tools = conversation_of({"messages": [turn], "tools": [{"name": "f"}]}, "c.jsonl", 1)
    assert messages[0] is turn and tools == [{"name": "f"}]


def test_null_keys_are_dropped_and_reasoning_is_given_under_both_names():
    line = {"messages": [{"role": "assistant", "content": "4", "reasoning": "2+2", "name": None, "tool_calls": None}]}
    [message], tools = conversation_of(line, "c.jsonl", 1)
    assert message == {"thinking": "2+2", "role": "assistant", "content": "4", "reasoning": "2+2",
                       "reasoning_content": "2+2"}
    assert tools is None


def test_messages_win_over_conversations_on_one_line():
    line = {"messages": [{"role": "user", "content": "a"}], "conversations": [{"from": "gpt", "value": "b"}]}
    assert conversation_of(line, "c.jsonl", 1)[0] == [{"role": "user", "content": "a"}]


@pytest.mark.parametrize("speaker, role", sorted(SHAREGPT_ROLES.items()))
def test_sharegpt_speakers_map_to_roles(speaker, role):
    line = {"conversations": [{"from": speaker, "value": "x"}]}
    assert conversation_of(line, "c.jsonl", 1) == ([{"role": role, "content": "x"}], None)


def test_a_bad_turn_names_its_file_line_and_index():
    with pytest.raises(BadLine, match=r"^c.jsonl:9: messages\[1\]: unknown role 'robot'"):
        conversation_of({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]},
                        "c.jsonl", 9)
