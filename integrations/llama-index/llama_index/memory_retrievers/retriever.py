"""``RecallRetriever``: the memory-retrievers recall pipeline as a LlamaIndex ``BaseRetriever``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from memory_retrievers import (
    Channel,
    ConfigError,
    InvalidInputError,
    MemoryFilter,
    MemoryRetriever,
    MemoryStore,
    RecallConfig,
    RecallResult,
    Reranker,
    ScoredMemory,
)
from memory_retrievers.integration import RecallBinding, coerce_filter, run_sync

from .bridges import to_memory_llm

__all__ = ["RecallRetriever", "current_namespace", "to_nodes", "using_namespace"]

_namespace: ContextVar[str | None] = ContextVar("memory_retrievers_llama_index_namespace", default=None)


@contextlib.contextmanager
def using_namespace(namespace: str) -> Iterator[str]:
    """Serve one user: retrievers built with ``namespace=None`` recall ``namespace`` inside this block.

    The choice lives in a context variable, so it follows the code that runs the query (a thread,
    or an asyncio task and what it awaits) and never leaks into a concurrent request: one query
    engine can serve every user, each request naming its own.

    Example:
        .. code-block:: python

            retriever = RecallRetriever(store, namespace=None)
            engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
            with using_namespace(user_id):
                response = engine.query(question)

    Raises:
        InvalidInputError: ``namespace`` is not a non-empty str.
    """
    if not isinstance(namespace, str) or not namespace.strip():
        raise InvalidInputError(f"namespace must be a non-empty str, got {namespace!r}")
    token = _namespace.set(namespace)
    try:
        yield namespace
    finally:
        _namespace.reset(token)


def current_namespace() -> str | None:
    """The namespace set by the innermost :func:`using_namespace` block (``None`` outside one)."""
    return _namespace.get()


# Shown to the LLM with the text, when they say something (an empty list or a None says nothing);
# the rest (ids, session ids, hashes, timestamps to the microsecond, the explanation) stays out of
# prompts. ``date`` is the UTC day the memory was written, as the block's lines date it.
_LLM_METADATA = ("kind", "date", "project", "topic", "tags", "entities", "note")


Score = Literal["calibrated", "relevance"]


def _node(scored: ScoredMemory, score: Score) -> NodeWithScore:
    meta = scored.memory.to_dict()
    meta.pop("text", None)
    meta.pop("vector", None)
    meta["relevance"] = scored.relevance
    meta["explanation"] = scored.explanation.to_dict()
    if scored.note:
        meta["note"] = scored.note  # facts folded into it, contradictions: shown to the LLM
    if scored.excerpt is not None:
        meta["excerpt"] = scored.excerpt  # a long memory's passage holding the query's keywords
    if scored.memory.created_at is not None:
        meta["date"] = scored.memory.created_at.date().isoformat()
    shown = {k for k in _LLM_METADATA if meta.get(k) not in (None, "", [], {})}
    node = TextNode(
        id_=scored.id,
        text=scored.text,
        metadata=meta,
        excluded_llm_metadata_keys=[k for k in meta if k not in shown],
        excluded_embed_metadata_keys=list(meta),
    )
    return NodeWithScore(node=node, score=scored.relevance if score == "relevance" else scored.score)


def to_nodes(result: RecallResult, score: Score = "calibrated") -> list[NodeWithScore]:
    """One ``NodeWithScore`` per recalled memory, best first; ``node.id_`` is the memory id.

    Args:
        result: A recall's result.
        score: What ``NodeWithScore.score`` holds: ``"calibrated"`` (default), the memory's
            calibrated score in [0, 1] (``ScoredMemory.score``: the probability that it answers the
            query, comparable across queries, so ``SimilarityPostprocessor(similarity_cutoff=...)``
            means the same on every query), in recall's order; or ``"relevance"``, the cosine
            similarity to the query in [0, 1], the nodes then sorted by it (highest first), as
            LlamaIndex's postprocessors expect. ``node.metadata["relevance"]`` always holds the
            relevance.

    Raises:
        ConfigError: An unknown ``score``.
    """
    check_score(score)
    nodes = [_node(m, score) for m in result.memories]
    if score == "relevance":
        nodes.sort(key=lambda n: -(n.score or 0.0))
    return nodes


def check_score(score: Any) -> Score:
    """``score`` if it is ``"calibrated"`` or ``"relevance"``, else a ``ConfigError`` naming them."""
    if score == "final":
        raise ConfigError(
            "score='final' is gone: the fused rank score meant nothing across queries. Use score='calibrated' "
            "(the default: in [0, 1], comparable across queries) or score='relevance' (cosine similarity)"
        )
    if score not in ("calibrated", "relevance"):
        raise ConfigError(f"score must be 'calibrated' or 'relevance', got {score!r}")
    return score  # type: ignore[no-any-return]


class RecallRetriever(BaseRetriever):
    """Recall a user's long-term memories with the full memory-retrievers pipeline.

    Fused vector/BM25/entity/recency/link channels, decay and priority scoring, token-budgeted MMR.
    Honours ``QueryBundle.embedding`` and ``custom_embedding_strs`` (so LlamaIndex's
    ``HyDEQueryTransform`` works through it): the vector channel uses that embedding, BM25 the
    query text. Works in ``RetrieverQueryEngine`` and ``QueryFusionRetriever``.

    Args:
        store: The memory store.
        namespace: Whose memories. Recall never returns another namespace's memories. ``None``:
            the namespace of the enclosing :func:`using_namespace` block, per call (a call outside
            one raises), so one retriever and query engine serve many users.
        similarity_top_k: Maximum nodes (``None``: ``recall_config.k``, 10 by default).
        token_budget: Maximum tokens of the recalled memories (``"config"``: the config's; ``None``:
            unlimited).
        recall_config: :class:`~memory_retrievers.RecallConfig` or a dict of its fields.
        filters: Metadata prefilter for every call (``{"kinds": ["fact"]}``...).
        project: The caller's project (boosts same-project memories).
        topic: The caller's topic (penalises other topics).
        llm: A LlamaIndex ``LLM`` (or core LLM) for query expansion and HyDE.
        reranker: Optional core reranker.
        channels: Recall channels of your own (:class:`~memory_retrievers.Channel`), added to the
            built-in ones; ``recall_config``'s weights may name them.
        score: What ``NodeWithScore.score`` holds (see :func:`to_nodes`): ``"calibrated"``
            (default: the calibrated score in [0, 1], comparable across queries, for
            ``SimilarityPostprocessor(similarity_cutoff=...)``) or ``"relevance"`` (cosine
            similarity). To drop memories in recall itself, set
            ``recall_config={"relevance": {"min_score": ...}}``.
        callback_manager: LlamaIndex callbacks.

    Example:
        .. code-block:: python

            retriever = RecallRetriever(MemoryStore("./memories"), namespace="alice", similarity_top_k=5)
            engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        namespace: str | None,
        similarity_top_k: int | None = None,
        token_budget: int | Literal["config"] | None = "config",
        recall_config: RecallConfig | Mapping[str, Any] | None = None,
        filters: MemoryFilter | Mapping[str, Any] | None = None,
        project: str | None = None,
        topic: str | None = None,
        llm: Any = None,
        reranker: Reranker | None = None,
        channels: Sequence[Channel] | None = None,
        score: Score = "calibrated",
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.score: Score = check_score(score)
        if similarity_top_k is not None and (
            isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1
        ):
            raise ConfigError(f"similarity_top_k must be an int >= 1 or None, got {similarity_top_k!r}")
        if token_budget not in ("config", None) and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0
        ):
            raise ConfigError(f"token_budget must be an int >= 0, 'config' or None, got {token_budget!r}")
        # One core retriever for every namespace, built now (a bad config, reranker or channel fails
        # here): each query names the namespace it reads.
        self._binding = RecallBinding(
            store, config=recall_config, llm=llm, reranker=reranker, channels=channels, to_llm=to_memory_llm
        )
        self.namespace = namespace
        self._filter = coerce_filter(filters)
        self.similarity_top_k = similarity_top_k
        self.token_budget = token_budget
        self.project = project
        self.topic = topic
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def __repr__(self) -> str:
        return f"RecallRetriever(namespace={self._namespace!r}, store={self.store!r})"

    @property
    def namespace(self) -> str | None:
        """Whose memories (``None``: the enclosing :func:`using_namespace` block's, per call)."""
        return self._namespace

    @namespace.setter
    def namespace(self, value: str | None) -> None:
        self._namespace = None if value is None else self._binding.key(value)

    def _namespace_now(self) -> str:
        """This query's namespace: the retriever's, else the enclosing :func:`using_namespace` block's.

        Read in the caller's context (the block is a context variable), never on the core's loop thread.

        Raises:
            InvalidInputError: ``namespace`` is ``None`` and no :func:`using_namespace` block is active.
        """
        if self._namespace is not None:
            return self._namespace
        namespace = current_namespace()
        if namespace is None:
            raise InvalidInputError(
                "this RecallRetriever has no namespace: build it with namespace='...', or run the query inside "
                "`with using_namespace(user_id):`"
            )
        return self._binding.key(namespace)

    @property
    def memory_retriever(self) -> MemoryRetriever:
        """A core retriever reading this call's namespace (for ``recall()`` with a context block).

        Raises:
            InvalidInputError: ``namespace`` is ``None`` and no :func:`using_namespace` block is active.
        """
        return self._binding.bound(self._namespace_now())

    @property
    def store(self) -> MemoryStore:
        """The underlying store."""
        return self._binding.store

    # ------------------------------------------------------------------ shared logic
    def _args(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        if "namespace" in overrides:
            # Whose memories a query reads is the retriever's (or the using_namespace block's) to say.
            raise InvalidInputError(
                "namespace is not a per-call argument of RecallRetriever: build it with namespace=None and run the "
                "query inside `with using_namespace(user_id):`, or set retriever.namespace"
            )
        args: dict[str, Any] = {
            "k": self.similarity_top_k,
            "token_budget": self.token_budget,
            "project": self.project,
            "topic": self.topic,
            **self._filter.model_dump(exclude_unset=True),
        }
        extra = dict(overrides)
        if "similarity_top_k" in extra:
            extra["k"] = extra.pop("similarity_top_k")
        if "recall_config" in extra:
            extra["config"] = extra.pop("recall_config")
        args.update(extra)
        return args

    async def _aquery_vector(self, bundle: QueryBundle) -> np.ndarray | None:
        if bundle.embedding is not None:
            return np.asarray(bundle.embedding, dtype=np.float32)
        strs = [s for s in (bundle.custom_embedding_strs or []) if s and s.strip()]
        if not strs or strs == [bundle.query_str]:
            return None
        # LlamaIndex's own aggregation for several embedding strings: their mean.
        vectors = await self.store.embedder.aembed_documents(strs)
        mean: np.ndarray = np.asarray(vectors, dtype=np.float32).mean(axis=0)
        return mean

    async def arecall(self, query: str | QueryBundle, **overrides: Any) -> RecallResult:
        """The full :class:`~memory_retrievers.RecallResult` (``to_context()``, plan, cut list).

        Args:
            query: Text or a ``QueryBundle``.
            **overrides: ``similarity_top_k``, ``token_budget``, ``recall_config`` (a dict of
                overrides), ``project``, ``topic``, ``explain``, ``now`` and any filter field.
        """
        return await self._arecall(self._namespace_now(), query, overrides)

    async def _arecall(self, namespace: str, query: str | QueryBundle, overrides: Mapping[str, Any]) -> RecallResult:
        bundle = QueryBundle(query_str=query) if isinstance(query, str) else query
        vector = await self._aquery_vector(bundle)
        return await self._binding.arecall(
            bundle.query_str, namespace=namespace, query_vector=vector, **self._args(overrides)
        )

    def recall(self, query: str | QueryBundle, **overrides: Any) -> RecallResult:
        """Sync twin of :meth:`arecall`."""
        # The namespace is read here, in the caller's context, not on the core's loop thread.
        return run_sync(self._arecall(self._namespace_now(), query, overrides))

    async def aretrieve_with(self, query: str | QueryBundle, **overrides: Any) -> list[NodeWithScore]:
        """``aretrieve`` with per-call overrides (same keywords as :meth:`arecall`)."""
        return to_nodes(await self.arecall(query, **overrides), self.score)

    def retrieve_with(self, query: str | QueryBundle, **overrides: Any) -> list[NodeWithScore]:
        """``retrieve`` with per-call overrides (same keywords as :meth:`arecall`)."""
        return to_nodes(self.recall(query, **overrides), self.score)

    # ------------------------------------------------------------------ LlamaIndex hooks
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.retrieve_with(query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await self.aretrieve_with(query_bundle)
