"""Any LangChain ``Embeddings`` as the store's :class:`~memory_retrievers.Embedder`."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from memory_retrievers import ConfigError
from memory_retrievers.integration import WrappedEmbedder

__all__ = ["LangChainEmbedder"]


def _model_id(embeddings: Embeddings) -> str | None:
    for attr in ("model", "model_name", "model_id", "deployment"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


class LangChainEmbedder(WrappedEmbedder):
    """Wrap a LangChain ``Embeddings`` (OpenAI, Ollama, HuggingFace...) for the store.

    Vectors are L2-normalised (recall uses cosine similarity). The store records ``name`` and
    ``dimension`` in the table and refuses to reopen it with another model, so keep ``name`` stable.

    Args:
        embeddings: The LangChain embeddings object.
        name: Recorded in the table; default ``langchain:<class>:<model>``.
        dimension: Vector width; when omitted, one probe text is embedded on first use to learn it.

    Raises:
        ConfigError: ``embeddings`` is not a LangChain ``Embeddings`` or ``dimension`` is invalid.
    """

    def __init__(self, embeddings: Embeddings, *, name: str | None = None, dimension: int | None = None) -> None:
        if not isinstance(embeddings, Embeddings):
            raise ConfigError(f"embeddings must be a LangChain Embeddings, got {type(embeddings).__name__}")
        self._embeddings = embeddings
        if name is None:
            model = _model_id(embeddings)
            name = f"langchain:{type(embeddings).__name__}" + (f":{model}" if model else "")
        super().__init__(name=name, dimension=dimension)

    @property
    def embeddings(self) -> Embeddings:
        """The wrapped LangChain embeddings."""
        return self._embeddings

    def _raw_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embeddings.embed_documents(texts)

    def _raw_query(self, text: str) -> list[float]:
        return self._embeddings.embed_query(text)

    async def _araw_documents(self, texts: list[str]) -> list[list[float]]:
        return await self._embeddings.aembed_documents(texts)

    async def _araw_query(self, text: str) -> list[float]:
        return await self._embeddings.aembed_query(text)
