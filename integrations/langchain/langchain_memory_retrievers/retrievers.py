"""``RecallRetriever``: the memory-retrievers recall pipeline as a LangChain ``BaseRetriever``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.load.serializable import Serializable
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from memory_retrievers import (
    ConfigError,
    InvalidInputError,
    MemoryFilter,
    MemoryRetriever,
    MemoryStore,
    RecallConfig,
    RecallResult,
    Reranker,
)
from memory_retrievers.integration import (
    check_arguments,
    check_store_key,
    coerce_filter,
    deepcopy_memo,
    is_store_spec,
    open_store,
    register,
    store_spec,
    validated,
)

from ._documents import to_documents
from .llms import child_callbacks, to_memory_llm

__all__ = ["RecallRetriever"]

#: An int where an int is meant: ``True`` is not 1 here.
_Count = Annotated[int, Field(strict=True, ge=1)]
_Budget = Annotated[int, Field(strict=True, ge=0)]


def _restore(cls: type[RecallRetriever], state: dict[str, Any]) -> RecallRetriever:
    """Unpickle: rebuild from the fields (the store from its spec)."""
    return cls(**state)


class RecallRetriever(BaseRetriever):
    """Recall a user's long-term memories with the full memory-retrievers pipeline.

    Fused vector/BM25/entity/recency/link channels, decay and priority scoring, then token-budgeted
    MMR selection.

    Every document's ``id`` is the memory id; ``metadata`` holds the memory's fields, its ``score``
    (higher is better; it orders one recall and means nothing across queries), its ``relevance``
    (cosine similarity to the query in [0, 1], comparable across queries: filter on it, or set
    ``recall_config={"min_relevance": ...}``) and an ``explanation`` of how the score was made.

    Per call, ``invoke``/``ainvoke`` accept ``k``, ``token_budget``, ``recall_config`` (a dict of
    :class:`~memory_retrievers.RecallConfig` overrides), ``project``, ``topic``, ``explain``, ``now``,
    ``exclude_ids`` (memory ids already in the prompt, e.g. the chat turns) and any
    :class:`~memory_retrievers.MemoryFilter` field (``kinds``, ``tags_any``, ``session_ids``,
    ``created_after``...); per-call filters are combined with :attr:`filters` (per-call wins).

    One retriever can serve many users: build it with ``namespace=None`` and make the namespace a
    configurable field (``retriever.configurable_fields(namespace=ConfigurableField(id="user_id"))``),
    then each call names its user in ``config={"configurable": {"user_id": ...}}``. A call that names
    none raises instead of falling back to a shared namespace.

    Every field can be changed (assignment, ``model_copy(update=...)``, configurable fields): the
    core retriever is rebuilt from the current fields whenever one it was built from changed.
    Unknown constructor arguments raise :class:`~memory_retrievers.ConfigError` naming the valid ones.
    ``pickle``, ``copy.deepcopy`` (the copy shares the store) and LangChain's ``dumps``/``loads``
    round-trip it; the store is saved as its spec (uri, table, embedder, config) and reopened, or the
    live store of the process is reused.

    Example:
        .. code-block:: python

            from memory_retrievers import MemoryStore
            from langchain_memory_retrievers import RecallRetriever

            retriever = RecallRetriever(store=MemoryStore("./memories"), namespace="alice", k=5)
            docs = retriever.invoke("which theme does she like?", kinds=["preference"])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True, extra="forbid")

    store: MemoryStore
    """The memory store to recall from."""
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

    # The core retriever and the field values it was built from (compared by identity).
    _built: tuple[tuple[Any, ...], MemoryRetriever] | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        check_arguments("RecallRetriever", data, type(self).model_fields)
        super().__init__(**data)

    @field_validator("store", mode="before")
    @classmethod
    def _reopen(cls, value: Any) -> Any:
        return open_store(value) if is_store_spec(value) else value

    @field_validator("recall_config", mode="before")
    @classmethod
    def _config(cls, value: Any) -> Any:
        # Frozen once validated: an edit in place cannot leave the core retriever out of date.
        return None if value is None else validated(RecallConfig, value, "RecallConfig")

    @field_validator("filters", mode="before")
    @classmethod
    def _filters(cls, value: Any) -> Any:
        return None if value is None else coerce_filter(value)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A field validator, not a model one: it runs before an assignment lands, so a rejected
        # namespace leaves the retriever as it was.
        store = info.data.get("store")
        if value is None or not isinstance(store, MemoryStore):
            return value
        return check_store_key(value, field="namespace", store=store)

    @field_validator("llm")
    @classmethod
    def _llm(cls, value: Any) -> Any:
        to_memory_llm(value)  # raises ConfigError for what cannot drive expansion/HyDE
        return value

    @model_validator(mode="after")
    def _register(self) -> RecallRetriever:
        register(self.store)
        return self

    def _core(self) -> MemoryRetriever:
        """The core retriever of the current fields, rebuilt when one it was built from changed."""
        namespace = self.namespace
        if namespace is None:
            raise InvalidInputError(
                "this RecallRetriever has no namespace: build it with namespace='...', or make the namespace "
                "configurable (retriever.configurable_fields(namespace=ConfigurableField(id='user_id'))) and "
                "invoke it with config={'configurable': {'user_id': ...}}"
            )
        inputs = (self.store, namespace, self.recall_config, self.llm, self.reranker)
        built = self._built
        if built is not None and all(a is b for a, b in zip(built[0], inputs, strict=True)):
            return built[1]
        recaller = MemoryRetriever(
            self.store,
            namespace=check_store_key(namespace, field="namespace", store=self.store),  # model_copy skips validators
            config=self.recall_config,
            llm=to_memory_llm(self.llm),
            reranker=self.reranker,
        )
        self._built = (inputs, recaller)
        return recaller

    @property
    def memory_retriever(self) -> MemoryRetriever:
        """The core retriever doing the work (for ``recall()`` with a context block)."""
        return self._core()

    # ------------------------------------------------------------------ copies and serialisation
    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> RecallRetriever:
        # The store is a handle on a table: a copy uses the same one (copying it would fail, and a
        # second handle would not see this one's writes).
        return super().__deepcopy__(deepcopy_memo(memo, self.store, self._built))

    def _state(self) -> dict[str, Any]:
        if self.reranker is not None:
            raise ConfigError(
                "a RecallRetriever with a reranker cannot be serialised (a reranker holds a model); "
                "rebuild it with the reranker instead"
            )
        state = {name: getattr(self, name) for name in type(self).model_fields}
        state["store"] = store_spec(self.store, "RecallRetriever")
        return state

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self._state()))

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
        state = self._state()
        attributes: dict[str, Any] = {"store": state["store"]}
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
        """Core ``recall`` arguments: this retriever's defaults, overridden by the call's."""
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
        return self._core().recall(query, **self._call_args(dict(kwargs)))

    async def arecall(self, query: str, **kwargs: Any) -> RecallResult:
        """Async twin of :meth:`recall`."""
        return await self._core().arecall(query, **self._call_args(dict(kwargs)))

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
