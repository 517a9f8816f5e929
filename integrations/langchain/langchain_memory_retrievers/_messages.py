"""LangChain messages <-> memory records, shared by the chat history and the agent middleware."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from memory_retrievers import InvalidInputError, Memory
from memory_retrievers.integration import chat_record, chat_text, ordered_messages

__all__ = ["from_memories", "message_record", "searchable_text"]

MESSAGE_KEY = "langchain_message"
SEQ_KEY = "langchain_seq"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def searchable_text(message: BaseMessage, max_chars: int | None) -> str:
    """What recall searches for a message: ``role: text``, tool calls named when there is no text.

    A message with a ``name`` (a named participant of a group chat) is ``role: Name: text``, so
    recall knows its speaker (a question naming them boosts their turns). The exact message is
    kept in metadata, so cleaning here (NUL, lone surrogates, length) never loses anything the
    history returns.
    """
    body = str(message.text)
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        body = (body + " " if body else "") + " ".join(f"[calls {c['name']}({c.get('args', {})})]" for c in calls)
    name = message.name.strip() if isinstance(message.name, str) and message.type == "human" else ""
    if name and body.strip():
        body = f"{name}: {body}"
    return chat_text(_ROLES.get(message.type, message.type), body, max_chars=max_chars, kind=message.type)


def message_record(
    message: BaseMessage, *, session_id: str | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A store record for one message (kind ``message``: exempt from dedup, gets turn context).

    Its text is the whole message, however long (the store refuses only one over
    ``StoreConfig.max_text_chars``, a pathological size); the exact message is kept in metadata.
    """
    if not isinstance(message, BaseMessage):
        raise InvalidInputError(f"messages must be LangChain BaseMessage objects, got {type(message).__name__}")
    record = chat_record(
        text=searchable_text(message, None),
        role=message.type,
        session_id=session_id,
        payload_key=MESSAGE_KEY,
        payload=message_to_dict(message),
        seq_key=SEQ_KEY,
        extra=extra,
    )
    if message.id:
        record["metadata"]["message_id"] = message.id
    return record


def from_memories(memories: Sequence[Memory]) -> list[BaseMessage]:
    """The messages stored in ``memories``, in the order they were added."""
    stored = ordered_messages(memories, payload_key=MESSAGE_KEY, seq_key=SEQ_KEY)
    return messages_from_dict([m.metadata[MESSAGE_KEY] for m in stored])
