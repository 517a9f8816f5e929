"""``RecallMemoryBlock``: long-term recall as a block of LlamaIndex's ``Memory``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr

from memory_retrievers import LLM as MemoryLLM
from memory_retrievers import MemoryKind, MemoryRetriever, QueueFullError, RecallConfig
from memory_retrievers.integration import (
    ADAPTER_MODEL_CONFIG,
    AdapterChannels,
    AdapterModel,
    ModelWindow,
    aall_memories,
    arecall_window,
    chat_text,
    headed_block,
    query_text,
)

from ._messages import MESSAGE_KEY, message_record, message_text
from .bridges import to_memory_llm
from .chat_store import ARCHIVED_TAG

__all__ = ["RecallMemoryBlock", "latest_query", "window_texts"]

_Count = Annotated[int, Field(strict=True, ge=1)]


def latest_query(messages: list[ChatMessage] | None, max_chars: int) -> str | None:
    """The text to recall for: the latest user message (else the latest message with text).

    Cut to ``max_chars`` (the retriever's ``config.query.max_query_chars``).
    """
    if not messages:
        return None
    for role in (MessageRole.USER, None):
        for message in reversed(messages):
            text = message_text(message)
            if text.strip() and (role is None or message.role == role):
                return query_text(text, max_chars)
    return None


def window_texts(messages: Sequence[ChatMessage] | None, max_chars: int) -> list[str]:
    """The messages of the model's window as the store holds them (``role: text``).

    For ``exclude_texts``: LlamaIndex messages carry no memory id, so what the window already shows
    is told by its text.
    """
    return [chat_text(m.role.value, message_text(m), max_chars=max_chars) for m in messages or ()]


def _payload(message: ChatMessage, session: str | None) -> str:
    """A message's stored form, for matching; without the ``session_id`` that ``Memory`` adds to flushed ones."""
    data = message.model_dump(mode="json")
    kwargs = data.get("additional_kwargs")
    if isinstance(kwargs, dict) and session is not None and kwargs.get("session_id") == session:
        data["additional_kwargs"] = {k: v for k, v in kwargs.items() if k != "session_id"}
    return json.dumps(data, sort_keys=True)


class RecallMemoryBlock(AdapterModel, BaseMemoryBlock[str]):
    """Recall the memories that matter for the latest messages, within this block's token budget.

    ``Memory`` calls ``aget`` with the current chat; the block recalls for the latest user message
    and returns a context block, leaving out whatever says the same as a message of that chat (it
    is in the prompt already). Messages flushed out of short-term memory (``aput``) are queued as
    ``message`` memories as ``remember`` says (committed in the background, and found by this
    process's recall at once: see ``MemoryStore.add_many_later``), so later sessions can recall
    them (unless a :class:`~llama_index.memory_retrievers.MemoryDBChatStore` on this namespace
    already keeps them: those are not stored twice). ``atruncate`` re-selects within a smaller
    budget rather than dropping the whole block.

    Why every role by default: LlamaIndex's own ``VectorMemoryBlock`` keeps the assistant's replies,
    and what the assistant told the user (a booking, a recommendation, "the capital of France is
    Paris") is asked about later. A reply saying it did not know ("I don't think you've told me")
    is never recalled as an answer (recall cuts it: ``CutReason.HEDGE``). ``remember="user"`` keeps
    the user's messages only, as the LangChain ``MemoryMiddleware`` does by default: memory layers
    such as mem0 and langmem keep facts about the user, not the model's own words.

    Every field can be reassigned (checked like the constructor's). Recall goes through one core
    retriever that each call names the block's current namespace to, so a copy re-pointed at another
    namespace reads that one only. ``k`` and ``token_budget`` default to the recall config's (as
    every adapter's: 10 memories, 2,000 tokens unless ``recall_config`` says otherwise). The wiring
    (field checks, copies, serialisation) is :class:`memory_retrievers.integration.AdapterModel`'s.
    Unknown arguments raise
    :class:`~memory_retrievers.ConfigError`. ``pickle`` and ``model_dump``/``model_validate``
    round-trip it (the store as its spec) when ``llm``, ``former`` and ``channels`` are ``None``.
    ``channels`` adds recall channels of your own (:class:`~memory_retrievers.Channel`) to the
    built-in ones; ``recall_config``'s weights may name them.

    Example:
        .. code-block:: python

            block = RecallMemoryBlock(store=MemoryStore("./memories"), namespace="alice", token_budget=400)
            memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])
    """

    model_config = ADAPTER_MODEL_CONFIG  # BaseMemoryBlock's own config would win otherwise

    name: str = Field(default="recalled_memories", description="The block's name in the memory template.")
    namespace: str = Field(description="Whose memories.")
    k: _Count | None = Field(default=None, description="Maximum memories in the block (None: recall_config.k).")
    token_budget: _Count | Literal["config"] = Field(
        default="config", description="Maximum tokens of the block ('config': recall_config.token_budget)."
    )
    recall_config: RecallConfig | None = Field(default=None, description="Recall settings (or a dict of them).")
    channels: AdapterChannels = None
    llm: Any = Field(default=None, description="Optional LlamaIndex LLM for expansion/HyDE.")
    former: Any = Field(
        default=None,
        description="Optional MemoryFormer of the same store: the messages this block stores are handed to it "
        "in the background (form_later), so facts are extracted off the hot path.",
    )
    remember: Literal["user", "turn"] = Field(
        default="turn",
        description="Which flushed messages become memories: 'turn' (every role, as LlamaIndex's "
        "VectorMemoryBlock does) or 'user' (the user's only, as LangChain's MemoryMiddleware does).",
    )

    _last_query: tuple[str, list[str]] | None = PrivateAttr(default=None)

    @classmethod
    def convert_llm(cls, llm: Any) -> MemoryLLM | None:
        """A framework model (wrapped) or anything the core accepts, as a core LLM."""
        return to_memory_llm(llm)

    @property
    def memory_retriever(self) -> MemoryRetriever:
        """A core retriever reading this block's namespace, on the block's current settings."""
        return self.recall_binding().bound(self.namespace)

    async def _recall(self, query: str, budget: int | str, shown: Sequence[str]) -> str:
        # LlamaIndex messages carry no memory id: what the window shows is told by its text.
        window = ModelWindow(query, frozenset(), tuple(shown))
        result = await arecall_window(
            self.recall_binding(), window, namespace=self.namespace, k=self.k, token_budget=budget
        )
        return headed_block(result)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = latest_query(messages, self.recall_binding().config.query.max_query_chars)
        shown = window_texts(messages, self.store.config.max_text_chars)
        self._last_query = None if query is None else (query, shown)
        if query is None:
            return ""
        return await self._recall(query, self.token_budget, shown)

    async def _kept_already(self, session: str | None) -> Counter[str]:
        """Payloads of this session's messages a ``MemoryDBChatStore`` archived here (they are memories already)."""
        if session is None:
            return Counter()
        flt = {"session_ids": [session], "kinds": [MemoryKind.MESSAGE], "tags_any": [ARCHIVED_TAG]}
        archived = await aall_memories(self.store, self.namespace, filter=flt)
        return Counter(
            json.dumps(m.metadata[MESSAGE_KEY], sort_keys=True) for m in archived if MESSAGE_KEY in m.metadata
        )

    async def _aput(self, messages: list[ChatMessage]) -> None:
        kept: dict[str | None, Counter[str]] = {}
        records = []
        for message in messages:
            if not message_text(message).strip() or (self.remember == "user" and message.role != MessageRole.USER):
                continue
            session = _session(message.additional_kwargs)
            if session not in kept:
                kept[session] = await self._kept_already(session)
            payload = _payload(message, session)
            if kept[session][payload] > 0:
                kept[session][payload] -= 1
                continue
            records.append(message_record(message, session_id=session))
        if records:
            # Queued, not waited for: this process's recall finds them at once, and the commit
            # happens off the turn's path (see MemoryStore.add_many_later).
            try:
                stored: Sequence[Any] = self.store.add_many_later(records, namespace=self.namespace, dedup=False)
            except QueueFullError:  # on an event loop a full queue refuses at once: wait for room
                stored = await self.store.aadd_many(records, namespace=self.namespace, dedup=False)
            if self.former is not None:
                self.former.form_later(stored, namespace=self.namespace)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Re-select within ``tokens(content) - tokens_to_truncate`` tokens (``None`` if nothing fits)."""
        if not content or self._last_query is None:
            return None
        budget = self.recall_binding().token_counter.count(content) - tokens_to_truncate
        if budget <= 0:
            return None
        query, shown = self._last_query
        smaller = await self._recall(query, budget, shown)
        return smaller or None


def _session(kwargs: Mapping[str, Any]) -> str | None:
    value = kwargs.get("session_id")
    return str(value) if isinstance(value, str) and value.strip() else None
