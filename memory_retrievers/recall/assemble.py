"""The last stage: calibrated scores, floors, copies folded, selection within ``k`` and the token budget.

Token costs are counted lazily (only what selection looks at), and the finished context block is
counted once more: BPE merges across lines could in theory make it cost more than the sum of its
lines, so memories are dropped from the end until it fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memory_retrievers.models import Memory
from memory_retrievers.recall.abstention import asks_about_the_user, held_subject
from memory_retrievers.recall.blend import Scored
from memory_retrievers.recall.calibration import FEATURES, Calibration, Signals, feature_matrix, query_terms
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.copies import fold_copies, note_copies
from memory_retrievers.recall.plan import Plan
from memory_retrievers.recall.results import (
    CONTEXT_HEADER,
    CutCandidate,
    Explanation,
    RecallResult,
    ScoredMemory,
    render_line,
    trimmed_marker,
)
from memory_retrievers.recall.sections import SECTION_TITLES, ContextSection, section_of
from memory_retrievers.recall.selection import Candidate, CutReason, Rejected, Selected, SelectionParams, select
from memory_retrievers.recall.updates import asks_about_the_past, brought_back, line_of, numbers_update, updates_first
from memory_retrievers.text.hedges import is_hedge
from memory_retrievers.text.lines import excerpt as excerpt_of
from memory_retrievers.tokens import TokenCounter

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
    calibration: Calibration,
) -> RecallResult:
    """Score, cut below the floors, fold copies, select, explain, and fit the block into the budget.

    Every candidate gets its calibrated score first (its features are relative to the whole
    candidate list), then the floors cut, copies fold into their best line, and selection takes
    candidates in calibrated order; the result comes in that order too, so the score a caller
    sees is monotone with the block.
    """
    asked = query_terms(parts.plan.features.keywords)
    signals = [_signals(item, position, parts, asked) for position, item in enumerate(scored, 1)]
    features = calibration.within_limits(feature_matrix(signals))  # what the explanation shows is what it read
    probability = calibration.probabilities(features)
    kept, cut = _floors(scored, probability, parts, cfg, calibration)
    newest_first = cfg.selection.newest_first and not asks_about_the_past(parts.query, parts.plan.features)
    if newest_first:
        probability = _keep_updates(kept, cut, scored, probability, parts, cfg)
    kept.sort(key=lambda i: -probability[i])  # calibrated order; ties keep the final-score order
    kept, lines, folded = _shown(kept, scored, parts, cfg, asked)
    cut += [_cut(scored[i], CutReason.COPY, probability[i], parts.memories) for i in folded]
    index = {scored[i].hit.id: i for i in kept}
    selection = _select(kept, scored, probability, parts, cfg, k=k, budget=budget, counter=counter, lines=lines)
    chosen, rejected, costs = selection
    out = [
        _scored_memory(
            scored[i],
            sel,
            float(probability[i]),
            features[i],
            parts,
            lines=lines,
            tokens=costs[sel.id],
            calibrated_by=calibration.name,
        )
        for i, sel in sorted(((index[c.id], c) for c in chosen), key=lambda pair: -probability[pair[0]])
    ]
    if newest_first:
        out = updates_first(out, parts.vectors, cfg.selection.subject_cosine, parts.query)
    result = _fit(_result(parts, out, rejected, budget, calibration), budget, counter)
    if explain:
        cut += [_cut(scored[index[r.id]], r.reason, probability[index[r.id]], parts.memories) for r in rejected]
        result = replace(result, cut=tuple(cut))
    return result


@dataclass(frozen=True, slots=True)
class _Lines:
    """How each kept candidate is shown: its note, its excerpt, and the copies folded into it."""

    notes: Mapping[str, str]
    excerpts: Mapping[str, str]
    copies: Mapping[str, tuple[str, ...]]

    def render(self, id_: str, memory: Memory) -> str:
        """The memory's line of the block, with the newline that precedes it (what it costs)."""
        return "\n" + render_line(memory, self.notes.get(id_), self.excerpts.get(id_))


def _shown(
    kept: list[int], scored: Sequence[Scored], parts: Assembly, cfg: RecallConfig, asked: tuple[str, ...]
) -> tuple[list[int], _Lines, list[int]]:
    """Copies folded into their best line (``collapse_copies``), and how each kept line is shown.

    Returns the kept candidates, their lines, and the candidates folded away.
    """
    notes = dict(parts.notes)
    copies: dict[str, tuple[str, ...]] = {}
    folded: list[int] = []
    if cfg.selection.collapse_copies:
        kept, copies, folded = fold_copies(kept, [s.hit.id for s in scored], parts.memories)
        note_copies(notes, copies, parts.memories)
    excerpts = _excerpts([scored[i].hit.id for i in kept], parts.memories, asked, cfg.selection.excerpt_chars)
    return kept, _Lines(notes, excerpts, copies), folded


def _excerpts(ids: Sequence[str], memories: Mapping[str, Memory], asked: tuple[str, ...], chars: int) -> dict[str, str]:
    """The excerpt shown for each memory longer than ``chars`` (the part the query asks about)."""
    return {id_: excerpt_of(memories[id_].text, asked, chars) for id_ in ids if len(memories[id_].text) > chars}


def _result(
    parts: Assembly,
    memories: Sequence[ScoredMemory],
    rejected: Sequence[Rejected],
    budget: int | None,
    calibration: Calibration,
) -> RecallResult:
    """The result of the selected memories, before the block is counted (:func:`_fit`)."""
    over_budget = sum(1 for r in rejected if r.reason is CutReason.OVER_BUDGET)
    plan: dict[str, Any] = {**parts.plan.as_dict(), "lists": list(parts.lists), "calibration": calibration.name}
    return RecallResult(
        query=parts.query,
        memories=tuple(memories),
        tokens_used=0,
        token_budget=budget,
        trimmed=over_budget > 0,
        trimmed_count=over_budget,
        plan=plan,
    )


def _cut(item: Scored, reason: CutReason, probability: float, memories: Mapping[str, Memory]) -> CutCandidate:
    return CutCandidate(item.hit.id, reason, float(probability), memories[item.hit.id].text)


def _floors(
    scored: Sequence[Scored], probability: np.ndarray, parts: Assembly, cfg: RecallConfig, calibration: Calibration
) -> tuple[list[int], list[CutCandidate]]:
    """The candidates that pass every floor (by index), and the others with their reason.

    When no candidate reaches the abstention threshold (nor the relevance that vouches for one), every
    one but the pinned is cut: the query is taken as one the memories do not answer. The assistant
    saying it did not know is never an answer (:func:`is_hedge`). Pinned memories pass every floor.
    """
    floor = calibration.floor if cfg.relevance.min_score is None else cfg.relevance.min_score
    gate = calibration.abstain if cfg.relevance.abstain_below is None else cfg.relevance.abstain_below
    close = (
        calibration.abstain_relevance if cfg.relevance.abstain_relevance is None else cfg.relevance.abstain_relevance
    )
    nearest = max((relevance(parts.semantic, s.hit.id) for s in scored), default=0.0)
    abstain = bool(scored) and float(probability.max()) < gate and nearest < close
    if abstain and asks_about_the_user(parts.query):
        held = held_subject(parts.query, (parts.memories[s.hit.id].text for s in scored))
        if held is not None:
            abstain = False
            parts.plan.notes.append(f"did not abstain: a question about the user, and memories say {held!r}")
    if abstain:
        parts.plan.notes.append(
            f"abstained: the best score {probability.max():.3f} is below {gate:.3f} "
            f"and the best relevance {nearest:.3f} below {close:.3f}"
        )
    best = scored[0].score if scored else 0.0
    kept: list[int] = []
    cut: list[CutCandidate] = []
    for i, item in enumerate(scored):
        mem = parts.memories[item.hit.id]
        reason = None
        if abstain and not mem.pinned:
            reason = CutReason.ABSTAINED
        elif not mem.pinned and is_hedge(mem.text):
            reason = CutReason.HEDGE
        elif cfg.relevance.relevance_floor > 0 and item.score < cfg.relevance.relevance_floor * best:
            reason = CutReason.BELOW_FLOOR
        elif not mem.pinned and relevance(parts.semantic, item.hit.id) < cfg.relevance.min_relevance:
            reason = CutReason.BELOW_RELEVANCE
        elif not mem.pinned and probability[i] < floor:
            reason = CutReason.BELOW_SCORE
        if reason is None:
            kept.append(i)
        else:
            cut.append(_cut(item, reason, probability[i], parts.memories))
    return kept, cut


#: Floors a newer line that updates a kept one is brought back past (never an abstention or a copy).
_UPDATES_PASS = frozenset({CutReason.BELOW_FLOOR, CutReason.BELOW_RELEVANCE, CutReason.BELOW_SCORE})


def _keep_updates(
    kept: list[int],
    cut: list[CutCandidate],
    scored: Sequence[Scored],
    probability: np.ndarray,
    parts: Assembly,
    cfg: RecallConfig,
) -> np.ndarray:
    """Bring back each cut candidate that updates a kept line, scored just above the line it updates.

    "where do I live now?" matches "I live in Lisbon" on every word and "I moved to Berlin" on
    few: the calibrated score cuts the move, and the block would state the old fact alone (see
    :func:`brought_back`). ``kept`` and ``cut`` change in place; returns the scores, those of the
    lines brought back raised.
    """
    at = {s.hit.id: i for i, s in enumerate(scored)}
    ids = [scored[i].hit.id for i in kept] + [c.id for c in cut if c.reason in _UPDATES_PASS]
    lines = [line_of(id_, parts.memories[id_], parts.vectors[id_]) for id_ in ids]
    numbers = numbers_update(parts.query)
    back = brought_back(lines[: len(kept)], lines[len(kept) :], cfg.selection.subject_cosine, numbers=numbers)
    if not back:
        return probability
    probability = probability.copy()
    for new, old in back.items():  # in the order found: a line is raised before the lines above it
        probability[at[new]] = max(probability[at[new]], np.nextafter(probability[at[old]], np.inf))
    kept += [at[new] for new in back]
    cut[:] = [c for c in cut if c.id not in back]
    parts.plan.notes.append(f"kept {len(back)} newer line(s) below a floor: each updates a line the block keeps")
    return probability


def _select(
    kept: Sequence[int],
    scored: Sequence[Scored],
    probability: np.ndarray,
    parts: Assembly,
    cfg: RecallConfig,
    *,
    k: int,
    budget: int | None,
    counter: TokenCounter,
    lines: _Lines,
) -> tuple[list[Selected], list[Rejected], dict[str, int]]:
    """Budgeted selection over the kept candidates, in calibrated order; also each line's token cost."""
    memories = parts.memories
    sections = {scored[i].hit.id: section_of(memories[scored[i].hit.id]) for i in kept}
    header_cost = counter.count(CONTEXT_HEADER)
    # A section's title is paid by the first memory selection takes from it.
    opening = {s.value: counter.count("\n" + SECTION_TITLES[s]) for s in set(sections.values())}
    marker_cost = counter.count("\n" + trimmed_marker(len(kept)))
    avail = None if budget is None else max(0, budget - header_cost - marker_cost)
    reserve = (
        {} if avail is None else {s.value: int(share * avail) for s, share in cfg.selection.section_shares.items()}
    )
    costs: dict[str, int] = {}

    def cost_of(c: Candidate) -> int:
        if c.id not in costs:
            costs[c.id] = counter.count(lines.render(c.id, memories[c.id]))
        return costs[c.id]

    candidates = [_candidate(scored[i].hit.id, float(probability[i]), parts, sections) for i in kept]
    params = SelectionParams(
        k=k,
        token_budget=avail,
        mmr_lambda=cfg.selection.mmr_lambda if cfg.selection.mmr else None,
        pinned_first=cfg.selection.pinned_first,
        session_diverse=parts.plan.session_diverse,
        token_cost=cost_of,
        mmr_similarity_floor=cfg.selection.mmr_similarity_floor,
        section_reserve=reserve,
        section_opening=opening,
    )
    chosen, rejected = select(candidates, params)
    for sel in chosen:
        cost_of(Candidate(sel.id, 0.0, 0))
    return chosen, rejected, costs


def _candidate(id_: str, probability: float, parts: Assembly, sections: Mapping[str, ContextSection]) -> Candidate:
    """A kept memory as selection sees it (its token cost is counted when selection needs it)."""
    memory = parts.memories[id_]
    return Candidate(id_, probability, 0, parts.vectors[id_], memory.pinned, memory.session_id, sections[id_].value)


def _scored_memory(
    item: Scored,
    sel: Selected,
    probability: float,
    features: np.ndarray,
    parts: Assembly,
    *,
    lines: _Lines,
    tokens: int,
    calibrated_by: str,
) -> ScoredMemory:
    """A chosen candidate as the result holds it, with its explanation."""
    h = item.hit
    mem = parts.memories[h.id]
    return ScoredMemory(
        memory=mem,
        score=probability,
        relevance=relevance(parts.semantic, h.id),
        note=lines.notes.get(h.id),
        excerpt=lines.excerpts.get(h.id),
        explanation=Explanation(
            channels=h.contributions,
            rank_bonus=h.bonus,
            fused_score=h.score,
            semantic=parts.semantic.get(h.id),
            rerank_score=parts.rerank_scores.get(h.id),
            base_score=parts.base[h.id],
            multipliers=item.multipliers,
            final_score=item.score,
            mmr_penalty=sel.mmr_penalty,
            tokens=tokens,
            phase=sel.phase,
            superseded=mem.superseded_by is not None,
            folded=parts.folded.get(h.id, ()),
            calibration=dict(zip(FEATURES, (float(v) for v in features), strict=True)),
            calibrated_by=calibrated_by,
            copies=lines.copies.get(h.id, ()),
        ),
    )


def _signals(item: Scored, position: int, parts: Assembly, asked: tuple[str, ...]) -> Signals:
    """What the calibration reads of one candidate."""
    ranks: dict[str, int] = {}
    lists = 0
    for c in item.hit.contributions:
        if c.weight > 0:
            lists += 1
            # HyDE searches vectors (an LLM's hypothetical memory, or the Rocchio vector): the
            # calibration, fitted without an LLM, reads it as the vector channel it is.
            channel = "vector" if c.channel == "hyde" else c.channel
            ranks[channel] = min(c.rank, ranks.get(channel, c.rank))
    memory = parts.memories[item.hit.id]
    return Signals(
        cosine=parts.semantic.get(item.hit.id, 0.0),
        final_score=item.score,
        position=position,
        ranks=ranks,
        lists=lists,
        multipliers=item.multipliers,
        text=memory.text,
        kind=memory.kind,
        query_terms=asked,
    )


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
