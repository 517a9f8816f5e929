"""`MemoryRetriever`: a query in, the few memories that matter out, within a token budget.

Stages (each switchable in :class:`RecallConfig`): routing -> query expansion -> HyDE -> retrieval
channels (vector, BM25, context BM25, entity, recency, link spreading) run concurrently ->
weighted reciprocal rank fusion -> optional reranker blend -> score multipliers (decay, priority,
pin, kind, project, topic) -> budgeted selection (pinned first, session-diverse, MMR) -> access
write-back. The implementation is async; :meth:`MemoryRetriever.recall` runs it on the store's
private loop.
"""

from __future__ import annotations

import asyncio
import math
import time
import warnings
from collections.abc import Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa

from . import _loop
from ._view import NamespaceView
from .config import validated
from .embeddings import check_vectors
from .errors import ConfigError, InvalidInputError, MemoryRetrieversError
from .filters import MemoryFilter, build_where, coerce_filter
from .fusion import FusedHit, RankedList, tied_ranks, weighted_rrf
from .llm import LLM, as_llm, expansion_prompt, hyde_prompt, parse_rewrites
from .models import FtsField, Memory
from .query import QueryFeatures, analyze, feedback_terms
from .recall_config import RecallConfig, RoutingMode, SupersededPolicy
from .rerank import Reranker
from .results import (
    CONTEXT_HEADER,
    CutCandidate,
    Explanation,
    RecallResult,
    ScoredMemory,
    render_line,
    trimmed_marker,
)
from .schema import SCALAR_COLUMNS, row_to_memory, vectors_of
from .scoring import ScoringContext, multipliers
from .selection import Candidate, CutReason, select
from .store import MemoryStore
from .tokens import TokenCounter, default_counter
from .validation import check_key, check_text, to_utc

__all__ = ["MAX_QUERY_CHARS", "MemoryRetriever"]

MAX_QUERY_CHARS = 4_000
_MAX_BUDGET = 1_000_000
_FILTER_KEYS = frozenset(MemoryFilter.model_fields)
# What a channel found: ids best first, and their ranks when ties share one (None: by position).
Found = tuple[tuple[str, ...], tuple[int, ...] | None]


class LLMFallbackWarning(RuntimeWarning):
    """An LLM stage failed or timed out; recall continued on the LLM-free path."""


@dataclass
class _Plan:
    """What this recall runs, and why (reported in ``RecallResult.plan``)."""

    mode: RoutingMode
    features: QueryFeatures
    channels: list[str] = field(default_factory=list)
    expansion: str = "off"
    hyde: str = "off"
    session_diverse: bool = False
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        f = self.features
        return {
            "mode": self.mode.value,
            "channels": list(self.channels),
            "expansion": self.expansion,
            "hyde": self.hyde,
            "session_diverse": self.session_diverse,
            "intent": f.intent,
            "entities": list(f.entities),
            "keywords": list(f.keywords),
            "notes": list(self.notes),
        }


class MemoryRetriever:
    """Recall memories of one namespace from a :class:`MemoryStore`.

    Args:
        store: The store to read (and write access statistics to).
        namespace: Whose memories (the user or tenant).
        config: :class:`RecallConfig`, a dict of its fields, or ``None`` for the defaults.
        llm: Optional :class:`~memory_retrievers.llm.LLM` (or a ``prompt -> str`` callable, sync or
            async) for query rewrites and HyDE. Without one, recall makes zero LLM calls.
        reranker: Optional :class:`~memory_retrievers.rerank.Reranker` blended with the fused score.
        token_counter: Counts prompt tokens; defaults to exact tiktoken counts (offline).

    Example:
        >>> retriever = MemoryRetriever(store, namespace="alice")            # doctest: +SKIP
        >>> result = retriever.recall("what theme does the user like?", k=5, token_budget=500)
        >>> print(result.to_context())
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        namespace: str,
        config: RecallConfig | Mapping[str, Any] | None = None,
        llm: LLM | Any = None,
        reranker: Reranker | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise ConfigError(f"store must be a MemoryStore, got {type(store).__name__}")
        self._store = store
        self._namespace = check_key(namespace, field="namespace", max_chars=store.config.max_key_chars)
        self._config: RecallConfig = validated(RecallConfig, config, "RecallConfig")
        self._llm = as_llm(llm)
        if reranker is not None and not isinstance(reranker, Reranker):
            raise ConfigError(f"reranker must implement rerank/arerank, got {type(reranker).__name__}")
        self._reranker = reranker
        self._counter = token_counter or default_counter(self._config.token_encoding)

    def __repr__(self) -> str:
        return f"MemoryRetriever(namespace={self._namespace!r}, store={self._store!r}, llm={self._llm!r})"

    @property
    def store(self) -> MemoryStore:
        """The underlying store."""
        return self._store

    @property
    def namespace(self) -> str:
        """Whose memories this retriever reads."""
        return self._namespace

    @property
    def config(self) -> RecallConfig:
        """The frozen configuration."""
        return self._config

    @property
    def token_counter(self) -> TokenCounter:
        """How prompt tokens are counted."""
        return self._counter

    # ------------------------------------------------------------------ public API
    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | str | None = "config",
        now: datetime | None = None,
        project: str | None = None,
        topic: str | None = None,
        explain: bool = False,
        config: RecallConfig | Mapping[str, Any] | None = None,
        query_vector: Sequence[float] | np.ndarray | None = None,
        exclude_ids: Collection[str] | None = None,
        **filters: Any,
    ) -> RecallResult:
        """Recall the memories that matter for ``query``.

        Args:
            query: The question or conversation turn.
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
            **filters: Metadata prefilter fields (``kinds``, ``tags_any``, ``session_ids``,
                ``created_after``...; see :class:`~memory_retrievers.MemoryFilter`).

        Raises:
            InvalidInputError: Empty/huge query, ``k < 1``, negative budget, bad filter.
            ConfigError: Unknown config override keys.
        """
        return _loop.run_sync(
            self.arecall(
                query,
                k=k,
                token_budget=token_budget,
                now=now,
                project=project,
                topic=topic,
                explain=explain,
                config=config,
                query_vector=query_vector,
                exclude_ids=exclude_ids,
                **filters,
            )
        )

    async def arecall(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | str | None = "config",
        now: datetime | None = None,
        project: str | None = None,
        topic: str | None = None,
        explain: bool = False,
        config: RecallConfig | Mapping[str, Any] | None = None,
        query_vector: Sequence[float] | np.ndarray | None = None,
        exclude_ids: Collection[str] | None = None,
        **filters: Any,
    ) -> RecallResult:
        """Async twin of :meth:`recall`."""
        cfg = self._effective_config(config)
        text = check_text(query, field="query", max_chars=MAX_QUERY_CHARS)
        k_ = cfg.k if k is None else k
        if isinstance(k_, bool) or not isinstance(k_, int) or k_ < 1:
            raise InvalidInputError(f"k must be an int >= 1, got {k_!r}")
        budget = cfg.token_budget if isinstance(token_budget, str) and token_budget == "config" else token_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise InvalidInputError(f"token_budget must be an int >= 0 or None, got {budget!r}")
        if budget is not None and budget > _MAX_BUDGET:
            raise InvalidInputError(f"token_budget must be <= {_MAX_BUDGET:,}, got {budget:,}")
        when = to_utc(now, "now") if now is not None else self._store._clock()
        unknown = set(filters) - _FILTER_KEYS
        if unknown:
            raise InvalidInputError(
                f"unknown recall argument(s) {sorted(unknown)}; filters are: {', '.join(sorted(_FILTER_KEYS))}"
            )
        flt = coerce_filter(filters or None)
        if cfg.superseded is SupersededPolicy.FLAG and not flt.include_superseded:
            flt = flt.model_copy(update={"include_superseded": True})
        keys = self._store.config.max_key_chars
        ctx = ScoringContext(
            now=when,
            project=None if project is None else check_key(project, field="project", max_chars=keys),
            topic=None if topic is None else check_key(topic, field="topic", max_chars=keys),
        )
        qvec = None
        if query_vector is not None:
            dim = self._store.embedder.dimension
            qvec = check_vectors(query_vector, rows=1, dimension=dim, source="query_vector")[0]
            norm = float(np.linalg.norm(qvec))
            if norm == 0:
                raise InvalidInputError("query_vector is all zeros; pass a real embedding or leave it out")
            qvec = qvec / norm
        excluded = _id_set(exclude_ids)
        return await self._run(text, cfg, k_, budget, flt, ctx, explain, qvec, excluded)

    # ------------------------------------------------------------------ pipeline
    def _effective_config(self, override: RecallConfig | Mapping[str, Any] | None) -> RecallConfig:
        if override is None:
            return self._config
        if isinstance(override, RecallConfig):
            return override
        if not isinstance(override, Mapping):
            raise ConfigError(f"config must be a RecallConfig or a dict, got {type(override).__name__}")
        merged = {**self._config.model_dump(exclude_unset=True), **dict(override)}
        return validated(RecallConfig, merged, "RecallConfig")  # type: ignore[no-any-return]

    def _route(self, features: QueryFeatures, cfg: RecallConfig) -> _Plan:
        plan = _Plan(mode=cfg.mode, features=features)
        w = cfg.weights
        if cfg.mode is RoutingMode.VECTOR:
            plan.channels = ["vector"] if w.vector > 0 else []
            return plan
        auto = cfg.mode is RoutingMode.AUTO
        plan.channels = [name for name in ("vector", "bm25", "context") if getattr(w, name) > 0]
        if w.entity > 0 and (features.entities or not auto):
            plan.channels.append("entity")
        if w.recency > 0 and (features.recency or not auto):
            plan.channels.append("recency")
        if w.links > 0 and cfg.link_hops > 0:
            plan.channels.append("links")
        if cfg.expansion:
            if self._llm is not None:
                plan.expansion = "llm"
            elif not auto:
                plan.expansion = "feedback"
        if cfg.hyde and w.hyde > 0:
            if self._llm is not None:
                plan.hyde = "llm"
            elif not auto:
                plan.hyde = "rocchio"
        plan.session_diverse = cfg.session_diverse and (features.aggregation or not auto)
        if auto:
            plan.notes.append(
                f"intent={features.intent}; entities={'yes' if features.entities else 'no'}; "
                f"recency cue={'yes' if features.recency else 'no'}; "
                f"aggregation cue={'yes' if features.aggregation else 'no'}"
            )
        return plan

    async def _llm_call(self, prompt: str, cfg: RecallConfig, stage: str) -> str | None:
        assert self._llm is not None
        try:
            return await asyncio.wait_for(self._llm.acomplete(prompt), timeout=cfg.llm_timeout_s)
        except Exception as exc:  # any LLM failure degrades to the LLM-free path
            reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"failed: {exc!r}"
            warnings.warn(
                f"memory-retrievers: LLM {stage} {reason}; continuing without it",
                LLMFallbackWarning,
                stacklevel=2,
            )
            return None

    async def _run(
        self,
        query: str,
        cfg: RecallConfig,
        k: int,
        budget: int | None,
        flt: MemoryFilter,
        ctx: ScoringContext,
        explain: bool,
        query_vector: np.ndarray | None = None,
        excluded: frozenset[str] = frozenset(),
    ) -> RecallResult:
        started = time.perf_counter()
        marks: dict[str, float] = {}

        def mark(stage: str) -> None:
            marks[stage] = round((time.perf_counter() - started) * 1000, 2)

        store = self._store
        features = analyze(query)
        plan = self._route(features, cfg)
        depth = cfg.candidate_depth
        w = cfg.weights
        original = cfg.original_query_weight
        where = build_where(self._namespace, flt)
        bm25_query = " ".join(features.keywords) or query
        pool = _Pool()
        jobs: list[tuple[RankedList, asyncio.Task[Found]]] = []

        def launch(label: str, channel: str, weight: float, coro: Coroutine[Any, Any, Found]) -> None:
            jobs.append((RankedList(label, (), weight, channel), asyncio.ensure_future(coro)))

        # Phase A: the embedding (the slowest step) and the LLM calls start at once; the namespace
        # view (rows and vectors in memory, when the namespace is small enough) is checked meanwhile.
        embed_task = asyncio.ensure_future(store.aembed_query(query) if query_vector is None else _given(query_vector))
        llm_tasks: dict[str, asyncio.Task[str | None]] = {}
        if plan.expansion == "llm":
            prompt = expansion_prompt(query, features.intent, cfg.llm_rewrites)
            llm_tasks["expansion"] = asyncio.ensure_future(self._llm_call(prompt, cfg, "query expansion"))
        if plan.hyde == "llm":
            llm_tasks["hyde"] = asyncio.ensure_future(self._llm_call(hyde_prompt(query), cfg, "HyDE"))
        try:
            view = await store._aview(self._namespace)
        except BaseException:
            embed_task.cancel()
            raise
        mask = _view_mask(view, flt) if view is not None else None
        plan.notes.append(f"namespace view: {len(view)} memories in memory" if view is not None else "no view")

        async def fts(text: str, field: FtsField) -> Found:
            # BM25 ties are common (a query matching only the user's name): they share a rank.
            if view is not None:
                table = await store._afts_table(text, where, depth, field, ["id"])
                pairs = [
                    (view.index[i], s)
                    for i, s in zip(table.column("id").to_pylist(), table.column("_score").to_pylist(), strict=True)
                    if i in view.index
                ]
                return pool.take(view, [i for i, _ in pairs]), tied_ranks([s for _, s in pairs])
            table = await store._afts_table(text, where, depth, field, _COLUMNS)
            return pool.add(table), tied_ranks(table.column("_score").to_pylist())

        async def nearest(vec: np.ndarray) -> Found:
            if view is not None and mask is not None:
                return pool.take(view, view.top_by_vector(vec, mask, depth)), None
            return pool.add(await store._avector_table(vec, where, depth, _COLUMNS)), None

        async def by_entity() -> Found:
            if view is not None and mask is not None:
                return pool.take(view, view.top_by_entities(features.entities, mask, depth)), None
            return pool.add(await store._aentity_table(features.entities, where, depth, _COLUMNS)), None

        async def by_recency() -> Found:
            if view is not None and mask is not None:
                return pool.take(view, view.top_by_recency(mask, depth)), None
            return pool.add(await store._arecency_table(where, depth, _COLUMNS)), None

        async def nearest_text(text: str) -> Found:
            return await nearest(await store.aembed_query(text))

        if "bm25" in plan.channels:
            launch("bm25", "bm25", w.bm25 * original, fts(bm25_query, FtsField.TEXT))
        if "context" in plan.channels:
            launch("context", "context", w.context * original, fts(bm25_query, FtsField.CONTEXT))
        if "entity" in plan.channels and features.entities and await store.ahas_entities(self._namespace):
            launch("entity", "entity", w.entity, by_entity())
        if "recency" in plan.channels:
            launch("recency", "recency", w.recency, by_recency())
        try:
            qvec: np.ndarray = await embed_task
        except BaseException:
            for _, task in jobs:
                task.cancel()
            raise
        mark("embedded")
        if "vector" in plan.channels:
            launch("vector", "vector", w.vector * original, nearest(qvec))

        # Phase B: LLM rewrites and HyDE, each its own list (original query lists weigh more).
        llm_out = {name: await task for name, task in llm_tasks.items()}
        if plan.expansion == "llm":
            rewrites = parse_rewrites(llm_out["expansion"] or "", query, cfg.llm_rewrites)
            if not rewrites:
                plan.expansion = "off"
                plan.notes.append("LLM expansion gave nothing usable; skipped")
            for i, rewrite in enumerate(rewrites, 1):
                terms = " ".join(analyze(rewrite).keywords) or rewrite
                launch(f"context:rewrite {i}", "context", w.context, fts(terms, FtsField.CONTEXT))
                launch(f"vector:rewrite {i}", "vector", w.vector, nearest_text(rewrite))
        if plan.hyde == "llm":
            hyde_text = (llm_out.get("hyde") or "").strip()[:MAX_QUERY_CHARS]
            if hyde_text and "\x00" not in hyde_text:
                launch("hyde", "hyde", w.hyde, nearest_text(hyde_text))
            else:
                plan.hyde = "off"
                plan.notes.append("LLM HyDE gave nothing usable; skipped")
        lists = [_filled(spec, await task) for spec, task in jobs]
        mark("searched")
        fused = self._fuse(lists, cfg)
        mark("fused")

        # Phase C: LLM-free feedback stages, from the first pass's top hits (already in the pool).
        second: list[tuple[RankedList, Coroutine[Any, Any, Found]]] = []
        top = [h.id for h in fused[: cfg.feedback_docs]]
        if plan.expansion == "feedback" and top:
            extra = feedback_terms(features.keywords, [pool.rows[i]["text"] for i in top], cfg.feedback_terms)
            if extra:
                plan.notes.append(f"feedback terms: {', '.join(extra)}")
                fq = " ".join([*features.keywords, *extra])
                second.append((RankedList("context:feedback", (), w.context, "context"), fts(fq, FtsField.CONTEXT)))
        if plan.hyde == "rocchio" and top:
            centroid = np.mean([pool.vectors[i] for i in top], axis=0)
            vec = cfg.rocchio_alpha * qvec + cfg.rocchio_beta * centroid
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                second.append((RankedList("hyde:rocchio", (), w.hyde, "hyde"), nearest(vec / norm)))
        if second:
            found = await asyncio.gather(*(coro for _, coro in second))
            lists += [_filled(spec, got) for (spec, _), got in zip(second, found, strict=True)]
            fused = self._fuse(lists, cfg)

        # Link spreading: activation flows from the top hits along `links`, decaying per hop.
        if "links" in plan.channels and fused:
            link_list = await self._spread(fused, pool, cfg, flt, view)
            if link_list is not None:
                lists.append(link_list)
                fused = self._fuse(lists, cfg)

        # Memories the caller already shows are dropped after fusion and link spreading, so they
        # still seed feedback and links (they are on topic) but take no place in the result.
        if excluded:
            remaining = [h for h in fused if h.id not in excluded]
            if len(remaining) < len(fused):
                plan.notes.append(f"{len(fused) - len(remaining)} candidate(s) excluded by the caller")
            fused = remaining

        # Scores: semantic blend, reranker, multipliers.
        memories = {h.id: pool.memory(h.id) for h in fused}
        semantic = {h.id: float(np.dot(pool.vectors[h.id], qvec)) for h in fused}
        base = self._blend(fused, semantic, cfg)
        rerank_scores: dict[str, float] = {}
        if self._reranker is not None and fused:
            rerank_scores, base = await self._rerank(query, fused, memories, base, cfg, plan)
        params = cfg.scoring_params()
        scored: list[tuple[FusedHit, float, dict[str, float]]] = []
        for h in fused:
            mult = multipliers(memories[h.id], ctx, params)
            scored.append((h, base[h.id] * math.prod(mult.values()), mult))
        scored.sort(key=lambda t: (-t[1], t[0].best_rank, t[0].id))
        mark("scored")
        cut: list[CutCandidate] = []
        best = scored[0][1] if scored else 0.0
        kept = []
        for item in scored:
            if cfg.relevance_floor > 0 and item[1] < cfg.relevance_floor * best:
                cut.append(CutCandidate(item[0].id, CutReason.BELOW_FLOOR, item[1], memories[item[0].id].text))
            else:
                kept.append(item)

        # Selection within the token budget (costs counted lazily: only what selection looks at).
        header_cost = self._counter.count(CONTEXT_HEADER)
        marker_cost = self._counter.count("\n" + trimmed_marker(len(kept)))
        avail = None if budget is None else max(0, budget - header_cost - marker_cost)
        costs: dict[str, int] = {}

        def cost(c: Candidate) -> int:
            if c.id not in costs:
                costs[c.id] = self._counter.count("\n" + render_line(memories[c.id]))
            return costs[c.id]

        candidates = [
            Candidate(h.id, score, 0, pool.vectors[h.id], memories[h.id].pinned, memories[h.id].session_id)
            for h, score, _ in kept
        ]
        chosen, rejected = select(
            candidates,
            k=k,
            token_budget=avail,
            mmr_lambda=cfg.mmr_lambda if cfg.mmr else None,
            pinned_first=cfg.pinned_first,
            session_diverse=plan.session_diverse,
            token_cost=cost,
            mmr_similarity_floor=cfg.mmr_similarity_floor,
        )
        mark("selected")
        by_id = {h.id: (h, score, mult) for h, score, mult in kept}
        over_budget = sum(1 for r in rejected if r.reason is CutReason.OVER_BUDGET)
        out = []
        for sel in chosen:
            h, score, mult = by_id[sel.id]
            mem = memories[sel.id]
            out.append(
                ScoredMemory(
                    memory=mem,
                    score=score,
                    explanation=Explanation(
                        channels=h.contributions,
                        rank_bonus=h.bonus,
                        fused_score=h.score,
                        semantic=semantic.get(h.id),
                        rerank_score=rerank_scores.get(h.id),
                        base_score=base[h.id],
                        multipliers=mult,
                        final_score=score,
                        mmr_penalty=sel.mmr_penalty,
                        tokens=cost(Candidate(sel.id, score, 0)),
                        phase=sel.phase,
                        superseded=mem.superseded_by is not None,
                    ),
                )
            )
        result = RecallResult(
            query=query,
            memories=tuple(out),
            tokens_used=0,
            token_budget=budget,
            trimmed=over_budget > 0,
            trimmed_count=over_budget,
            plan={**plan.as_dict(), "lists": [lst.label for lst in lists]},
        )
        result = self._enforce_budget(result, budget)
        if explain:
            cut += [CutCandidate(r.id, r.reason, by_id[r.id][1], memories[r.id].text) for r in rejected]
            result = replace(result, cut=tuple(cut))
        if cfg.record_access and result.memories:
            store.record_access([m.id for m in result.memories], namespace=self._namespace, at=ctx.now)
        mark("done")
        return replace(result, plan={**result.plan, "ms": marks["done"], "timings_ms": marks})

    def _enforce_budget(self, result: RecallResult, budget: int | None) -> RecallResult:
        """Count the real context block and drop memories from the end until it fits.

        BPE merges across lines could in theory make the block cost more than the sum of the
        per-line costs that selection used.
        """
        memories = list(result.memories)
        dropped = 0
        while True:
            current = replace(
                result,
                memories=tuple(memories),
                trimmed=result.trimmed or dropped > 0,
                trimmed_count=result.trimmed_count + dropped,
            )
            used = self._counter.count(current.to_context())
            if budget is None or used <= budget or not memories:
                return replace(current, tokens_used=used if memories else 0)
            memories.pop()
            dropped += 1

    def _fuse(self, lists: Sequence[RankedList], cfg: RecallConfig) -> list[FusedHit]:
        return weighted_rrf(lists, k_rrf=cfg.rrf_k, rank1_bonus=cfg.rank1_bonus, top3_bonus=cfg.top3_bonus)

    def _blend(self, fused: Sequence[FusedHit], semantic: Mapping[str, float], cfg: RecallConfig) -> dict[str, float]:
        b = cfg.semantic_blend
        if b == 0 or not fused:
            return {h.id: h.score for h in fused}
        top = max(h.score for h in fused) or 1.0
        return {h.id: (1 - b) * (h.score / top) + b * max(0.0, semantic.get(h.id, 0.0)) for h in fused}

    async def _spread(
        self,
        fused: Sequence[FusedHit],
        pool: _Pool,
        cfg: RecallConfig,
        flt: MemoryFilter,
        view: NamespaceView | None,
    ) -> RankedList | None:
        """Spread activation along ``links``.

        Activation starts at the top ``link_seeds`` hits (1/rank), flows along ``links`` for
        ``link_hops`` hops, multiplied by ``link_decay`` per hop; linked memories are ranked by it.
        Targets outside the pool are fetched (one query per hop) and filtered like every channel.
        """
        activation: dict[str, float] = {}
        frontier = {h.id: 1.0 / rank for rank, h in enumerate(fused[: cfg.link_seeds], 1)}
        for _hop in range(cfg.link_hops):
            nxt: dict[str, float] = {}
            for id_, act in frontier.items():
                for target in pool.rows[id_]["links"] or () if id_ in pool.rows else ():
                    if target not in frontier:
                        nxt[target] = nxt.get(target, 0.0) + act * cfg.link_decay
            if not nxt:
                break
            missing = [i for i in nxt if i not in pool.rows]
            if missing and view is not None:
                pool.take(view, [view.index[i] for i in missing if i in view.index])
            elif missing:
                where = build_where(self._namespace, flt, ids=missing)
                pool.add(await self._store._aquery(where, _COLUMNS))
            nxt = {i: a for i, a in nxt.items() if i in pool.rows and _passes(pool.memory(i), flt)}
            for i, a in nxt.items():
                activation[i] = activation.get(i, 0.0) + a
            frontier = nxt
        if not activation:
            return None
        ranked = sorted(activation, key=lambda i: (-activation[i], i))
        return RankedList("links", tuple(ranked), cfg.weights.links, "links")

    async def _rerank(
        self,
        query: str,
        fused: Sequence[FusedHit],
        memories: Mapping[str, Memory],
        base: dict[str, float],
        cfg: RecallConfig,
        plan: _Plan,
    ) -> tuple[dict[str, float], dict[str, float]]:
        assert self._reranker is not None
        head = [h.id for h in fused[: cfg.rerank_depth]]
        try:
            raw = await self._reranker.arerank(query, [memories[i].text for i in head])
            scores = [float(s) for s in raw]
            if len(scores) != len(head) or not all(math.isfinite(s) for s in scores):
                raise ValueError(f"expected {len(head)} finite scores, got {len(scores)}")
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            warnings.warn(
                f"memory-retrievers: reranker failed ({exc!r}); using fused scores", RuntimeWarning, stacklevel=2
            )
            plan.notes.append("reranker failed; skipped")
            return {}, base
        rr = dict(zip(head, scores, strict=True))
        lo, hi = min(scores), max(scores)
        blo, bhi = min(base[i] for i in head), max(base[i] for i in head)
        w = cfg.rerank_weight
        out = dict(base)
        # Both normalised to [0, 1] over the head, blended, and mapped back onto the head's score
        # range, so items below the rerank depth keep their place under it.
        for i in head:
            nb = (base[i] - blo) / (bhi - blo) if bhi > blo else 1.0
            nr = (rr[i] - lo) / (hi - lo) if hi > lo else 1.0
            out[i] = blo + ((1 - w) * nb + w * nr) * (bhi - blo)
        return rr, out


_COLUMNS = [*SCALAR_COLUMNS, "vector"]


class _Pool:
    """Rows found by the channels of one recall, by id (first occurrence wins)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self._memories: dict[str, Memory] = {}

    def add(self, table: pa.Table) -> tuple[str, ...]:
        """Record a channel's rows; returns its ids in rank order."""
        ids = table.column("id").to_pylist()
        new = [i for i, id_ in enumerate(ids) if id_ not in self.rows]
        if new:
            part = table.take(pa.array(new, pa.int64()))
            vectors = vectors_of(part)
            for j, row in enumerate(part.drop_columns(["vector"]).to_pylist()):
                self.rows[row["id"]] = row
                self.vectors[row["id"]] = vectors[j]
        return tuple(ids)

    def take(self, view: NamespaceView, indices: Sequence[int]) -> tuple[str, ...]:
        """Record rows of a namespace view (no copies); returns their ids in order."""
        ids = []
        for i in indices:
            row = view.rows[i]
            ids.append(row["id"])
            if row["id"] not in self.rows:
                self.rows[row["id"]] = row
                self.vectors[row["id"]] = view.vectors[i]
                self._memories[row["id"]] = view.memory(i)
        return tuple(ids)

    def memory(self, id_: str) -> Memory:
        """The row as a :class:`Memory` (without its vector), built once."""
        mem = self._memories.get(id_)
        if mem is None:
            mem = self._memories[id_] = row_to_memory(self.rows[id_])
        return mem


async def _given(vector: np.ndarray) -> np.ndarray:
    return vector


def _id_set(ids: Collection[str] | None) -> frozenset[str]:
    """``exclude_ids`` as a set; a lone str would silently exclude its characters, so it is refused."""
    if ids is None:
        return frozenset()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Collection):
        raise InvalidInputError(f"exclude_ids must be a list or set of memory ids, got {type(ids).__name__}")
    bad = next((i for i in ids if not isinstance(i, str)), None)
    if bad is not None:
        raise InvalidInputError(f"exclude_ids must hold str memory ids, got {type(bad).__name__} {bad!r}")
    return frozenset(ids)


def _filled(spec: RankedList, found: Found) -> RankedList:
    ids, ranks = found
    return replace(spec, ids=ids, ranks=ranks)


def _view_mask(view: NamespaceView, flt: MemoryFilter) -> np.ndarray:
    """Which rows of the view pass the filter (the same predicate LanceDB applies)."""
    constrained = flt.model_dump(exclude_defaults=True, exclude={"include_superseded"})
    if not constrained:
        return view.live.copy() if not flt.include_superseded else np.ones(len(view), dtype=bool)
    return np.fromiter((_passes(view.memory(i), flt) for i in range(len(view))), dtype=bool, count=len(view))


def _passes(memory: Memory, flt: MemoryFilter) -> bool:
    """The metadata filter, evaluated in Python for memories reached through links."""
    if not flt.include_superseded and memory.superseded_by is not None:
        return False
    if flt.kinds is not None and memory.kind not in flt.kinds:
        return False
    for values, value in (
        (flt.session_ids, memory.session_id),
        (flt.projects, memory.project),
        (flt.topics, memory.topic),
    ):
        if values is not None and value not in values:
            return False
    if flt.tags_any is not None and not set(flt.tags_any) & set(memory.tags):
        return False
    if flt.tags_all is not None and not set(flt.tags_all) <= set(memory.tags):
        return False
    if flt.entities_any is not None and not {e.strip().casefold() for e in flt.entities_any} & set(memory.entities):
        return False
    if flt.pinned is not None and memory.pinned != flt.pinned:
        return False
    created = memory.created_at or datetime.min.replace(tzinfo=timezone.utc)
    if flt.created_after is not None and created < flt.created_after:
        return False
    return not (flt.created_before is not None and created >= flt.created_before)
