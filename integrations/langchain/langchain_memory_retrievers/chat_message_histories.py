"""``MemoryChatMessageHistory``: a LangChain chat history whose turns become recallable memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from memory_retrievers import Memory, MemoryKind, MemoryStore
from memory_retrievers.integration import StoreBinding, aall_memories, adelete_ids, run_sync

from ._messages import from_memories, message_record

__all__ = ["MemoryChatMessageHistory"]


class MemoryChatMessageHistory(BaseChatMessageHistory):
    """Chat history of one session, persisted in a :class:`~memory_retrievers.MemoryStore`.

    Each message is stored as a ``message`` memory of ``namespace`` with ``session_id``, so a
    :class:`~langchain_memory_retrievers.RecallRetriever` over the same namespace recalls past turns
    (neighbouring turns become their context). The exact message, tool calls and ids included, is
    kept and returned in the order it was added. Works with ``RunnableWithMessageHistory``.

    Args:
        store: The memory store.
        namespace: The user or tenant.
        session_id: The conversation.
        former: A :class:`~memory_retrievers.formation.MemoryFormer` of the same store: the
            messages of each ``add_messages`` call are handed to it in the background
            (``form_later``) once stored, so facts are extracted off the hot path.

    ``namespace`` and ``session_id`` can be reassigned (checked like the constructor's); every
    read and write uses their current values.

    Raises:
        ConfigError: ``store`` is not a ``MemoryStore``, or ``former`` writes to another store.
        InvalidInputError: Empty or invalid ``namespace`` / ``session_id`` (longer than
            ``StoreConfig.max_key_chars``...).

    Example:
        .. code-block:: python

            history = MemoryChatMessageHistory(store, namespace="alice", session_id="chat-1")
            history.add_messages([HumanMessage("I moved to Berlin"), AIMessage("Noted!")])
            history.messages  # -> the two messages, also recallable as memories
    """

    def __init__(self, store: MemoryStore, *, namespace: str, session_id: str, former: Any = None) -> None:
        self._binding = StoreBinding(store)
        self._former = self._binding.former(former)
        self.namespace = namespace
        self.session_id = session_id

    @property
    def store(self) -> MemoryStore:
        """The memory store (fixed: build another history for another store)."""
        return self._binding.store

    @property
    def namespace(self) -> str:
        """The user or tenant whose session this is."""
        return self._namespace

    @namespace.setter
    def namespace(self, value: str) -> None:
        self._namespace = self._binding.key(value)

    @property
    def session_id(self) -> str:
        """The conversation."""
        return self._session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._session_id = self._binding.key(value, field="session_id")

    @property
    def _filter(self) -> dict[str, Any]:
        # Derived on every use, so a reassigned session_id is read and written alike.
        return {"session_ids": [self._session_id], "kinds": [MemoryKind.MESSAGE], "include_superseded": True}

    def __repr__(self) -> str:
        return f"MemoryChatMessageHistory(namespace={self.namespace!r}, session_id={self.session_id!r})"

    async def _amemories(self) -> list[Memory]:
        return await aall_memories(self.store, self.namespace, filter=self._filter)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """All messages of the session, oldest first."""
        return run_sync(self.aget_messages())

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages` (natively async)."""
        return from_memories(await self._amemories())

    def _records(self, messages: Sequence[BaseMessage]) -> list[dict[str, object]]:
        if isinstance(messages, BaseMessage):
            messages = [messages]
        return [message_record(m, session_id=self.session_id) for m in messages]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages in one commit; all are validated first, so a bad one writes nothing."""
        records = self._records(messages)
        if records:
            self._form(self.store.add_many(records, namespace=self.namespace, dedup=False))

    def _form(self, stored: Sequence[Memory]) -> None:
        if self._former is not None and stored:
            self._former.form_later(stored, namespace=self.namespace, session_id=self.session_id)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages` (natively async)."""
        records = self._records(messages)
        if records:
            self._form(await self.store.aadd_many(records, namespace=self.namespace, dedup=False))

    def clear(self) -> None:
        """Delete the session's messages (other sessions and memories are untouched)."""
        run_sync(self.aclear())

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await adelete_ids(self.store, self.namespace, [m.id for m in await self._amemories()])
