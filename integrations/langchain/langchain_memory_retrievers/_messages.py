"""LangChain messages <-> memory records, shared by the chat history and the agent middleware."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from memory_retrievers import Memory, MemoryKind
from memory_retrievers._sequence import next_stamp

__all__ = ["from_memories", "message_record", "searchable_text"]

MESSAGE_KEY = "langchain_message"
SEQ_KEY = "langchain_seq"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def searchable_text(message: BaseMessage, max_chars: int) -> str:
    """What recall searches for a message: ``role: text``, tool calls named when there is no text.

    The exact message is kept in metadata, so cleaning here (NUL, lone surrogates, length) never
    loses anything the history returns.
    """
    body = str(message.text)
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        body = (body + " " if body else "") + " ".join(f"[calls {c['name']}({c.get('args', {})})]" for c in calls)
    if not body.strip():
        body = f"[{message.type} message without text]"
    role = _ROLES.get(message.type, message.type)
    text = f"{role}: {body}".replace("\x00", "\ufffd")
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text[:max_chars]


def message_record(
    message: BaseMessage, *, session_id: str | None, max_chars: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A store record for one message (kind ``message``: exempt from dedup, gets turn context)."""
    if not isinstance(message, BaseMessage):
        from memory_retrievers import InvalidInputError

        raise InvalidInputError(f"messages must be LangChain BaseMessage objects, got {type(message).__name__}")
    record: dict[str, Any] = {
        "text": searchable_text(message, max_chars),
        "kind": MemoryKind.MESSAGE,
        "session_id": session_id,
        "metadata": {
            **(extra or {}),
            "role": message.type,
            SEQ_KEY: next_stamp(),
            MESSAGE_KEY: message_to_dict(message),
        },
    }
    if message.id:
        record["metadata"]["message_id"] = message.id
    return record


def from_memories(memories: Sequence[Memory]) -> list[BaseMessage]:
    """The messages stored in ``memories``, in the order they were added."""
    stored = [m for m in memories if MESSAGE_KEY in m.metadata]
    stored.sort(key=lambda m: (m.metadata.get(SEQ_KEY, 0), m.created_at))
    return messages_from_dict([m.metadata[MESSAGE_KEY] for m in stored])
