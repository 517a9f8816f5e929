"""``RecallRetriever``: the memory-retrievers recall pipeline as a LangChain ``BaseRetriever``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.load.serializable import Serializable
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import Field

from memory_retrievers import LLM as MemoryLLM
from memory_retrievers import (
    ConfigError,
    InvalidInputError,
    MemoryFilter,
    MemoryRetriever,
    RecallConfig,
    RecallResult,
    Reranker,
)
from memory_retrievers.integration import ADAPTER_MODEL_CONFIG, AdapterChannels, AdapterModel, coerce_filter

from ._documents import to_documents
from .llms import child_callbacks, to_memory_llm

__all__ = ["RecallRetriever"]

#: An int where an int is meant: ``True`` is not 1 here.
_Count = Annotated[int, Field(strict=True, ge=1)]
_Budget = Annotated[int, Field(strict=True, ge=0)]


def _restore(cls: type[RecallRetriever], state: dict[str, Any]) -> RecallRetriever:
    """Unpickle what an earlier version pickled (it named this function): rebuild from the fields."""
    return cls(**state)


class RecallRetriever(AdapterModel, BaseRetriever):
    """Recall a user's long-term memories with the full memory-retrievers pipeline.

    Fused vector/BM25/entity/recency/link channels, decay and priority scoring, then token-budgeted
    MMR selection.

    Every document's ``id`` is the memory id; ``metadata`` holds the memory's fields, its ``score``
    (higher is better; it orders one recall and means nothing across queries), its ``relevance``
    (cosine similarity to the query in [0, 1], comparable across queries: filter on it, or set
    ``recall_config={"relevance": {"min_relevance": ...}}``) and an ``explanation`` of how the score was made.

    Per call, ``invoke``/``ainvoke`` accept ``k``, ``token_budget``, ``recall_config`` (a dict of
    :class:`~memory_retrievers.RecallConfig` overrides), ``project``, ``topic``, ``explain``, ``now``,
    ``exclude_ids`` (memory ids already in the prompt, e.g. the chat turns) and any
    :class:`~memory_retrievers.MemoryFilter` field (``kinds``, ``tags_any``, ``session_ids``,
    ``created_after``...); per-call filters are combined with :attr:`filters` (per-call wins).

    One retriever can serve many users: build it with ``namespace=None`` and make the namespace a
    configurable field (``retriever.configurable_fields(namespace=ConfigurableField(id="user_id"))``),
    then each call names its user in ``config={"configurable": {"user_id": ...}}``. A call that names
    none raises instead of falling back to a shared namespace.

    Every field can be changed (assignment, ``model_copy(update=...)``, configurable fields). Recall
    goes through one core retriever that each call names its namespace to, so a copy re-pointed at
    another namespace reads that namespace only; it is rebuilt when the store, ``recall_config``,
    ``llm``, ``reranker`` or ``channels`` changed. The wiring (field checks, copies, serialisation) is
    :class:`memory_retrievers.integration.AdapterModel`'s. Unknown constructor arguments raise
    :class:`~memory_retrievers.ConfigError` naming the valid ones.
    ``pickle``, ``copy.deepcopy`` (the copy shares the store) and LangChain's ``dumps``/``loads``
    round-trip it; the store is saved as its spec (uri, table, embedder, config) and reopened, or the
    live store of the process is reused. A retriever with a ``reranker`` or ``channels`` (code, not
    data) refuses to serialise: rebuild it with them instead.

    ``channels`` adds recall channels of your own (:class:`~memory_retrievers.Channel`) to the
    built-in ones, as ``MemoryRetriever(store, channels=[...])`` does; ``recall_config``'s weights
    may name them (``{"weights": {"order": 3.0}}``).

    Example:
        .. code-block:: python

            from memory_retrievers import MemoryStore
            from langchain_memory_retrievers import RecallRetriever

            retriever = RecallRetriever(store=MemoryStore("./memories"), namespace="alice", k=5)
            docs = retriever.invoke("which theme does she like?", kinds=["preference"])
    """

    model_config = ADAPTER_MODEL_CONFIG  # BaseRetriever's own config ("extra": "ignore") would win

    namespace: str | None
    """Whose memories (the user or tenant). Recall never returns another namespace's memories.
    ``None``: set per call through a configurable field (see the class docstring)."""
    k: _Count | None = None
    """Maximum documents returned (``None``: ``recall_config.k``, 10 by default)."""
    token_budget: _Budget | Literal["config"] | None = "config"
    """Maximum tokens of the recalled memories as a context block: ``"config"`` takes
    ``recall_config.token_budget`` (2000 by default), ``None`` means unlimited."""
    recall_config: RecallConfig | None = None
    """Recall settings (weights, decay, MMR, expansion...); a dict is validated into a RecallConfig."""
    filters: MemoryFilter | None = None
    """Metadata prefilter applied to every call (e.g. ``{"kinds": ["fact", "preference"]}``)."""
    project: str | None = None
    """The caller's project: same-project memories are boosted, others penalised."""
    topic: str | None = None
    """The caller's topic: memories of another topic are penalised."""
    llm: Any = None
    """A LangChain chat model / LLM / Runnable (or a core ``LLM``) for query expansion and HyDE."""
    reranker: Reranker | None = None
    """Optional reranker blended with the fused score."""
    channels: AdapterChannels = None
    """Recall channels of your own (:class:`~memory_retrievers.Channel`), added to the built-in ones."""

    @classmethod
    def convert_llm(cls, llm: Any) -> MemoryLLM | None:
        """A framework model (wrapped) or anything the core accepts, as a core LLM."""
        return to_memory_llm(llm)

    #: A reranker holds a model, a channel is code: neither is data to serialise.
    unserialisable = ("reranker", "channels")

    def _namespace_now(self) -> str:
        """This call's namespace: the field (set per call through a configurable field, or fixed)."""
        if self.namespace is None:
            raise InvalidInputError(
                "this RecallRetriever has no namespace: build it with namespace='...', or make the namespace "
                "configurable (retriever.configurable_fields(namespace=ConfigurableField(id='user_id'))) and "
                "invoke it with config={'configurable': {'user_id': ...}}"
            )
        return self.namespace

    @property
    def memory_retriever(self) -> MemoryRetriever:
        """A core retriever reading this retriever's namespace (for ``recall()`` with a context block).

        Recall itself goes through one shared core retriever that every call names its namespace
        to; this one is built on the same settings with the namespace as its default.
        """
        return self.recall_binding().bound(self._namespace_now())

    # ------------------------------------------------------------------ LangChain serialisation
    @classmethod
    def is_lc_serializable(cls) -> bool:
        """LangChain's ``dumps``/``loads`` round-trip it (``valid_namespaces=["langchain_memory_retrievers"]``)."""
        return True

    @property
    def lc_attributes(self) -> dict[str, Any]:
        """The JSON forms of the fields that are not JSON themselves (the store as its spec)."""
        if self.llm is not None and not (isinstance(self.llm, Serializable) and self.llm.is_lc_serializable()):
            raise ConfigError(
                f"this RecallRetriever's llm ({type(self.llm).__name__}) is not LangChain-serialisable, so the "
                "retriever cannot be; rebuild it with the llm instead"
            )
        attributes: dict[str, Any] = {"store": self.serialisable_state()["store"]}
        if self.recall_config is not None:
            attributes["recall_config"] = self.recall_config.model_dump(mode="json")
        if self.filters is not None:
            attributes["filters"] = self.filters.model_dump(mode="json", exclude_unset=True)
        return attributes

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "lancedb"
        params["ls_embedding_provider"] = type(self.store.embedder).__name__
        params["ls_embedding_model"] = self.store.embedder.name
        return params

    def _call_args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Core ``recall`` arguments: this retriever's defaults, overridden by the call's.

        Raises:
            InvalidInputError: The call names a ``namespace`` (whose memories a call reads is the
                ``namespace`` field's to say, so a caller's keyword cannot reach another tenant).
        """
        if "namespace" in kwargs:
            raise InvalidInputError(
                "namespace is not a per-call argument of RecallRetriever: make the namespace a configurable field "
                "(retriever.configurable_fields(namespace=ConfigurableField(id='user_id'))) and invoke with "
                "config={'configurable': {'user_id': ...}}"
            )
        out: dict[str, Any] = {
            "k": self.k,
            "token_budget": self.token_budget,
            "project": self.project,
            "topic": self.topic,
            **coerce_filter(self.filters).model_dump(exclude_unset=True),
        }
        if "recall_config" in kwargs:
            out["config"] = kwargs.pop("recall_config")
        # Anything else is a filter field or a typo; the core names the valid keys for a typo.
        out.update(kwargs)
        return out

    def recall(self, query: str, **kwargs: Any) -> RecallResult:
        """The full :class:`~memory_retrievers.RecallResult` (with ``to_context()``), same arguments."""
        return self.recall_binding().recall(query, namespace=self._namespace_now(), **self._call_args(dict(kwargs)))

    async def arecall(self, query: str, **kwargs: Any) -> RecallResult:
        """Async twin of :meth:`recall`."""
        namespace = self._namespace_now()
        return await self.recall_binding().arecall(query, namespace=namespace, **self._call_args(dict(kwargs)))

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
