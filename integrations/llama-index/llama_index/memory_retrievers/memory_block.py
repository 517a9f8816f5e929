"""``RecallMemoryBlock``: long-term recall as a block of LlamaIndex's ``Memory``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from memory_retrievers import MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.integration import query_text

from ._messages import message_record, message_text
from .bridges import to_memory_llm

__all__ = ["RecallMemoryBlock", "latest_query"]


def latest_query(messages: list[ChatMessage] | None) -> str | None:
    """The text to recall for: the latest user message (else the latest message with text)."""
    if not messages:
        return None
    for role in (MessageRole.USER, None):
        for message in reversed(messages):
            text = message_text(message)
            if text.strip() and (role is None or message.role == role):
                return query_text(text)
    return None


class RecallMemoryBlock(BaseMemoryBlock[str]):
    """Recall the memories that matter for the latest messages, within this block's token budget.

    ``Memory`` calls ``aget`` with the current chat; the block recalls for the latest user message
    and returns a context block. Messages flushed out of short-term memory (``aput``) are stored as
    ``message`` memories, so later sessions can recall them. ``atruncate`` re-selects within a
    smaller budget rather than dropping the whole block.

    Example:
        .. code-block:: python

            block = RecallMemoryBlock(store=MemoryStore("./memories"), namespace="alice", token_budget=400)
            memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="recalled_memories", description="The block's name in the memory template.")
    store: MemoryStore = Field(description="The memory store.")
    namespace: str = Field(description="Whose memories.")
    k: int = Field(default=5, ge=1, description="Maximum memories in the block.")
    token_budget: int = Field(default=800, ge=1, description="Maximum tokens of the block.")
    recall_config: RecallConfig | dict[str, Any] | None = Field(default=None, description="Recall settings.")
    llm: Any = Field(default=None, description="Optional LlamaIndex LLM for expansion/HyDE.")

    _recaller: MemoryRetriever = PrivateAttr()
    _last_query: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _build(self) -> RecallMemoryBlock:
        self._recaller = MemoryRetriever(
            self.store, namespace=self.namespace, config=self.recall_config, llm=to_memory_llm(self.llm)
        )
        return self

    async def _recall(self, query: str, budget: int) -> str:
        result = await self._recaller.arecall(query, k=self.k, token_budget=budget)
        return result.to_context()

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = latest_query(messages)
        self._last_query = query
        if query is None:
            return ""
        return await self._recall(query, self.token_budget)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        max_chars = self.store.config.max_text_chars
        records = [
            message_record(m, session_id=_session(m.additional_kwargs), max_chars=max_chars)
            for m in messages
            if message_text(m).strip()
        ]
        if records:
            await self.store.aadd_many(records, namespace=self.namespace, dedup=False)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Re-select within ``tokens(content) - tokens_to_truncate`` tokens (``None`` if nothing fits)."""
        if not content or self._last_query is None:
            return None
        budget = self._recaller.token_counter.count(content) - tokens_to_truncate
        if budget <= 0:
            return None
        smaller = await self._recall(self._last_query, budget)
        return smaller or None


def _session(kwargs: Mapping[str, Any]) -> str | None:
    value = kwargs.get("session_id")
    return str(value) if isinstance(value, str) and value.strip() else None
