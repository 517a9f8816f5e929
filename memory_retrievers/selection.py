"""Choosing what goes into the prompt (pure functions): budgeted, diverse, pinned-first.

Candidates arrive sorted by final score. Selection takes, in order:

1. pinned candidates (if ``pinned_first``), best first;
2. for aggregation questions (``session_diverse``), the best candidate of each not-yet-covered
   session, up to half of ``k`` — so "what are all the places X visited" sees many sessions;
3. then maximal marginal relevance: repeatedly the candidate maximising
   ``λ · score/max_score - (1 - λ) · max cosine similarity to what is already selected``.

Every step skips a candidate whose token cost exceeds the budget left and keeps trying smaller
ones (greedy fill); ``k`` caps the count. Nothing is modified; rejected candidates say why.

With ``section_reserve``, each section (pinned, facts, conversation) holds a reservation of the
budget that the other sections may not spend while it still has candidates; a section that runs out
of candidates releases what it did not use. When nothing fits under the reservations, they are
dropped and the rest of the budget goes to the best candidates left, so no budget is wasted.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Candidate", "CutReason", "Rejected", "Selected", "maximal_marginal_relevance", "select"]


class CutReason(str, enum.Enum):
    """Why a candidate is not in the result."""

    OVER_BUDGET = "over_budget"
    """It did not fit in what was left of the token budget."""
    K_CAP = "k_cap"
    """``k`` memories were already chosen."""
    BELOW_FLOOR = "below_floor"
    """Its final score was below ``relevance_floor`` times the best one's."""
    BELOW_RELEVANCE = "below_relevance"
    """Its relevance (cosine similarity to the query) was below ``min_relevance``."""
    BELOW_SCORE = "below_score"
    """Its calibrated score was below ``min_score`` (or the calibration's floor)."""
    ABSTAINED = "abstained"
    """No candidate scored ``abstain_below``: the query is taken as one the memories do not answer."""
    COPY = "copy"
    """It says the same as a better line in the block (``collapse_copies``)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory competing for a place in the context."""

    id: str
    score: float
    tokens: int
    vector: np.ndarray | None = None
    pinned: bool = False
    session: str | None = None
    section: str | None = None


@dataclass(frozen=True, slots=True)
class Selected:
    """A chosen candidate, in output order, with the MMR penalty it paid (0 if none)."""

    id: str
    mmr_penalty: float
    phase: str


@dataclass(frozen=True, slots=True)
class Rejected:
    """A candidate left out, and why."""

    id: str
    reason: CutReason


def maximal_marginal_relevance(
    scores: Sequence[float], vectors: np.ndarray, *, lambda_mult: float = 0.6, k: int
) -> list[int]:
    """Plain MMR order over all items (no budget): indices of the first ``k`` picks.

    ``scores`` are normalised by their maximum, ``vectors`` must be L2-normalised rows.
    """
    if not len(scores):
        return []
    rel = np.asarray(scores, dtype=np.float64)
    top = rel.max()
    rel = rel / top if top > 0 else rel
    sims = vectors @ vectors.T
    picked: list[int] = []
    max_sim = np.full(len(rel), -np.inf)
    available = np.ones(len(rel), dtype=bool)
    while len(picked) < min(k, len(rel)):
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0)
        value = lambda_mult * rel - (1 - lambda_mult) * penalty
        value[~available] = -np.inf
        i = int(np.argmax(value))
        picked.append(i)
        available[i] = False
        max_sim = np.maximum(max_sim, sims[i])
    return picked


def select(
    candidates: Sequence[Candidate],
    *,
    k: int,
    token_budget: int | None,
    mmr_lambda: float | None = 0.6,
    pinned_first: bool = True,
    session_diverse: bool = False,
    token_cost: Callable[[Candidate], int] | None = None,
    mmr_similarity_floor: float,
    section_reserve: Mapping[str, int] | None = None,
    section_opening: Mapping[str, int] | None = None,
) -> tuple[list[Selected], list[Rejected]]:
    """Pick up to ``k`` candidates within ``token_budget`` tokens.

    Args:
        candidates: Sorted by score, best first.
        k: Maximum number selected (>= 1).
        token_budget: Maximum total tokens, or ``None`` for no budget.
        mmr_lambda: MMR trade-off in [0, 1] (1 = pure score order); ``None`` disables MMR.
            Candidates without vectors pay no MMR penalty.
        pinned_first: Take pinned candidates before anything else.
        session_diverse: Take the best candidate of each session first (up to ``ceil(k/2)``).
        mmr_similarity_floor: Similarity below which MMR applies no penalty (0 = classic MMR;
            ``RecallConfig.mmr_similarity_floor`` is 0.9).
            Related-but-distinct memories (two turns of one conversation) are then not pushed
            down; only near-duplicates are.
        token_cost: Computes a candidate's cost when selection first needs it (default: its
            ``tokens``); lets callers skip counting candidates that are never considered.
        section_reserve: Tokens reserved per ``Candidate.section`` (see the module docstring);
            ``None`` or empty reserves nothing. Only meaningful with a ``token_budget``.
        section_opening: Tokens of each section's title line; titles are paid once the selection
            holds candidates of two sections (a block of one section has no titles).

    Returns:
        The selected candidates in output order, and every other candidate with its reason.
    """
    n = len(candidates)
    budget = math.inf if token_budget is None else token_budget
    used = 0
    taken: list[Selected] = []
    chosen = np.zeros(n, dtype=bool)
    rejected: dict[int, CutReason] = {}
    scores = np.asarray([c.score for c in candidates], dtype=np.float64)
    top = scores.max() if n else 0.0
    rel = scores / top if top > 0 else scores
    has_vec = np.asarray([c.vector is not None for c in candidates], dtype=bool)
    matrix: np.ndarray | None = None
    if n and has_vec.any():
        dim = next(len(c.vector) for c in candidates if c.vector is not None)
        zero = np.zeros(dim, dtype=np.float32)
        matrix = np.stack(
            [np.asarray(c.vector, dtype=np.float32) if c.vector is not None else zero for c in candidates]
        )
    # Similarities are taken row by row as candidates are picked (k matrix-vector products): the
    # full n x n product cost 1.6 ms per recall on 2 cores, BLAS threads contending with the
    # embedding and search threads, for a matrix MMR reads k rows of.
    max_sim = np.zeros(n)
    any_selected_with_vec = False

    cost_of = token_cost or (lambda c: c.tokens)
    costs: dict[int, int] = {}

    def cost(i: int) -> int:
        if i not in costs:
            costs[i] = cost_of(candidates[i])
        return costs[i]

    reserve = dict(section_reserve or {}) if token_budget is not None else {}
    spent: dict[str | None, int] = {}
    open_in: dict[str | None, int] = {}
    for c in candidates:
        open_in[c.section] = open_in.get(c.section, 0) + 1

    def held_for_others(section: str | None) -> int:
        # What the other sections still reserve: only while they have candidates left to use it.
        return sum(
            max(0, share - spent.get(other, 0))
            for other, share in reserve.items()
            if other != section and open_in.get(other, 0) > 0
        )

    def close(i: int) -> None:
        open_in[candidates[i].section] -= 1

    opening = section_opening or {}

    def cost_now(i: int) -> int:
        # Titles appear once the block holds two sections: the memory that opens the second
        # section pays both titles, any later section its own.
        section = candidates[i].section
        opened = [s for s in spent if s is not None]
        if section is None or section in spent or not opened:
            return cost(i)
        return cost(i) + opening.get(section, 0) + (opening.get(opened[0], 0) if len(opened) == 1 else 0)

    def fits(i: int) -> bool:
        if token_budget is None:
            return True  # no budget, no reservations: nothing to count
        if cost_now(i) + used > budget:
            rejected[i] = CutReason.OVER_BUDGET
            close(i)
            return False
        # Over another section's reservation: not rejected, it may fit once that is released.
        return not reserve or cost_now(i) + used + held_for_others(candidates[i].section) <= budget

    def take(i: int, phase: str, penalty: float) -> None:
        nonlocal used, any_selected_with_vec
        section = candidates[i].section
        paid = 0 if token_budget is None else cost_now(i)
        used += paid
        spent[section] = spent.get(section, 0) + paid
        close(i)
        chosen[i] = True
        taken.append(Selected(candidates[i].id, penalty, phase))
        if has_vec[i] and matrix is not None:
            np.maximum(max_sim, matrix @ matrix[i], out=max_sim)
            any_selected_with_vec = True

    if pinned_first:
        for i in range(n):
            if len(taken) >= k:
                break
            if candidates[i].pinned and i not in rejected and fits(i):
                take(i, "pinned", 0.0)
    if session_diverse:
        quota = len(taken) + math.ceil(k / 2)
        covered = {candidates[i].session for i in range(n) if chosen[i]}
        for i in range(n):
            if len(taken) >= min(k, quota):
                break
            session = candidates[i].session
            if chosen[i] or i in rejected or session in covered:
                continue
            if fits(i):
                take(i, "session", 0.0)
                covered.add(session)
    lam = 1.0 if mmr_lambda is None else mmr_lambda
    while len(taken) < k:
        open_ = [i for i in range(n) if not chosen[i] and i not in rejected]
        if not open_:
            break
        idx = np.asarray(open_)
        sim = np.where(has_vec[idx] & any_selected_with_vec, max_sim[idx], 0.0)
        penalty = (1 - lam) * np.where(sim >= mmr_similarity_floor, sim, 0.0)
        value = lam * rel[idx] - penalty
        order = np.argsort(-value, kind="stable")
        for j in order:
            i = int(idx[j])
            if fits(i):
                take(i, "mmr" if mmr_lambda is not None else "score", float(penalty[j]))
                break
        else:
            if reserve and any(i not in rejected for i in open_):
                reserve = {}  # nothing fits under the reservations: the rest goes to the best left
    for i in range(n):
        if not chosen[i] and i not in rejected:
            rejected[i] = CutReason.K_CAP
    return taken, [Rejected(candidates[i].id, reason) for i, reason in sorted(rejected.items())]
