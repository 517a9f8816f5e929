"""`MemoryRetriever`: a query in, the few memories that matter out, within a token budget.

Stages (each switchable in :class:`RecallConfig`, each its own module in
:mod:`memory_retrievers.recall`): routing (each registered channel says whether it runs) -> query
expansion and HyDE -> the channels' first pass (vector, BM25, context BM25, entity, recency,
dated and any plug-in :class:`~memory_retrievers.Channel`) run concurrently -> weighted reciprocal
rank fusion -> LLM-free feedback lists and the after-fusion channels (link spreading, plug-ins
such as :class:`~memory_retrievers.SpreadingActivation`) -> provenance folding -> optional
reranker blend -> score multipliers (decay, priority, pin, kind, project, topic) -> budgeted
selection (pinned first, session-diverse, MMR) -> access write-back. Every stage reads the
namespace through the store's public :class:`~memory_retrievers.recall.RecallSource` and writes
one :class:`~memory_retrievers.recall.state.RecallState`. This module checks the arguments and
runs the stages in order. The implementation is async; :meth:`MemoryRetriever.recall` runs it on
the store's private loop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.config import validated
from memory_retrievers.embeddings import check_vectors
from memory_retrievers.errors import ConfigError, InvalidInputError
from memory_retrievers.filters import MemoryFilter, coerce_filter
from memory_retrievers.llm import LLM, as_llm
from memory_retrievers.models import Memory
from memory_retrievers.recall.annotate import notes_for
from memory_retrievers.recall.assemble import Assembly, assemble
from memory_retrievers.recall.blend import final_scores, fuse, rerank, semantic_blend
from memory_retrievers.recall.builtin import default_registry
from memory_retrievers.recall.calibration import Calibration, calibration_for
from memory_retrievers.recall.channel import Channel, ChannelQuery, Need
from memory_retrievers.recall.config import RecallConfig, SupersededPolicy
from memory_retrievers.recall.cues import read_cues
from memory_retrievers.recall.expansion import LLMFallbackWarning, LLMStages, feedback_pass
from memory_retrievers.recall.long_query import searched_query
from memory_retrievers.recall.plan import route
from memory_retrievers.recall.provenance import fold_into_sources, source_lists
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.recall.rerank import Reranker
from memory_retrievers.recall.results import RecallResult
from memory_retrievers.recall.runner import ChannelRunner, CheckedSource
from memory_retrievers.recall.scoring import ScoringContext
from memory_retrievers.recall.source import RecallSource
from memory_retrievers.recall.stage_searches import Channels
from memory_retrievers.recall.state import RecallState
from memory_retrievers.recall.tasks import RecallTasks
from memory_retrievers.storage.vectors import unit
from memory_retrievers.store.memory_store import MemoryStore
from memory_retrievers.text.lines import line_facts, line_key
from memory_retrievers.text.query import analyze
from memory_retrievers.tokens import TokenCounter, default_counter
from memory_retrievers.validation import MAX_QUERY_CHARS, check_key, check_namespace, check_text, to_utc

__all__ = ["MAX_QUERY_CHARS", "LLMFallbackWarning", "MemoryRetriever"]

_MAX_BUDGET = 1_000_000
_FILTER_KEYS = frozenset(MemoryFilter.model_fields)


class MemoryRetriever:
    """Recall memories from a :class:`MemoryStore`, for one namespace or for whichever each call names.

    One retriever can serve every user of a service: build it without a namespace and pass
    ``namespace=`` to each :meth:`recall`. A namespace given at construction is the default a call
    without one reads.

    Args:
        store: The store to read (and write access statistics to).
        namespace: The default namespace (the user or tenant); ``None`` makes ``namespace`` a
            required argument of every call.
        config: :class:`RecallConfig`, a dict of its fields, or ``None`` for the defaults.
        llm: Optional :class:`~memory_retrievers.llm.LLM` (or a ``prompt -> str`` callable, sync or
            async) for query rewrites and HyDE. Without one, recall makes zero LLM calls.
        reranker: Optional :class:`~memory_retrievers.recall.rerank.Reranker` blended with the fused score.
        token_counter: Counts prompt tokens; defaults to exact tiktoken counts (offline).
        channels: Recall channels (:class:`~memory_retrievers.Channel`) added to the built-in ones
            for this retriever, or replacing the built-in of the same name. Give each a weight in
            ``config.weights`` by its name (else it weighs its ``default_weight``).
        channel_timeout_s: The longest a channel's search may take; a slower one is dropped from
            the recall with a :class:`~memory_retrievers.ChannelFailedWarning`, like a failing one.

    Raises:
        ConfigError: A bad argument, or a weight naming no registered channel.

    Example:
        >>> retriever = MemoryRetriever(store, namespace="alice")            # doctest: +SKIP
        >>> result = retriever.recall("what theme does the user like?", k=5, token_budget=500)
        >>> print(result.to_context())
        >>> shared = MemoryRetriever(store)                                   # doctest: +SKIP
        >>> shared.recall("what theme does the user like?", namespace="bob")
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        namespace: str | None = None,
        config: RecallConfig | Mapping[str, Any] | None = None,
        llm: LLM | Any = None,
        reranker: Reranker | None = None,
        token_counter: TokenCounter | None = None,
        channels: Iterable[Channel] | None = None,
        channel_timeout_s: float = 10.0,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise ConfigError(f"store must be a MemoryStore, got {type(store).__name__}")
        self._store = store
        keys = store.config.max_key_chars
        self._namespace = None if namespace is None else check_namespace(namespace, max_chars=keys)
        self._config: RecallConfig = validated(RecallConfig, config, "RecallConfig")
        if channels is not None and (isinstance(channels, (str, bytes, Channel)) or not isinstance(channels, Iterable)):
            raise ConfigError(f"channels must be a list of Channel, got {type(channels).__name__}")
        self._channels = default_registry().with_channels(channels or ())
        self._channels.check_weights(self._config.weights)
        if isinstance(channel_timeout_s, bool) or not isinstance(channel_timeout_s, (int, float)):
            raise ConfigError(f"channel_timeout_s must be a number of seconds, got {channel_timeout_s!r}")
        if not 0 < channel_timeout_s < float("inf"):
            raise ConfigError(f"channel_timeout_s must be > 0 seconds (and finite), got {channel_timeout_s!r}")
        self._channel_timeout_s = float(channel_timeout_s)
        self._llm = as_llm(llm)
        if reranker is not None and not isinstance(reranker, Reranker):
            raise ConfigError(f"reranker must implement rerank/arerank, got {type(reranker).__name__}")
        self._reranker = reranker
        self._own_counter = token_counter is not None
        self._counter = token_counter or default_counter(self._config.selection.token_encoding)
        calibration_for(store.embedder.name, self._config.relevance.calibration)  # a mismatched one fails here

    def __repr__(self) -> str:
        return f"MemoryRetriever(namespace={self._namespace!r}, store={self._store!r}, llm={self._llm!r})"

    @property
    def store(self) -> MemoryStore:
        """The underlying store."""
        return self._store

    @property
    def namespace(self) -> str | None:
        """The namespace a call without ``namespace=`` reads (``None``: every call names one)."""
        return self._namespace

    @property
    def config(self) -> RecallConfig:
        """The frozen configuration."""
        return self._config

    @property
    def channels(self) -> ChannelRegistry:
        """This retriever's channels, in routing order (the built-ins and those it was given)."""
        return self._channels

    @property
    def token_counter(self) -> TokenCounter:
        """How prompt tokens are counted."""
        return self._counter

    # ------------------------------------------------------------------ public API
    def recall(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        token_budget: int | str | None = "config",
        now: datetime | None = None,
        project: str | None = None,
        topic: str | None = None,
        explain: bool = False,
        config: RecallConfig | Mapping[str, Any] | None = None,
        query_vector: Sequence[float] | np.ndarray | None = None,
        exclude_ids: Collection[str] | None = None,
        exclude_texts: Collection[str] | None = None,
        **filters: Any,
    ) -> RecallResult:
        """Recall the memories that matter for ``query``.

        Args:
            query: The question or conversation turn.
            namespace: Whose memories to read (default: the retriever's namespace; required when
                the retriever was built without one).
            k: Maximum memories returned (default ``config.k``).
            token_budget: Maximum tokens of ``result.to_context()`` (default ``config.token_budget``;
                ``None`` = unlimited).
            now: The time of the recall (default: the store's clock); makes decay reproducible.
            project: The caller's project; boosts same-project memories, penalises others.
            topic: The caller's topic; memories of another topic are penalised.
            explain: Also return every cut candidate and why (``result.cut``).
            config: Overrides for this call only (a :class:`RecallConfig` or a dict of fields).
            query_vector: The query's embedding, when the caller already has it (e.g. a
                LlamaIndex ``QueryBundle.embedding`` or a HyDE vector); it must come from the
                store's embedding model. Full-text channels still use ``query``.
            exclude_ids: Memory ids the caller already shows (e.g. the chat turns in the prompt);
                they compete for no place, so ``k`` and the token budget go to other memories.
            exclude_texts: Texts the caller already shows, for a window whose messages have no
                memory ids (the messages of the model's window, the question just asked): a
                memory that says the same line (:func:`~memory_retrievers.text.lines.line_key`: case,
                punctuation and stop words aside, same speaker) is left out like an excluded id.
                Pass them as the store holds them (``"user: ..."`` for a chat adapter's turns).
            **filters: Metadata prefilter fields (``kinds``, ``tags_any``, ``session_ids``,
                ``created_after``...; see :class:`~memory_retrievers.MemoryFilter`).

        Raises:
            InvalidInputError: Empty query or one over ``RecallConfig.query.max_query_chars``, ``k < 1``,
                negative budget, bad filter, a bad namespace, or none when the retriever has none.
            ConfigError: Unknown config override keys.
        """
        return _loop.run_sync(
            self.arecall(
                query,
                namespace=namespace,
                k=k,
                token_budget=token_budget,
                now=now,
                project=project,
                topic=topic,
                explain=explain,
                config=config,
                query_vector=query_vector,
                exclude_ids=exclude_ids,
                exclude_texts=exclude_texts,
                **filters,
            )
        )

    async def arecall(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        token_budget: int | str | None = "config",
        now: datetime | None = None,
        project: str | None = None,
        topic: str | None = None,
        explain: bool = False,
        config: RecallConfig | Mapping[str, Any] | None = None,
        query_vector: Sequence[float] | np.ndarray | None = None,
        exclude_ids: Collection[str] | None = None,
        exclude_texts: Collection[str] | None = None,
        **filters: Any,
    ) -> RecallResult:
        """Async twin of :meth:`recall`."""
        ns = self._namespace_for(namespace)
        cfg = self._effective_config(config)
        text = _checked_query(query, cfg)
        searched = searched_query(text, cfg.query.searched_query_chars)
        call = _Call(
            namespace=ns,
            query=searched.text,
            note=searched.note,
            config=cfg,
            k=_checked_k(cfg.k if k is None else k),
            budget=_checked_budget(cfg.token_budget if token_budget == "config" else token_budget),
            filter=_checked_filter(filters, cfg),
            context=self._scoring_context(now, project, topic),
            explain=explain,
            vector=None if query_vector is None else self._given_vector(query_vector),
            excluded=_id_set(exclude_ids),
            shown=frozenset(line_key(t) for t in _strings(exclude_texts, "exclude_texts", "texts")),
            counter=self._counter_for(cfg),
            calibration=calibration_for(self._store.embedder.name, cfg.relevance.calibration),
        )
        result = await self._run(call)
        return result if searched.note is None else replace(result, query=text)

    def _scoring_context(self, now: datetime | None, project: str | None, topic: str | None) -> ScoringContext:
        """The time of the recall and the caller's project and topic, checked."""
        keys = self._store.config.max_key_chars
        return ScoringContext(
            now=to_utc(now, "now") if now is not None else self._store.clock(),
            project=None if project is None else check_key(project, field="project", max_chars=keys),
            topic=None if topic is None else check_key(topic, field="topic", max_chars=keys),
        )

    def _given_vector(self, query_vector: Sequence[float] | np.ndarray) -> np.ndarray:
        """The caller's query vector, checked against the store's model and made unit length."""
        given = check_vectors(query_vector, rows=1, dimension=self._store.embedder.dimension, source="query_vector")
        vector: np.ndarray = unit(given, source="query_vector")[0]
        return vector

    # ------------------------------------------------------------------ pipeline
    def _namespace_for(self, namespace: str | None) -> str:
        """This call's namespace: the one it names, else the retriever's.

        Raises:
            InvalidInputError: A bad namespace, or none given to a retriever built without one.
        """
        if namespace is not None:
            return check_namespace(namespace, max_chars=self._store.config.max_key_chars)
        if self._namespace is None:
            raise InvalidInputError(
                "namespace is required: this retriever was built without one; pass recall(..., namespace='user-1') "
                "or build MemoryRetriever(store, namespace='user-1')"
            )
        return self._namespace

    def _effective_config(self, override: RecallConfig | Mapping[str, Any] | None) -> RecallConfig:
        """This call's config: an override object replaces the retriever's; a dict is merged into it.

        The merge is deep: ``{"weights": {"bm25": 2}}`` changes that one weight and keeps the
        retriever's others (and ``kind_boosts`` likewise).
        """
        if override is None:
            return self._config
        if isinstance(override, RecallConfig):
            cfg = override
        elif isinstance(override, Mapping):
            # Weights as the user set them: a plug-in replacing a built-in reads an unset one as its default_weight.
            base = {**self._config.model_dump(), "weights": self._config.weights.model_dump(exclude_unset=True)}
            cfg = validated(RecallConfig, _deep_merge(base, override), "RecallConfig")
        else:
            raise ConfigError(f"config must be a RecallConfig or a dict, got {type(override).__name__}")
        self._channels.check_weights(cfg.weights)
        return cfg

    def _counter_for(self, cfg: RecallConfig) -> TokenCounter:
        """The token counter for this call's ``token_encoding``.

        Raises:
            ConfigError: A per-call ``token_encoding`` differs from this retriever's while a
                ``token_counter`` was given (that counter decides, so the override would be ignored).
        """
        if cfg.selection.token_encoding == self._config.selection.token_encoding:
            return self._counter
        if self._own_counter:
            raise ConfigError(
                f"token_encoding {cfg.selection.token_encoding!r} cannot apply: this retriever counts tokens with the "
                f"token_counter it was given ({self._counter.name}); drop the override or build a retriever "
                "without token_counter"
            )
        return default_counter(cfg.selection.token_encoding)

    async def _run(self, call: _Call) -> RecallResult:
        features = analyze(call.query)
        plan = route(features, call.config, has_llm=self._llm is not None, registry=self._channels)
        if call.note is not None:
            plan.notes.append(call.note)
        terms = " ".join(features.keywords) or call.query
        state = RecallState(call.config, plan, call.context, ChannelQuery(call.query, terms, features))
        store, cfg = self._store, call.config
        async with RecallTasks() as tasks:
            # The LLM calls start at once, and so does the namespace's source: a cold namespace's
            # view loads (14 ms for 1,000 memories of a 200,000-row table) while the query is embedded.
            llm_stages = LLMStages(self._llm, plan, call.query, cfg, tasks)
            source_ready = tasks.start(store.arecall_source(call.namespace, filter=call.filter))
            embedding = await self._embedding(state, call, tasks)
            source = CheckedSource(await source_ready)
            plan.notes.append(source.description)
            runner = ChannelRunner(self._channels, source, cfg, tasks, self._channel_timeout_s)
            stages = Channels(source, tasks, cfg.channels.candidate_depth, store.aembed_query)
            await self._first_pass(state, runner, embedding)
            # LLM rewrites and HyDE, each its own list (original query lists weigh more).
            await llm_stages.launch_lists(stages)
            state.add(await runner.collect() + await stages.collect())
            state.mark("searched")
            state.mark("fused")
            await self._second_pass(state, runner, stages, source)
            await _fold_provenance(state, source)
            state.notes = await notes_for(state.fused, state.folded, source)
        return await self._finish(state, call, source)

    async def _embedding(self, state: RecallState, call: _Call, tasks: RecallTasks) -> asyncio.Task[np.ndarray]:
        """Start embedding the query (once the namespace's speakers are known), or take the caller's vector.

        A query naming a speaker is embedded with its speaker-free twin in one forward pass.
        """
        cfg, query, store = call.config, call.query, self._store
        speakers = functools.partial(store.aspeakers, call.namespace)
        cues = await read_cues(query, speakers, cfg, own_vector=call.vector is None)
        state.plan.speakers = list(cues.speakers)
        state.context = cues.scoring(state.context, state.query.features)
        texts = [query]
        if cues.speaker_free is not None:
            texts = [query, cues.speaker_free] if cfg.query.asked_vector_share > 0 else [cues.speaker_free]
        return tasks.start(store.aembed_queries(texts) if call.vector is None else _given(call.vector))

    async def _first_pass(self, state: RecallState, runner: ChannelRunner, embedding: Awaitable[np.ndarray]) -> None:
        """Start the first-pass channels: those needing no vector at once, the others once it is computed.

        The vector channels search with the query without the speakers' names, when it names one;
        that is then the query's vector (relevance, feedback) unless the query as asked is
        embedded too (``asked_vector_share``).
        """
        first = [n for n in state.plan.channels if Need.FUSED not in self._channels[n].needs]
        runner.start([n for n in first if Need.VECTOR not in self._channels[n].needs], state.query)
        embedded = await embedding
        state.vector = embedded[0]
        asked = embedded[0] if len(embedded) > 1 else None
        state.query = replace(state.query, vector=embedded[-1], asked_vector=asked)
        state.mark("embedded")
        runner.start([n for n in first if Need.VECTOR in self._channels[n].needs], state.query)

    async def _second_pass(
        self, state: RecallState, runner: ChannelRunner, stages: Channels, source: CheckedSource
    ) -> None:
        """LLM-free feedback lists from the first pass's top hits, then the after-fusion channels."""
        feedback_pass(state.plan, state.fused, state.query_vector, state.config, source, stages)
        state.add(await stages.collect())
        after = [n for n in state.plan.channels if Need.FUSED in self._channels[n].needs]
        if after and state.fused:
            runner.start(after, state.query, state.fused)
            state.add(await runner.collect())

    async def _finish(self, state: RecallState, call: _Call, source: CheckedSource) -> RecallResult:
        """Score the candidates, select the result within the budget, record the access."""
        cfg, plan = call.config, state.plan
        memories = dict(zip((h.id for h in state.fused), source.memories_of([h.id for h in state.fused]), strict=True))
        _exclude(state, call, memories)
        vectors = {h.id: source.vector(h.id) for h in state.fused}
        semantic = {i: float(np.dot(v, state.query_vector)) for i, v in vectors.items()}
        base = semantic_blend(state.fused, semantic, cfg.fusion.semantic_blend)
        rerank_scores: dict[str, float] = {}
        if self._reranker is not None and state.fused:
            rerank_scores, base = await rerank(self._reranker, call.query, state.fused, memories, base, cfg, plan)
        scored = final_scores(state.fused, memories, base, state.context, cfg)
        state.mark("scored")
        labels = [lst.label for lst in state.lists]
        parts = Assembly(
            call.query, memories, vectors, semantic, base, rerank_scores, plan, labels, state.folded, state.notes
        )
        result = assemble(
            scored,
            parts,
            cfg,
            k=call.k,
            budget=call.budget,
            explain=call.explain,
            counter=call.counter,
            calibration=call.calibration,
        )
        state.mark("selected")
        if cfg.record_access and result.memories:
            ids = [m.id for m in result.memories]
            self._store.record_access(ids, namespace=call.namespace, at=state.context.now)
        state.mark("done")
        return replace(result, plan={**result.plan, "ms": state.marks["done"], "timings_ms": state.marks})


@dataclass(frozen=True, slots=True)
class _Call:
    """One recall's checked arguments, as the pipeline runs them."""

    namespace: str
    query: str
    """What is searched: the query, or its opening and end when it is long."""
    note: str | None
    """The plan's note when ``query`` is not the query as given."""
    config: RecallConfig
    k: int
    budget: int | None
    filter: MemoryFilter
    context: ScoringContext
    explain: bool
    vector: np.ndarray | None
    """The caller's query vector, unit length (``None``: embed ``query``)."""
    excluded: frozenset[str]
    """Memory ids left out (``exclude_ids``)."""
    shown: frozenset[str]
    """Line keys left out (``exclude_texts``)."""
    counter: TokenCounter
    calibration: Calibration


async def _fold_provenance(state: RecallState, source: RecallSource) -> None:
    """Extracted facts vote for their source turns and fold into them (see ``recall.provenance``)."""
    if not state.fused:
        return
    twins, sources = await source_lists(state.lists, state.fused, source, state.config.channels.fact_source_weight)
    if twins:
        state.lists += twins
        state.fused, state.folded = fold_into_sources(fuse(state.lists, state.config), sources)
        count = sum(len(v) for v in state.folded.values())
        state.plan.notes.append(f"{count} extracted fact(s) folded into their source turns")


def _exclude(state: RecallState, call: _Call, memories: Mapping[str, Memory]) -> None:
    """Drop the memories the caller already shows.

    They are dropped after fusion and the after-fusion channels, so they still seed feedback and
    links (they are on topic) but take no place in the result.
    """
    if not (call.excluded or call.shown):
        return
    remaining = [
        h for h in state.fused if h.id not in call.excluded and line_facts(memories[h.id].text).key not in call.shown
    ]
    if len(remaining) < len(state.fused):
        state.plan.notes.append(f"{len(state.fused) - len(remaining)} candidate(s) excluded by the caller")
    state.fused = remaining


def _checked_query(query: str, cfg: RecallConfig) -> str:
    """The query, checked: a str, not empty, at most ``max_query_chars``."""
    limit = cfg.query.max_query_chars
    if isinstance(query, str) and len(query) > limit:
        raise InvalidInputError(
            f"query has {len(query):,} characters, over RecallConfig.query.max_query_chars ({limit:,}); "
            "pass a shorter query or raise it, config={'query': {'max_query_chars': ...}} (a query over "
            "query.searched_query_chars is searched by its opening and end)"
        )
    return check_text(query, field="query", max_chars=cfg.query.max_query_chars)


def _checked_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k must be an int >= 1, got {k!r}")
    return k


def _checked_budget(budget: Any) -> int | None:
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
        raise InvalidInputError(f"token_budget must be an int >= 0 or None, got {budget!r}")
    if budget is not None and budget > _MAX_BUDGET:
        raise InvalidInputError(f"token_budget must be <= {_MAX_BUDGET:,}, got {budget:,}")
    return budget


def _checked_filter(filters: Mapping[str, Any], cfg: RecallConfig) -> MemoryFilter:
    """The recall's metadata prefilter (flagging superseded memories reads them too)."""
    unknown = set(filters) - _FILTER_KEYS
    if unknown:
        raise InvalidInputError(
            f"unknown recall argument(s) {sorted(unknown)}; filters are: {', '.join(sorted(_FILTER_KEYS))}"
        )
    flt = coerce_filter(dict(filters) or None)
    if cfg.relevance.superseded is SupersededPolicy.FLAG and not flt.include_superseded:
        flt = flt.model_copy(update={"include_superseded": True})
    return flt


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = _deep_merge(current, value)
        else:
            out[key] = value
    return out


async def _given(vector: np.ndarray) -> np.ndarray:
    return vector[None, :]


def _strings(values: Collection[str] | None, name: str, what: str) -> tuple[str, ...]:
    """A collection argument of strs; a lone str would silently stand for its characters, so it is refused."""
    if values is None:
        return ()
    if isinstance(values, (str, bytes)) or not isinstance(values, Collection):
        raise InvalidInputError(f"{name} must be a list or set of {what}, got {type(values).__name__}")
    bad = next((v for v in values if not isinstance(v, str)), None)
    if bad is not None:
        raise InvalidInputError(f"{name} must hold str {what}, got {type(bad).__name__} {bad!r}")
    return tuple(values)


def _id_set(ids: Collection[str] | None) -> frozenset[str]:
    """``exclude_ids`` as a set."""
    return frozenset(_strings(ids, "exclude_ids", "memory ids"))
