"""From ranked lists to final scores: fusion, the semantic and reranker blends, multipliers."""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memory_retrievers.errors import MemoryRetrieversError
from memory_retrievers.models import Memory
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.fusion import FusedHit, RankedList, weighted_rrf
from memory_retrievers.recall.plan import Plan
from memory_retrievers.recall.rerank import Reranker
from memory_retrievers.recall.scoring import ScoringContext, multipliers
from memory_retrievers.runtime.plugin_loop import isolated
from memory_retrievers.runtime.plugins import PluginStalledError

__all__ = ["Scored", "final_scores", "fuse", "rerank", "semantic_blend"]


def fuse(lists: Sequence[RankedList], cfg: RecallConfig) -> list[FusedHit]:
    """Weighted RRF with the config's constants."""
    return weighted_rrf(
        lists, k_rrf=cfg.fusion.rrf_k, rank1_bonus=cfg.fusion.rank1_bonus, top3_bonus=cfg.fusion.top3_bonus
    )


def semantic_blend(fused: Sequence[FusedHit], semantic: Mapping[str, float], blend: float) -> dict[str, float]:
    """``(1 - b) * fused / max fused + b * max(0, cosine)`` (the fused score itself when ``b`` is 0)."""
    if blend == 0 or not fused:
        return {h.id: h.score for h in fused}
    top = max(h.score for h in fused) or 1.0
    return {h.id: (1 - blend) * (h.score / top) + blend * max(0.0, semantic.get(h.id, 0.0)) for h in fused}


async def rerank(
    reranker: Reranker,
    query: str,
    fused: Sequence[FusedHit],
    memories: Mapping[str, Memory],
    base: dict[str, float],
    cfg: RecallConfig,
    plan: Plan,
) -> tuple[dict[str, float], dict[str, float]]:
    """Blend a reranker's scores into the head of the list; returns (raw scores, new base scores).

    Both are min-max normalised over the head (``rerank_depth``), blended by ``rerank_weight`` and
    mapped back onto the head's score range, so items below the head keep their place under it.
    A reranker that fails or returns garbage is skipped with a warning.
    """
    head = [h.id for h in fused[: cfg.rerank.rerank_depth]]
    try:
        texts = [memories[i].text for i in head]
        raw = await asyncio.wait_for(
            isolated(lambda: reranker.arerank(query, texts)), timeout=cfg.rerank.rerank_timeout_s
        )
        scores = [float(s) for s in raw]
        if len(scores) != len(head) or not all(math.isfinite(s) for s in scores):
            raise ValueError(f"expected {len(head)} finite scores, got {len(scores)}")
    except MemoryRetrieversError as exc:
        if not isinstance(exc, PluginStalledError):
            raise
        return _skip(exc, plan, base)
    except Exception as exc:  # a failing, slow or garbage-returning reranker degrades to fused scores
        return _skip(exc, plan, base)
    rr = dict(zip(head, scores, strict=True))
    lo, hi = min(scores), max(scores)
    blo, bhi = min(base[i] for i in head), max(base[i] for i in head)
    w = cfg.rerank.rerank_weight
    out = dict(base)
    for i in head:
        nb = (base[i] - blo) / (bhi - blo) if bhi > blo else 1.0
        nr = (rr[i] - lo) / (hi - lo) if hi > lo else 1.0
        out[i] = blo + ((1 - w) * nb + w * nr) * (bhi - blo)
    return rr, out


def _skip(exc: BaseException, plan: Plan, base: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"failed ({exc!r})"
    warnings.warn(f"memory-retrievers: reranker {reason}; using fused scores", RuntimeWarning, stacklevel=3)
    plan.notes.append("reranker failed; skipped")
    return {}, base


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate after multipliers."""

    hit: FusedHit
    score: float
    multipliers: Mapping[str, float]


def final_scores(
    fused: Sequence[FusedHit],
    memories: Mapping[str, Memory],
    base: Mapping[str, float],
    ctx: ScoringContext,
    cfg: RecallConfig,
) -> list[Scored]:
    """``base * product(multipliers)`` per candidate, best first (ties: better rank, then id)."""
    params = cfg.scoring
    out = []
    for h in fused:
        mult = multipliers(memories[h.id], ctx, params)
        out.append(Scored(h, base[h.id] * math.prod(mult.values()), mult))
    out.sort(key=lambda s: (-s.score, s.hit.best_rank, s.hit.id))
    return out
