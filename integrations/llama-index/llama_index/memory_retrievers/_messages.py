"""LlamaIndex chat messages <-> memory records (shared by the chat store, block and memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage

from memory_retrievers import InvalidInputError, Memory, MemoryKind
from memory_retrievers._sequence import next_stamp

__all__ = ["MESSAGE_KEY", "from_memories", "message_record", "message_text"]

MESSAGE_KEY = "llama_index_message"
SEQ_KEY = "llama_index_seq"


def message_text(message: ChatMessage) -> str:
    """The message's text (text blocks only)."""
    return str(message.content or "")


def _searchable(message: ChatMessage, max_chars: int) -> str:
    # The exact message is kept in metadata, so cleaning the searchable text loses nothing.
    body = message_text(message)
    if not body.strip():
        body = f"[{message.role.value} message without text]"
    role = "assistant" if message.role.value == "assistant" else message.role.value
    text = f"{role}: {body}".replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return text[:max_chars]


def message_record(message: ChatMessage, *, session_id: str | None, max_chars: int) -> dict[str, Any]:
    """A store record for one message (kind ``message``: exempt from dedup, gets turn context)."""
    if not isinstance(message, ChatMessage):
        raise InvalidInputError(f"messages must be LlamaIndex ChatMessage objects, got {type(message).__name__}")
    return {
        "text": _searchable(message, max_chars),
        "kind": MemoryKind.MESSAGE,
        "session_id": session_id,
        "metadata": {"role": message.role.value, SEQ_KEY: next_stamp(), MESSAGE_KEY: message.model_dump(mode="json")},
    }


def ordered(memories: Sequence[Memory]) -> list[Memory]:
    """Stored messages in the order they were added."""
    stored = [m for m in memories if MESSAGE_KEY in m.metadata]
    stored.sort(key=lambda m: (m.metadata.get(SEQ_KEY, 0), m.created_at))
    return stored


def from_memories(memories: Sequence[Memory]) -> list[ChatMessage]:
    """The messages stored in ``memories``, in the order they were added."""
    return [ChatMessage.model_validate(m.metadata[MESSAGE_KEY]) for m in ordered(memories)]
