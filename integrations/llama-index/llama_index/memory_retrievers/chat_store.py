"""``MemoryChatStore``: a LlamaIndex ``BaseChatStore`` on the memory store's LanceDB table."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.base import BaseChatStore
from pydantic import ConfigDict, Field, field_validator

from memory_retrievers import Memory, MemoryKind, MemoryStore
from memory_retrievers.integration import aall_memories, adelete_ids, check_key, run_sync

from ._messages import MESSAGE_KEY, from_memories, message_record, ordered

__all__ = ["MemoryChatStore"]


class MemoryChatStore(BaseChatStore):
    """Chat histories that survive restarts, stored as ``message`` memories of one namespace.

    A chat store key is a session: ``get_messages("chat-1")`` returns that session's messages in
    the order they were added, exactly as they were put (roles, blocks, extra kwargs). Because they
    are memories, a :class:`RecallRetriever` over the namespace recalls them.

    Args:
        store: The memory store.
        namespace: The user or tenant whose chats these are.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore = Field(description="The memory store.")
    namespace: str = Field(description="The user or tenant whose chats these are.")

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, value: str) -> str:
        return check_key(value, field="namespace", max_chars=1024)

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name."""
        return "MemoryChatStore"

    def _key(self, key: str) -> str:
        return check_key(key, field="chat store key", max_chars=self.store.config.max_key_chars)

    async def amemories(self, key: str | None) -> list[Memory]:
        """The stored memories of a session's messages (all sessions for ``None``), in order."""
        flt: dict[str, Any] = {"kinds": [MemoryKind.MESSAGE], "include_superseded": True}
        if key is not None:
            flt["session_ids"] = [self._key(key)]
        return ordered(await aall_memories(self.store, self.namespace, filter=flt))

    def _records(self, key: str, messages: list[ChatMessage]) -> list[dict[str, Any]]:
        session = self._key(key)
        max_chars = self.store.config.max_text_chars
        return [message_record(m, session_id=session, max_chars=max_chars) for m in messages]

    # ------------------------------------------------------------------ async (the implementation)
    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace a session's messages (validated first: a bad message changes nothing)."""
        records = self._records(key, list(messages))
        await self.adelete_messages(key)
        if records:
            await self.store.aadd_many(records, namespace=self.namespace, dedup=False)

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """A session's messages, oldest first."""
        return from_memories(await self.amemories(key))

    async def async_add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append a message (``idx`` inserts it at that position instead)."""
        if idx is None:
            await self.store.aadd_many(self._records(key, [message]), namespace=self.namespace, dedup=False)
            return
        messages = await self.aget_messages(key)
        messages.insert(idx, message)
        await self.aset_messages(key, messages)

    async def aadd_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Append several messages in one commit (validated first: a bad one writes nothing)."""
        records = self._records(key, list(messages))
        if records:
            await self.store.aadd_many(records, namespace=self.namespace, dedup=False)

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete a session's messages; returns them (``None`` if there were none)."""
        memories = await self.amemories(key)
        if not memories:
            return None
        await adelete_ids(self.store, self.namespace, [m.id for m in memories])
        return from_memories(memories)

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at ``idx`` (``None`` if out of range)."""
        memories = await self.amemories(key)
        if not -len(memories) <= idx < len(memories):
            return None
        target = memories[idx]
        await self.store.adelete(target.id, namespace=self.namespace)
        return from_memories([target])[0]

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message of a session."""
        return await self.adelete_message(key, -1)

    async def aget_keys(self) -> list[str]:
        """Every session with stored messages, sorted."""
        return sorted({m.session_id for m in await self.amemories(None) if m.session_id and MESSAGE_KEY in m.metadata})

    # ------------------------------------------------------------------ sync shells
    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Sync twin of :meth:`aset_messages`."""
        run_sync(self.aset_messages(key, messages))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Sync twin of :meth:`aget_messages`."""
        return run_sync(self.aget_messages(key))

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Sync twin of :meth:`async_add_message`."""
        run_sync(self.async_add_message(key, message, idx))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Sync twin of :meth:`adelete_messages`."""
        return run_sync(self.adelete_messages(key))

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Sync twin of :meth:`adelete_message`."""
        return run_sync(self.adelete_message(key, idx))

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Sync twin of :meth:`adelete_last_message`."""
        return run_sync(self.adelete_last_message(key))

    def get_keys(self) -> list[str]:
        """Sync twin of :meth:`aget_keys`."""
        return run_sync(self.aget_keys())
