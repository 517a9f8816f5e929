"""LlamaIndex chat messages <-> memory records (shared by the chat store, block and memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage

from memory_retrievers import InvalidInputError, Memory
from memory_retrievers.integration import chat_record, chat_text, ordered_messages

__all__ = ["MESSAGE_KEY", "SEQ_KEY", "from_memories", "message_record", "message_text", "ordered"]

MESSAGE_KEY = "llama_index_message"
SEQ_KEY = "llama_index_seq"


def message_text(message: ChatMessage) -> str:
    """The message's text (text blocks only)."""
    return str(message.content or "")


def message_record(message: ChatMessage, *, session_id: str | None) -> dict[str, Any]:
    """A store record for one message (kind ``message``: exempt from dedup, gets turn context).

    The searchable text is ``role: text``, whole however long (the store refuses only one over
    ``StoreConfig.max_text_chars``, a pathological size); the exact message is kept in metadata, so
    cleaning the searchable text loses nothing.
    """
    if not isinstance(message, ChatMessage):
        raise InvalidInputError(f"messages must be LlamaIndex ChatMessage objects, got {type(message).__name__}")
    role = message.role.value
    return chat_record(
        text=chat_text(role, message_text(message), max_chars=None),
        role=role,
        session_id=session_id,
        payload_key=MESSAGE_KEY,
        payload=message.model_dump(mode="json"),
        seq_key=SEQ_KEY,
    )


def ordered(memories: Sequence[Memory]) -> list[Memory]:
    """Stored messages in the order they were added."""
    return ordered_messages(memories, payload_key=MESSAGE_KEY, seq_key=SEQ_KEY)


def from_memories(memories: Sequence[Memory]) -> list[ChatMessage]:
    """The messages stored in ``memories``, in the order they were added."""
    return [ChatMessage.model_validate(m.metadata[MESSAGE_KEY]) for m in ordered(memories)]
