"""``RecallMemory``: agent memory that keeps the recent chat and adds recalled long-term memories."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory.types import BaseMemory
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from memory_retrievers import ConfigError, Memory, MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.integration import query_text, render_line, run_sync

from ._messages import from_memories
from .bridges import to_memory_llm
from .chat_store import MemoryChatStore
from .memory_block import latest_query

__all__ = ["RecallMemory"]


class RecallMemory(BaseMemory):
    """Memory for LlamaIndex agents and chat engines that take ``memory=``.

    ``get`` returns a system message with the long-term memories recalled for the latest user
    input (from every past session of the namespace, this session's recent turns excluded),
    followed by the recent chat of this session within ``token_limit``. The chat is persisted in a
    :class:`MemoryChatStore` on the same LanceDB table, so it survives restarts and its turns become
    recallable memories. ``reset`` clears this session's chat, not the long-term memories.

    Example:
        .. code-block:: python

            memory = RecallMemory.from_defaults(store=store, namespace="alice", session_id="chat-1")
            agent = FunctionAgent(tools=[...], llm=llm)
            await agent.run("Where do I live?", memory=memory)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore = Field(description="The memory store.")
    namespace: str = Field(description="Whose memories.")
    session_id: str = Field(default="default", description="This conversation (the chat store key).")
    token_limit: int = Field(default=3000, ge=1, description="Token limit of the recent chat returned by get().")
    k: int = Field(default=5, ge=1, description="Maximum recalled memories.")
    recall_token_budget: int = Field(default=800, ge=0, description="Token budget of the recalled block.")
    recall_config: RecallConfig | dict[str, Any] | None = None
    llm: Any = Field(default=None, description="Optional LlamaIndex LLM for expansion/HyDE.")
    header: str = "Long-term memory about the user (recalled; may be outdated):"

    _chat: MemoryChatStore = PrivateAttr()
    _recaller: MemoryRetriever = PrivateAttr()

    @model_validator(mode="after")
    def _build(self) -> RecallMemory:
        self._chat = MemoryChatStore(store=self.store, namespace=self.namespace)
        self._recaller = MemoryRetriever(
            self.store, namespace=self.namespace, config=self.recall_config, llm=to_memory_llm(self.llm)
        )
        return self

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name."""
        return "RecallMemory"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> RecallMemory:
        """Build from keyword arguments (``store``, ``namespace``, ``session_id``, ``token_limit``...)."""
        if "store" not in kwargs or "namespace" not in kwargs:
            raise ConfigError("RecallMemory.from_defaults needs store= and namespace=")
        return cls(**kwargs)

    @property
    def chat_store(self) -> MemoryChatStore:
        """Where this memory keeps the chat."""
        return self._chat

    # ------------------------------------------------------------------ async (the implementation)
    def _recent(self, memories: list[Memory]) -> list[Memory]:
        """The newest messages within ``token_limit`` (always at least the last one)."""
        counter = self._recaller.token_counter
        kept: list[Memory] = []
        used = 0
        for memory in reversed(memories):
            used += counter.count(memory.text) + 4  # role and separators
            if used > self.token_limit and kept:
                break
            kept.append(memory)
        kept.reverse()
        # Never start with an assistant or tool answer cut off from its question.
        while len(kept) > 1 and kept[0].metadata.get("role") in ("assistant", "tool"):
            kept.pop(0)
        return kept

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Recalled long-term memories (a system message) and the recent chat."""
        recent_memories = self._recent(await self._chat.amemories(self.session_id))
        recent = from_memories(recent_memories)
        query = input if input and input.strip() else latest_query(recent)
        if query is None:
            return recent
        # This session's recent turns are already in the prompt: recall past them, not them.
        result = await self._recaller.arecall(
            query_text(query),
            k=self.k,
            token_budget=self.recall_token_budget,
            exclude_ids={m.id for m in recent_memories},
        )
        lines = [render_line(m.memory) for m in result.memories]
        if not lines:
            return recent
        system = ChatMessage(role=MessageRole.SYSTEM, content="\n".join([self.header, *lines]))
        return [system, *recent]

    async def aget_all(self) -> list[ChatMessage]:
        """Every message of this session."""
        return await self._chat.aget_messages(self.session_id)

    async def aput(self, message: ChatMessage) -> None:
        """Add a message to the chat (and so to the long-term memories)."""
        await self._chat.async_add_message(self.session_id, message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Add messages in one commit."""
        await self._chat.aadd_messages(self.session_id, messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace this session's chat."""
        await self._chat.aset_messages(self.session_id, messages)

    async def areset(self) -> None:
        """Clear this session's chat (long-term memories of other sessions stay)."""
        await self._chat.adelete_messages(self.session_id)

    # ------------------------------------------------------------------ sync shells
    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Sync twin of :meth:`aget`."""
        return run_sync(self.aget(input, **kwargs))

    def get_all(self) -> list[ChatMessage]:
        """Sync twin of :meth:`aget_all`."""
        return run_sync(self.aget_all())

    def put(self, message: ChatMessage) -> None:
        """Sync twin of :meth:`aput`."""
        run_sync(self.aput(message))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Sync twin of :meth:`aput_messages`."""
        run_sync(self.aput_messages(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        """Sync twin of :meth:`aset`."""
        run_sync(self.aset(messages))

    def reset(self) -> None:
        """Sync twin of :meth:`areset`."""
        run_sync(self.areset())
