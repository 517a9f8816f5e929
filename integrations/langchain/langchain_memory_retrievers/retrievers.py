"""``RecallRetriever``: the memory-retrievers recall pipeline as a LangChain ``BaseRetriever``."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from memory_retrievers import MemoryFilter, MemoryRetriever, MemoryStore, RecallConfig, RecallResult, Reranker
from memory_retrievers.integration import coerce_filter

from ._documents import to_documents
from .llms import child_callbacks, to_memory_llm

__all__ = ["RecallRetriever"]


class RecallRetriever(BaseRetriever):
    """Recall a user's long-term memories with the full memory-retrievers pipeline.

    Fused vector/BM25/entity/recency/link channels, decay and priority scoring, then token-budgeted
    MMR selection.

    Every document's ``id`` is the memory id; ``metadata`` holds the memory's fields, its ``score``
    (higher is better) and an ``explanation`` of how the score was made.

    Per call, ``invoke``/``ainvoke`` accept ``k``, ``token_budget``, ``recall_config`` (a dict of
    :class:`~memory_retrievers.RecallConfig` overrides), ``project``, ``topic``, ``explain``, ``now``,
    ``exclude_ids`` (memory ids already in the prompt, e.g. the chat turns) and any
    :class:`~memory_retrievers.MemoryFilter` field (``kinds``, ``tags_any``, ``session_ids``,
    ``created_after``...); per-call filters are combined with :attr:`filters` (per-call wins).

    Example:
        .. code-block:: python

            from memory_retrievers import MemoryStore
            from langchain_memory_retrievers import RecallRetriever

            retriever = RecallRetriever(store=MemoryStore("./memories"), namespace="alice", k=5)
            docs = retriever.invoke("which theme does she like?", kinds=["preference"])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore
    """The memory store to recall from."""
    namespace: str
    """Whose memories (the user or tenant). Recall never returns another namespace's memories."""
    k: int | None = Field(default=None, ge=1)
    """Maximum documents returned (``None``: ``recall_config.k``, 10 by default)."""
    token_budget: int | Literal["config"] | None = "config"
    """Maximum tokens of the recalled memories as a context block: ``"config"`` takes
    ``recall_config.token_budget`` (2000 by default), ``None`` means unlimited."""
    recall_config: RecallConfig | dict[str, Any] | None = None
    """Recall settings (weights, decay, MMR, expansion...); a dict is validated into a RecallConfig."""
    filters: MemoryFilter | dict[str, Any] | None = None
    """Metadata prefilter applied to every call (e.g. ``{"kinds": ["fact", "preference"]}``)."""
    project: str | None = None
    """The caller's project: same-project memories are boosted, others penalised."""
    topic: str | None = None
    """The caller's topic: memories of another topic are penalised."""
    llm: Any = None
    """A LangChain chat model / LLM / Runnable (or a core ``LLM``) for query expansion and HyDE."""
    reranker: Reranker | None = None
    """Optional reranker blended with the fused score."""

    _recaller: MemoryRetriever = PrivateAttr()
    _filter: MemoryFilter = PrivateAttr()

    @model_validator(mode="after")
    def _build(self) -> RecallRetriever:
        # Validation errors of the core (ConfigError, InvalidInputError) are ValueErrors, so
        # pydantic reports them as a ValidationError naming the problem.
        self._filter = coerce_filter(self.filters)
        self._recaller = MemoryRetriever(
            self.store,
            namespace=self.namespace,
            config=self.recall_config,
            llm=to_memory_llm(self.llm),
            reranker=self.reranker,
        )
        return self

    @property
    def memory_retriever(self) -> MemoryRetriever:
        """The core retriever doing the work (for ``recall()`` with a context block)."""
        return self._recaller

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "lancedb"
        params["ls_embedding_provider"] = type(self.store.embedder).__name__
        params["ls_embedding_model"] = self.store.embedder.name
        return params

    def _call_args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Core ``recall`` arguments: this retriever's defaults, overridden by the call's."""
        out: dict[str, Any] = {
            "k": self.k,
            "token_budget": self.token_budget,
            "project": self.project,
            "topic": self.topic,
            **self._filter.model_dump(exclude_unset=True),
        }
        if "recall_config" in kwargs:
            out["config"] = kwargs.pop("recall_config")
        # Anything else is a filter field or a typo; the core names the valid keys for a typo.
        out.update(kwargs)
        return out

    def recall(self, query: str, **kwargs: Any) -> RecallResult:
        """The full :class:`~memory_retrievers.RecallResult` (with ``to_context()``), same arguments."""
        return self._recaller.recall(query, **self._call_args(dict(kwargs)))

    async def arecall(self, query: str, **kwargs: Any) -> RecallResult:
        """Async twin of :meth:`recall`."""
        return await self._recaller.arecall(query, **self._call_args(dict(kwargs)))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        with child_callbacks(run_manager.get_child()):
            return to_documents(self.recall(query, **kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        with child_callbacks(run_manager.get_child()):
            return to_documents(await self.arecall(query, **kwargs))
