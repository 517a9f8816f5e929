"""LlamaIndex chat stores on the memory store's LanceDB table.

- :class:`MemoryChatStore`: a ``BaseChatStore`` (chat engines, ``ChatMemoryBuffer``).
- :class:`MemoryDBChatStore`: an ``AsyncDBChatStore``, the short-term side of LlamaIndex's
  ``Memory`` (``Memory.from_defaults(chat_store=...)``), with its active/archived queue.

Both keep a chat store key as a ``session_id`` and each message as a ``message`` memory of one
namespace, in the same format: they read each other's sessions, and a
:class:`~llama_index.memory_retrievers.RecallRetriever` over the namespace recalls the turns.

Every write is one commit and validated first. Replacing a session (``set_messages``) goes through
the store's ``replace``: readers see the old messages or the new ones, and a message the store
rejects (too large, invalid Unicode) leaves the old ones untouched. Inserting at a position gives
the message an order stamp between its neighbours' (no read-delete-rewrite, so concurrent inserts
all land); deleting one message deletes it only if it is still there, and otherwise looks again, so
two concurrent "delete the last message" delete two different messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
from pydantic import BaseModel, Field

from memory_retrievers import Memory, MemoryKind, NotFoundError, StorageError
from memory_retrievers.integration import (
    ADAPTER_MODEL_CONFIG,
    PAGE_SIZE,
    AdapterModel,
    aall_memories,
    adelete_ids,
    check_store_key,
    run_sync,
)

from ._messages import SEQ_KEY, from_memories, message_record, ordered

__all__ = ["ARCHIVED_TAG", "CLEARED_TAG", "MemoryChatStore", "MemoryDBChatStore"]

#: Tag of a message that ``Memory`` moved out of its short-term queue (``MessageStatus.ARCHIVED``).
ARCHIVED_TAG = "llama_index:archived"
#: Tag of a message a reset took out of its chat (``delete_messages``): it is no longer part of the
#: session's chat, and still a long-term memory that recall finds.
CLEARED_TAG = "llama_index:cleared"

# An insert before the first message takes a stamp this far (1 ms of the nanosecond clock) below it.
_BEFORE_FIRST = 1_000_000
# Compare-and-delete retries: each retry means another caller deleted the message first.
_DELETE_TRIES = 64


def _stamp(memory: Memory) -> int:
    value = memory.metadata.get(SEQ_KEY, 0)
    return value if isinstance(value, int) else 0


def stamp_between(before: Memory | None, after: Memory) -> int | None:
    """An order stamp strictly between two neighbours' (``None`` when they leave no gap)."""
    high = _stamp(after)
    if before is None:
        return high - _BEFORE_FIRST
    low = _stamp(before)
    return (low + high) // 2 if high - low >= 2 else None


# What a cleared message keeps: every field a write may set but its context, which the store fills
# again from the session's messages (the same ones).
_KEPT_FIELDS = (
    "id",
    "text",
    "vector",
    "kind",
    "session_id",
    "project",
    "topic",
    "entities",
    "priority",
    "pinned",
    "importance",
    "created_at",
    "supersedes",
    "links",
    "metadata",
    "expires_at",
    "lifecycle",
)


def _status(memory: Memory) -> MessageStatus:
    return MessageStatus.ARCHIVED if ARCHIVED_TAG in memory.tags else MessageStatus.ACTIVE


def restore(cls: type[BaseModel], state: dict[str, Any]) -> BaseModel:
    """Unpickle what an earlier version pickled (it named this function): rebuild from the fields."""
    return cls(**state)


class _Sessions(AdapterModel):
    """Messages of the sessions of one namespace: what both chat stores are made of.

    The store, namespace, copy and serialisation wiring is :class:`~memory_retrievers.integration.AdapterModel`'s.
    """

    model_config = ADAPTER_MODEL_CONFIG  # BaseComponent's config would win otherwise
    extra_arguments = ("class_name",)  # LlamaIndex's to_dict writes it; from_dict passes it back

    namespace: str = Field(description="The user or tenant whose chats these are.")

    # ------------------------------------------------------------------ building blocks
    def _key(self, key: str) -> str:
        return check_store_key(key, field="chat store key", store=self.store)

    def _session_filter(self, key: str) -> dict[str, Any]:
        return {"session_ids": [self._key(key)], "kinds": [MemoryKind.MESSAGE], "include_superseded": True}

    async def amemories(self, key: str | None, *, cleared: bool = False) -> list[Memory]:
        """The stored memories of a session's chat (all sessions for ``None``), in order.

        Messages a reset took out of the chat (:data:`CLEARED_TAG`) only with ``cleared=True``.
        """
        flt: dict[str, Any] = (
            {"kinds": [MemoryKind.MESSAGE], "include_superseded": True} if key is None else self._session_filter(key)
        )
        memories = ordered(await aall_memories(self.store, self.namespace, filter=flt))
        return memories if cleared else [m for m in memories if CLEARED_TAG not in m.tags]

    async def _clear(self, memories: Sequence[Memory]) -> None:
        """Take messages out of their chat in one commit; they stay long-term memories.

        A reset of LlamaIndex's memory clears its short-term chat, never the long-term memory; here
        every message of a chat is also a memory, so a reset tags them :data:`CLEARED_TAG` (same
        ids, texts, vectors and sessions) instead of deleting them. ``forget_messages`` deletes.
        """
        for start in range(0, len(memories), PAGE_SIZE):  # a commit per page: bounded filters and rows
            ids = [m.id for m in memories[start : start + PAGE_SIZE]]
            found = await self.store.aget(ids, namespace=self.namespace, include_vector=True)
            records = []
            for memory in found if isinstance(found, list) else [found]:
                record = {f: getattr(memory, f) for f in _KEPT_FIELDS}
                record["tags"] = [*memory.tags, CLEARED_TAG]
                records.append(record)
            await self.store.areplace(self.namespace, records, filter={"ids": ids, "include_superseded": True})

    async def _forget(self, key: str) -> int:
        """Delete every message of a session for good, cleared ones included; returns the count."""
        return await adelete_ids(self.store, self.namespace, [m.id for m in await self.amemories(key, cleared=True)])

    def _records(self, key: str, messages: Sequence[ChatMessage], *, archived: bool = False) -> list[dict[str, Any]]:
        session = self._key(key)
        records = [message_record(m, session_id=session) for m in messages]
        if archived:
            for record in records:
                record["tags"] = [ARCHIVED_TAG]
        return records

    async def _append(self, key: str, messages: Sequence[ChatMessage], *, archived: bool = False) -> list[Memory]:
        records = self._records(key, messages, archived=archived)
        if not records:
            return []
        return list(await self.store.aadd_many(records, namespace=self.namespace, dedup=False))

    async def _replace(self, key: str, messages: Sequence[ChatMessage], *, archived: bool = False) -> None:
        # One commit, every record validated first: a rejected message leaves the old session.
        # Messages a reset cleared are not part of the chat any more: they stay memories.
        records = self._records(key, messages, archived=archived)
        stored = await self.amemories(key, cleared=True)
        current = [m.id for m in stored if CLEARED_TAG not in m.tags]
        if len(current) == len(stored):  # nothing cleared: the whole session, as it is at the commit
            await self.store.areplace(self.namespace, records, filter=self._session_filter(key))
        elif current:
            await self.store.areplace(self.namespace, records, filter={"ids": current, "include_superseded": True})
        elif records:
            await self.store.aadd_many(records, namespace=self.namespace, dedup=False)

    async def _insert(self, key: str, message: ChatMessage, idx: int) -> None:
        records = self._records(key, [message])  # checks the message before reading anything
        memories = await self.amemories(key)
        # list.insert's semantics: negative positions count from the end, anything past it appends.
        position = max(0, len(memories) + idx) if idx < 0 else min(idx, len(memories))
        if position == len(memories):
            await self.store.aadd_many(records, namespace=self.namespace, dedup=False)
            return
        stamp = stamp_between(memories[position - 1] if position else None, memories[position])
        if stamp is None:  # the neighbours' stamps are adjacent: restamp the session in one replace
            messages = from_memories(memories)
            messages.insert(position, message)
            await self._replace(key, messages)
            return
        records[0]["metadata"][SEQ_KEY] = stamp
        await self.store.aadd_many(records, namespace=self.namespace, dedup=False)

    async def _delete_where(self, key: str, pick: Any) -> list[Memory]:
        """Delete the memories ``pick(session memories)`` chooses, only while they are all still there.

        When another caller deleted one of them first (``NotFoundError``), nothing is deleted and
        the choice is made again on the session as it is now.
        """
        for _ in range(_DELETE_TRIES):
            chosen: list[Memory] = pick(await self.amemories(key))
            if not chosen:
                return []
            try:
                await self.store.adelete([m.id for m in chosen], namespace=self.namespace)
            except NotFoundError:
                continue
            return chosen
        raise StorageError(
            f"could not delete from chat {key!r}: other callers deleted the chosen messages first {_DELETE_TRIES} "
            "times in a row; retry"
        )

    async def _delete_at(self, key: str, idx: int) -> ChatMessage | None:
        def pick(memories: list[Memory]) -> list[Memory]:
            return [memories[idx]] if -len(memories) <= idx < len(memories) else []

        deleted = await self._delete_where(key, pick)
        return from_memories(deleted)[0] if deleted else None

    async def _keys(self) -> list[str]:
        return sorted({m.session_id for m in await self.amemories(None) if m.session_id})


class MemoryChatStore(_Sessions, BaseChatStore):
    """Chat histories that survive restarts, stored as ``message`` memories of one namespace.

    A chat store key is a session: ``get_messages("chat-1")`` returns that session's messages in
    the order they were added, exactly as they were put (roles, blocks, extra kwargs). Because they
    are memories, a :class:`RecallRetriever` over the namespace recalls them. See the module
    docstring for what each write guarantees.

    Args:
        store: The memory store.
        namespace: The user or tenant whose chats these are.

    Raises:
        ConfigError: An unknown argument.
        pydantic.ValidationError: An invalid store or namespace.
    """

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name."""
        return "MemoryChatStore"

    # ------------------------------------------------------------------ async (the implementation)
    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace a session's messages in one commit (a rejected message changes nothing)."""
        await self._replace(key, list(messages))

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """A session's messages, oldest first."""
        return from_memories(await self.amemories(key))

    async def async_add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append a message (``idx`` inserts it at that position, as ``list.insert`` does)."""
        if idx is None:
            await self._append(key, [message])
        else:
            await self._insert(key, message, idx)

    async def aadd_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Append several messages in one commit (validated first: a bad one writes nothing)."""
        await self._append(key, list(messages))

    async def astore_messages(self, key: str, messages: Sequence[ChatMessage]) -> list[Memory]:
        """Like :meth:`aadd_messages`, returning the memories stored (for memory formation)."""
        return await self._append(key, list(messages))

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        """Clear a session's chat; returns its messages (``None`` if there were none).

        This is what a LlamaIndex memory's ``reset`` calls (``ChatMemoryBuffer``, chat engines):
        the messages leave the chat, and stay long-term memories that recall finds (see
        :data:`CLEARED_TAG`). To delete them for good, call :meth:`aforget_messages`.
        """
        memories = await self.amemories(key)
        if not memories:
            return None
        await self._clear(memories)
        return from_memories(memories)

    async def aforget_messages(self, key: str) -> int:
        """Delete a session's messages for good, cleared ones included; returns how many."""
        return await self._forget(key)

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at ``idx`` (``None`` if out of range)."""
        return await self._delete_at(key, idx)

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message of a session (``None`` if it is empty)."""
        return await self._delete_at(key, -1)

    async def aget_keys(self) -> list[str]:
        """Every session with stored messages, sorted."""
        return await self._keys()

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

    def forget_messages(self, key: str) -> int:
        """Sync twin of :meth:`aforget_messages`."""
        return run_sync(self.aforget_messages(key))

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Sync twin of :meth:`adelete_message`."""
        return run_sync(self.adelete_message(key, idx))

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Sync twin of :meth:`adelete_last_message`."""
        return run_sync(self.adelete_last_message(key))

    def get_keys(self) -> list[str]:
        """Sync twin of :meth:`aget_keys`."""
        return run_sync(self.aget_keys())


class MemoryDBChatStore(_Sessions, AsyncDBChatStore):
    """The short-term chat of LlamaIndex's ``Memory``, kept in the memory store.

    ``Memory.from_defaults(session_id=..., chat_store=MemoryDBChatStore(store=store, namespace="alice"))``
    keeps the active queue and the archived messages here instead of in SQLite: the chat survives a
    restart (a new process over the same folder picks the session up), and every message is a
    recallable memory. A message ``Memory`` archives (moves out of its short-term queue) is tagged
    :data:`ARCHIVED_TAG`; :class:`~llama_index.memory_retrievers.RecallMemoryBlock` on the same
    namespace does not store such messages a second time when ``Memory`` hands them to it.

    ``delete_message(key, idx)`` deletes the message at position ``idx`` of the session (all
    statuses, oldest first); SQLAlchemy's store takes a row id there, which this store does not have.

    Args:
        store: The memory store.
        namespace: The user or tenant whose chats these are.

    Raises:
        ConfigError: An unknown argument.
        pydantic.ValidationError: An invalid store or namespace.
    """

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name."""
        return "MemoryDBChatStore"

    async def _with_status(self, key: str, status: MessageStatus | None) -> list[Memory]:
        memories = await self.amemories(key)
        return memories if status is None else [m for m in memories if _status(m) == MessageStatus(status)]

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """A session's messages with ``status`` (``None``: all), oldest first, optionally paged."""
        memories = await self._with_status(key, status)
        start = offset or 0
        return from_memories(memories[start : None if limit is None else start + limit])

    async def count_messages(self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE) -> int:
        """How many messages of a session have ``status`` (``None``: all)."""
        return len(await self._with_status(key, status))

    async def add_message(self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Append a message with ``status``."""
        await self._append(key, [message], archived=MessageStatus(status) is MessageStatus.ARCHIVED)

    async def add_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append messages with ``status`` in one commit (validated first: a bad one writes nothing)."""
        await self._append(key, list(messages), archived=MessageStatus(status) is MessageStatus.ARCHIVED)

    async def set_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Replace all of a session's messages in one commit (a rejected message changes nothing)."""
        await self._replace(key, list(messages), archived=MessageStatus(status) is MessageStatus.ARCHIVED)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` of the session (``None`` if out of range)."""
        return await self._delete_at(key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Clear a session's messages with ``status`` (``None``: all of them) from the chat.

        This is what ``Memory.reset()`` calls: the short-term chat is cleared, and the messages stay
        long-term memories that recall finds (see :data:`CLEARED_TAG`), as LlamaIndex's reset keeps
        its memory blocks. To delete them for good, call :meth:`forget_messages`.
        """
        await self._clear(await self._with_status(key, status))

    async def forget_messages(self, key: str) -> int:
        """Delete a session's messages for good, cleared ones included; returns how many."""
        return await self._forget(key)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` active messages and return them."""

        def pick(memories: list[Memory]) -> list[Memory]:
            return [m for m in memories if _status(m) is MessageStatus.ACTIVE][: max(0, n)]

        return from_memories(await self._delete_where(key, pick))

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Tag the oldest ``n`` active messages archived and return them (they stay recallable)."""
        oldest = [m for m in await self.amemories(key) if _status(m) is MessageStatus.ACTIVE][: max(0, n)]
        for memory in oldest:
            # One update per message: only its tags change, so nothing is re-embedded.
            await self.store.aupdate(memory.id, namespace=self.namespace, tags=[*memory.tags, ARCHIVED_TAG])
        return from_memories(oldest)

    async def get_keys(self) -> list[str]:
        """Every session with stored messages, sorted."""
        return await self._keys()
