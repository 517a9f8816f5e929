"""The last stage: relevance floor, selection within ``k`` and the token budget, the result.

Token costs are counted lazily (only what selection looks at), and the finished context block is
counted once more: BPE merges across lines could in theory make it cost more than the sum of its
lines, so memories are dropped from the end until it fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..models import Memory
from ..recall_config import RecallConfig
from ..results import CONTEXT_HEADER, CutCandidate, Explanation, RecallResult, ScoredMemory, render_line, trimmed_marker
from ..sections import SECTION_TITLES, section_of
from ..selection import Candidate, CutReason, select
from ..tokens import TokenCounter
from .blend import Scored
from .plan import Plan

__all__ = ["Assembly", "assemble"]


@dataclass(frozen=True, slots=True)
class Assembly:
    """Everything the last stage needs besides the scored candidates."""

    query: str
    memories: Mapping[str, Memory]
    vectors: Mapping[str, np.ndarray]
    semantic: Mapping[str, float]
    base: Mapping[str, float]
    rerank_scores: Mapping[str, float]
    plan: Plan
    lists: Sequence[str]
    folded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)


def assemble(
    scored: Sequence[Scored],
    parts: Assembly,
    cfg: RecallConfig,
    *,
    k: int,
    budget: int | None,
    explain: bool,
    counter: TokenCounter,
) -> RecallResult:
    """Cut below the floor, select, explain, and fit the context block into the budget."""
    memories = parts.memories
    cut: list[CutCandidate] = []
    best = scored[0].score if scored else 0.0
    kept: list[Scored] = []
    for item in scored:
        mem = memories[item.hit.id]
        if cfg.relevance_floor > 0 and item.score < cfg.relevance_floor * best:
            cut.append(CutCandidate(item.hit.id, CutReason.BELOW_FLOOR, item.score, mem.text))
        elif relevance(parts.semantic, item.hit.id) < cfg.min_relevance and not mem.pinned:
            cut.append(CutCandidate(item.hit.id, CutReason.BELOW_RELEVANCE, item.score, mem.text))
        else:
            kept.append(item)

    sections = {item.hit.id: section_of(memories[item.hit.id]) for item in kept}
    header_cost = counter.count(CONTEXT_HEADER)
    # A section's title is paid by the first memory selection takes from it.
    opening = {s.value: counter.count("\n" + SECTION_TITLES[s]) for s in set(sections.values())}
    marker_cost = counter.count("\n" + trimmed_marker(len(kept)))
    avail = None if budget is None else max(0, budget - header_cost - marker_cost)
    reserve = {} if avail is None else {s.value: int(share * avail) for s, share in cfg.section_shares.items()}
    costs: dict[str, int] = {}

    def cost(c: Candidate) -> int:
        if c.id not in costs:
            costs[c.id] = counter.count("\n" + render_line(memories[c.id], parts.notes.get(c.id)))
        return costs[c.id]

    candidates = [
        Candidate(
            s.hit.id,
            s.score,
            0,
            parts.vectors[s.hit.id],
            memories[s.hit.id].pinned,
            memories[s.hit.id].session_id,
            sections[s.hit.id].value,
        )
        for s in kept
    ]
    chosen, rejected = select(
        candidates,
        k=k,
        token_budget=avail,
        mmr_lambda=cfg.mmr_lambda if cfg.mmr else None,
        pinned_first=cfg.pinned_first,
        session_diverse=parts.plan.session_diverse,
        token_cost=cost,
        mmr_similarity_floor=cfg.mmr_similarity_floor,
        section_reserve=reserve,
        section_opening=opening,
    )
    by_id = {s.hit.id: s for s in kept}
    over_budget = sum(1 for r in rejected if r.reason is CutReason.OVER_BUDGET)
    out = []
    for sel in chosen:
        s = by_id[sel.id]
        mem = memories[sel.id]
        h = s.hit
        out.append(
            ScoredMemory(
                memory=mem,
                score=s.score,
                relevance=relevance(parts.semantic, h.id),
                note=parts.notes.get(h.id),
                explanation=Explanation(
                    channels=h.contributions,
                    rank_bonus=h.bonus,
                    fused_score=h.score,
                    semantic=parts.semantic.get(h.id),
                    rerank_score=parts.rerank_scores.get(h.id),
                    base_score=parts.base[h.id],
                    multipliers=s.multipliers,
                    final_score=s.score,
                    mmr_penalty=sel.mmr_penalty,
                    tokens=cost(Candidate(sel.id, s.score, 0)),
                    phase=sel.phase,
                    superseded=mem.superseded_by is not None,
                    folded=parts.folded.get(h.id, ()),
                ),
            )
        )
    plan: dict[str, Any] = {**parts.plan.as_dict(), "lists": list(parts.lists)}
    result = RecallResult(
        query=parts.query,
        memories=tuple(out),
        tokens_used=0,
        token_budget=budget,
        trimmed=over_budget > 0,
        trimmed_count=over_budget,
        plan=plan,
    )
    result = _fit(result, budget, counter)
    if explain:
        cut += [CutCandidate(r.id, r.reason, by_id[r.id].score, memories[r.id].text) for r in rejected]
        result = replace(result, cut=tuple(cut))
    return result


def relevance(semantic: Mapping[str, float], memory_id: str) -> float:
    """A memory's relevance: its cosine similarity to the query, clipped to [0, 1]."""
    return min(1.0, max(0.0, semantic.get(memory_id, 0.0)))


def _fit(result: RecallResult, budget: int | None, counter: TokenCounter) -> RecallResult:
    """Count the real context block and drop memories from the end until it fits."""
    memories = list(result.memories)
    dropped = 0
    while True:
        current = replace(
            result,
            memories=tuple(memories),
            trimmed=result.trimmed or dropped > 0,
            trimmed_count=result.trimmed_count + dropped,
        )
        used = counter.count(current.to_context())
        if budget is None or used <= budget or not memories:
            return replace(current, tokens_used=used if memories else 0)
        memories.pop()
        dropped += 1
