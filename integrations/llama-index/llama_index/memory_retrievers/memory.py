"""``RecallMemory``: agent memory that keeps the recent chat and adds recalled long-term memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory.types import BaseMemory
from pydantic import Field

from memory_retrievers import LLM as MemoryLLM
from memory_retrievers import ConfigError, Memory, MemoryRetriever, RecallConfig
from memory_retrievers.integration import (
    ADAPTER_MODEL_CONFIG,
    AdapterChannels,
    AdapterModel,
    check_arguments,
    query_text,
    run_sync,
)

from ._messages import from_memories
from .bridges import to_memory_llm
from .chat_store import MemoryChatStore
from .memory_block import latest_query, window_texts

__all__ = ["RecallMemory"]

_Count = Annotated[int, Field(strict=True, ge=1)]
_Budget = Annotated[int, Field(strict=True, ge=0)]


class RecallMemory(AdapterModel, BaseMemory):
    """Memory for LlamaIndex agents and chat engines that take ``memory=``.

    ``get`` returns a system message with the long-term memories recalled for the latest user
    input (from every past session of the namespace, this session's recent turns excluded),
    followed by the recent chat of this session within ``token_limit``. The chat is persisted in a
    :class:`MemoryChatStore` on the same LanceDB table, so it survives restarts and its turns become
    recallable memories. ``set`` replaces the session in one commit (a message the store rejects
    leaves the old chat). ``reset`` clears this session's chat, never the long-term memories: its
    messages stay memories that later recalls find; ``forget_session`` deletes them.

    Every field can be reassigned (checked like the constructor's). The chat store is built on the
    current store and namespace at each use, and recall goes through one core retriever that each
    call names the current namespace to, so a copy re-pointed at another namespace reads that one
    only. ``k`` and ``recall_token_budget`` default to the recall config's (as every adapter's: 10
    memories, 2,000 tokens unless ``recall_config`` says otherwise). The wiring (field checks,
    copies, serialisation) is :class:`memory_retrievers.integration.AdapterModel`'s. Unknown arguments raise
    :class:`~memory_retrievers.ConfigError` naming the valid ones. ``to_dict``/``to_json``/
    ``from_dict``/``from_json`` and ``pickle`` round-trip it (the store as its spec) when ``llm``,
    ``former`` and ``channels`` are ``None``. ``channels`` adds recall channels of your own
    (:class:`~memory_retrievers.Channel`) to the built-in ones; ``recall_config``'s weights may name them.

    Example:
        .. code-block:: python

            memory = RecallMemory.from_defaults(store=store, namespace="alice", session_id="chat-1")
            agent = FunctionAgent(tools=[...], llm=llm)
            await agent.run("Where do I live?", memory=memory)
    """

    model_config = ADAPTER_MODEL_CONFIG  # BaseComponent's config would win otherwise

    namespace: str = Field(description="Whose memories.")
    session_id: str = Field(default="default", description="This conversation (the chat store key).")
    token_limit: _Count = Field(default=3000, description="Token limit of the recent chat returned by get().")
    k: _Count | None = Field(default=None, description="Maximum recalled memories (None: recall_config.k).")
    recall_token_budget: _Budget | Literal["config"] = Field(
        default="config", description="Token budget of the recalled block ('config': recall_config.token_budget)."
    )
    recall_config: RecallConfig | None = Field(default=None, description="Recall settings (or a dict of them).")
    channels: AdapterChannels = None
    llm: Any = Field(default=None, description="Optional LlamaIndex LLM for expansion/HyDE.")
    former: Any = Field(
        default=None,
        description="Optional MemoryFormer of the same store: each stored message batch is handed to it in "
        "the background (form_later), so facts are extracted off the hot path.",
    )
    header: str = Field(
        default="Long-term memory about the user (recalled; may be outdated):",
        description="Text before the recalled memories in the system message.",
    )

    @classmethod
    def convert_llm(cls, llm: Any) -> MemoryLLM | None:
        """A framework model (wrapped) or anything the core accepts, as a core LLM."""
        return to_memory_llm(llm)

    extra_arguments = ("class_name",)  # LlamaIndex's to_dict writes it; from_dict passes it back

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The fields as JSON-friendly data (the store as its spec); ``from_dict`` reopens it.

        Raises:
            ConfigError: ``llm`` or ``former`` is set, or the store's embedder cannot be rebuilt from its name.
        """
        self.serialisable_state()  # raises ConfigError for an llm, a former or an embedder that cannot be rebuilt
        return super().to_dict(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name."""
        return "RecallMemory"

    @classmethod
    def from_defaults(cls, chat_history: Sequence[ChatMessage] | None = None, **kwargs: Any) -> RecallMemory:
        """Build from keyword arguments (``store``, ``namespace``, ``session_id``, ``token_limit``...).

        Args:
            chat_history: Messages that become this session's chat (replacing any stored ones, as
                LlamaIndex's ``ChatMemoryBuffer.from_defaults`` does).
            **kwargs: The fields.

        Raises:
            ConfigError: ``store`` or ``namespace`` missing, or an unknown argument.
        """
        check_arguments("RecallMemory.from_defaults", kwargs, [*cls.model_fields, "chat_history"])
        if "store" not in kwargs or "namespace" not in kwargs:
            raise ConfigError("RecallMemory.from_defaults needs store= and namespace=")
        memory = cls(**kwargs)
        if chat_history is not None:
            memory.set(list(chat_history))
        return memory

    @property
    def chat_store(self) -> MemoryChatStore:
        """Where this memory keeps the chat: this namespace's sessions (built on the current fields)."""
        return MemoryChatStore(store=self.store, namespace=self.namespace)

    @property
    def memory_retriever(self) -> MemoryRetriever:
        """A core retriever reading this memory's namespace, on its current settings."""
        return self.recall_binding().bound(self.namespace)

    # ------------------------------------------------------------------ async (the implementation)
    def _recent(self, memories: list[Memory]) -> list[Memory]:
        """The newest messages within ``token_limit`` (always at least the last one)."""
        counter = self.recall_binding().token_counter
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
        recent_memories = self._recent(await self.chat_store.amemories(self.session_id))
        recent = from_memories(recent_memories)
        binding = self.recall_binding()
        limit = binding.config.query.max_query_chars
        query = query_text(input, limit) if input and input.strip() else latest_query(recent, limit)
        if query is None:
            return recent
        # This session's recent turns are already in the prompt (and so is the input): recall past
        # them, not them, by id and by what they say.
        asked = [ChatMessage(role=MessageRole.USER, content=input)] if input and input.strip() else []
        result = await binding.arecall(
            query,
            namespace=self.namespace,
            k=self.k,
            token_budget=self.recall_token_budget,
            exclude_ids={m.id for m in recent_memories},
            exclude_texts=[m.text for m in recent_memories] + window_texts(asked, self.store.config.max_text_chars),
        )
        lines = [m.line for m in result.memories]
        if not lines:
            return recent
        system = ChatMessage(role=MessageRole.SYSTEM, content="\n".join([self.header, *lines]))
        return [system, *recent]

    async def aget_all(self) -> list[ChatMessage]:
        """Every message of this session."""
        return await self.chat_store.aget_messages(self.session_id)

    async def aput(self, message: ChatMessage) -> None:
        """Add a message to the chat (and so to the long-term memories)."""
        await self.aput_messages([message])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Add messages in one commit (then, with a ``former``, form memories from them in the background)."""
        stored = await self.chat_store.astore_messages(self.session_id, messages)
        if self.former is not None and stored:
            self.former.form_later(stored, namespace=self.namespace, session_id=self.session_id)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace this session's chat."""
        await self.chat_store.aset_messages(self.session_id, messages)

    async def areset(self) -> None:
        """Clear this session's chat; its messages stay long-term memories.

        See :meth:`MemoryChatStore.adelete_messages`; :meth:`aforget_session` deletes them.
        """
        await self.chat_store.adelete_messages(self.session_id)

    async def aforget_session(self) -> int:
        """Delete this session's messages for good (the chat and the memories); returns how many."""
        return await self.chat_store.aforget_messages(self.session_id)

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

    def forget_session(self) -> int:
        """Sync twin of :meth:`aforget_session`."""
        return run_sync(self.aforget_session())
