"""Any LlamaIndex ``LLM`` or ``BaseEmbedding`` inside the memory-retrievers core."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

from memory_retrievers import LLM as MemoryLLM
from memory_retrievers import ConfigError
from memory_retrievers.integration import WrappedEmbedder, as_llm

__all__ = ["LlamaIndexEmbedder", "LlamaIndexLLM", "to_memory_llm"]


class LlamaIndexLLM:
    """Wrap a LlamaIndex ``LLM`` (OpenAI, Ollama, ``MockLLM``...) for query expansion and HyDE.

    Raises:
        ConfigError: ``llm`` is not a LlamaIndex ``LLM``.
    """

    def __init__(self, llm: LLM) -> None:
        if not isinstance(llm, LLM):
            raise ConfigError(f"llm must be a LlamaIndex LLM, got {type(llm).__name__}")
        self._llm = llm

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self._llm).__name__})"

    def complete(self, prompt: str) -> str:
        """``llm.complete(prompt).text``."""
        return str(self._llm.complete(prompt).text)

    async def acomplete(self, prompt: str) -> str:
        """Natively async: ``await llm.acomplete(prompt)``."""
        return str((await self._llm.acomplete(prompt)).text)


def to_memory_llm(llm: Any) -> MemoryLLM | None:
    """Accept ``None``, a LlamaIndex ``LLM`` (wrapped), or anything the core accepts."""
    if isinstance(llm, LLM):
        return LlamaIndexLLM(llm)
    return as_llm(llm)


class LlamaIndexEmbedder(WrappedEmbedder):
    """Wrap a LlamaIndex ``BaseEmbedding`` as the store's embedder (rows L2-normalised).

    The store records ``name`` and ``dimension`` in the table and refuses to reopen it with another
    model, so keep ``name`` stable.

    Args:
        embed_model: The LlamaIndex embedding model.
        name: Recorded in the table; default ``llama-index:<class>:<model_name>``.
        dimension: Vector width; probed with one text on first use when omitted.
    """

    def __init__(self, embed_model: BaseEmbedding, *, name: str | None = None, dimension: int | None = None) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise ConfigError(f"embed_model must be a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}")
        self._model = embed_model
        super().__init__(
            name=name or f"llama-index:{type(embed_model).__name__}:{embed_model.model_name}", dimension=dimension
        )

    @property
    def embed_model(self) -> BaseEmbedding:
        """The wrapped model."""
        return self._model

    def _raw_documents(self, texts: list[str]) -> list[list[float]]:
        return self._model.get_text_embedding_batch(texts)

    def _raw_query(self, text: str) -> list[float]:
        return self._model.get_query_embedding(text)

    async def _araw_documents(self, texts: list[str]) -> list[list[float]]:
        return await self._model.aget_text_embedding_batch(texts)

    async def _araw_query(self, text: str) -> list[float]:
        return await self._model.aget_query_embedding(text)
