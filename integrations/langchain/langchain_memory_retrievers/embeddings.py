"""Any LangChain ``Embeddings`` as the store's :class:`~memory_retrievers.Embedder`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from memory_retrievers import ConfigError
from memory_retrievers.embeddings import unit_rows

__all__ = ["LangChainEmbedder"]

_PROBE = "dimension probe"


def _model_id(embeddings: Embeddings) -> str | None:
    for attr in ("model", "model_name", "model_id", "deployment"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


class LangChainEmbedder:
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
        if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1):
            raise ConfigError(f"dimension must be a positive int, got {dimension!r}")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigError(f"name must be a non-empty str, got {name!r}")
        self._embeddings = embeddings
        model = _model_id(embeddings)
        self._name = name or f"langchain:{type(embeddings).__name__}" + (f":{model}" if model else "")
        self._dimension = dimension

    def __repr__(self) -> str:
        return f"LangChainEmbedder(name={self._name!r})"

    @property
    def embeddings(self) -> Embeddings:
        """The wrapped LangChain embeddings."""
        return self._embeddings

    @property
    def name(self) -> str:
        """The model name recorded in the table."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector width (probed once if it was not given)."""
        if self._dimension is None:
            self._dimension = int(unit_rows(self._embeddings.embed_query(_PROBE), source=self._name).shape[1])
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored texts with ``Embeddings.embed_documents``."""
        return unit_rows(self._embeddings.embed_documents(list(texts)), source=self._name)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a query with ``Embeddings.embed_query``."""
        row: np.ndarray = unit_rows(self._embeddings.embed_query(text), source=self._name)[0]
        return row

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Natively async when the embeddings implement ``aembed_documents``."""
        return unit_rows(await self._embeddings.aembed_documents(list(texts)), source=self._name)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Natively async when the embeddings implement ``aembed_query``."""
        row: np.ndarray = unit_rows(await self._embeddings.aembed_query(text), source=self._name)[0]
        return row
