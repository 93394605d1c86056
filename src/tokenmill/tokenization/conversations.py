"""A chat line's conversation as transformers passes it to a chat template.

Formats: an OpenAI ``messages`` list (``role`` system/developer/user/assistant/tool, ``content`` a string or a list
of parts, optional ``tool_calls``, ``reasoning_content``, ``name``, ``tool_call_id``) with the line's ``tools``
if any; or a ShareGPT ``conversations`` list of ``{"from", "value"}`` whose ``from`` maps to a role by
:data:`SHAREGPT_ROLES` (``human``/``user`` → user, ``gpt``/``assistant``/``chatgpt`` → assistant, ``system``,
``tool``/``function``/``observation`` → tool). Messages pass as transformers passes them: keys whose value is null
are dropped, and a message's ``reasoning_content`` (or ``thinking``/``reasoning``) is given under both
``reasoning_content`` and ``thinking``. Cost: a turn of role and content alone is passed as the line has it (no
copy); any other is copied once.
"""

from __future__ import annotations

from tokenmill.errors import BadLine

__all__ = ["conversation_of", "SHAREGPT_ROLES", "OPENAI_ROLES"]

SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "chatgpt": "assistant", "system": "system", "tool": "tool", "function": "tool",
                  "observation": "tool"}
OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")  # transformers' names, in its order


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
