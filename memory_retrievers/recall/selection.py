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
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Candidate",
    "CutReason",
    "Rejected",
    "Selected",
    "SelectionParams",
    "maximal_marginal_relevance",
    "select",
]


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
    HEDGE = "hedge"
    """The assistant said it did not know ("I don't think you've told me"): not an answer."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionParams:
    """How :func:`select` chooses (one value instead of ten keyword arguments)."""

    k: int
    """Maximum number selected (>= 1)."""
    token_budget: int | None
    """Maximum total tokens, or ``None`` for no budget."""
    mmr_similarity_floor: float
    """Similarity below which MMR applies no penalty (0 = classic MMR; ``RecallConfig.selection.mmr_similarity_floor``
    is 0.9): related-but-distinct memories (two turns of one conversation) are then not pushed down;
    only near-duplicates are."""
    mmr_lambda: float | None = 0.6
    """MMR trade-off in [0, 1] (1 = pure score order); ``None`` disables MMR. Candidates without
    vectors pay no MMR penalty."""
    pinned_first: bool = True
    """Take pinned candidates before anything else."""
    session_diverse: bool = False
    """Take the best candidate of each session first (up to ``ceil(k/2)``)."""
    token_cost: Callable[[Candidate], int] | None = None
    """Computes a candidate's cost when selection first needs it (default: its ``tokens``); lets
    callers skip counting candidates that are never considered."""
    section_reserve: Mapping[str, int] | None = None
    """Tokens reserved per ``Candidate.section`` (see the module docstring); ``None`` or empty
    reserves nothing. Only meaningful with a ``token_budget``."""
    section_opening: Mapping[str, int] | None = None
    """Tokens of each section's title line; titles are paid once the selection holds candidates of
    two sections (a block of one section has no titles)."""


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


def select(candidates: Sequence[Candidate], params: SelectionParams) -> tuple[list[Selected], list[Rejected]]:
    """Pick up to ``params.k`` candidates within ``params.token_budget`` tokens.

    Args:
        candidates: Sorted by score, best first.
        params: How to choose.

    Returns:
        The selected candidates in output order, and every other candidate with its reason.
    """
    state = _State.start(candidates, params)
    if params.pinned_first:
        _take_pinned(state)
    if params.session_diverse:
        _take_sessions(state)
    _take_by_mmr(state)
    return state.finish()


@dataclass(eq=False)
class _State:
    """A selection in progress: what is taken, rejected, spent, and the MMR similarity so far."""

    candidates: Sequence[Candidate]
    params: SelectionParams
    rel: np.ndarray  # scores over the best one
    has_vec: np.ndarray
    matrix: np.ndarray | None  # the candidates' vectors (zeros where none)
    budget: float
    reserve: dict[str, int]
    open_in: dict[str | None, int]  # candidates not yet taken or rejected, per section
    chosen: np.ndarray
    max_sim: np.ndarray  # each candidate's highest similarity to a taken one
    used: int = 0
    any_selected_with_vec: bool = False
    taken: list[Selected] = field(default_factory=list)
    rejected: dict[int, CutReason] = field(default_factory=dict)
    costs: dict[int, int] = field(default_factory=dict)
    spent: dict[str | None, int] = field(default_factory=dict)

    @classmethod
    def start(cls, candidates: Sequence[Candidate], params: SelectionParams) -> _State:
        """Nothing taken yet."""
        n = len(candidates)
        scores = np.asarray([c.score for c in candidates], dtype=np.float64)
        top = scores.max() if n else 0.0
        has_vec = np.asarray([c.vector is not None for c in candidates], dtype=bool)
        open_in: dict[str | None, int] = {}
        for c in candidates:
            open_in[c.section] = open_in.get(c.section, 0) + 1
        return cls(
            candidates=candidates,
            params=params,
            rel=scores / top if top > 0 else scores,
            has_vec=has_vec,
            matrix=_vectors(candidates) if n and has_vec.any() else None,
            budget=math.inf if params.token_budget is None else params.token_budget,
            reserve=dict(params.section_reserve or {}) if params.token_budget is not None else {},
            open_in=open_in,
            chosen=np.zeros(n, dtype=bool),
            # Similarities are taken row by row as candidates are picked (k matrix-vector products):
            # the full n x n product cost 1.6 ms per recall on 2 cores, BLAS threads contending with
            # the embedding and search threads, for a matrix MMR reads k rows of.
            max_sim=np.zeros(n),
        )

    def full(self) -> bool:
        return len(self.taken) >= self.params.k

    def available(self, i: int) -> bool:
        return not self.chosen[i] and i not in self.rejected

    def finish(self) -> tuple[list[Selected], list[Rejected]]:
        """The result: what was taken, and every other candidate with its reason (``k_cap`` if none)."""
        for i in range(len(self.candidates)):
            if self.available(i):
                self.rejected[i] = CutReason.K_CAP
        return self.taken, [Rejected(self.candidates[i].id, r) for i, r in sorted(self.rejected.items())]


def _vectors(candidates: Sequence[Candidate]) -> np.ndarray:
    """The candidates' vectors as rows (zeros for a candidate without one)."""
    dim = next(len(c.vector) for c in candidates if c.vector is not None)
    zero = np.zeros(dim, dtype=np.float32)
    return np.stack([np.asarray(c.vector, dtype=np.float32) if c.vector is not None else zero for c in candidates])


def _cost(state: _State, i: int) -> int:
    """A candidate's own token cost, computed when first needed."""
    if i not in state.costs:
        cost_of = state.params.token_cost
        state.costs[i] = cost_of(state.candidates[i]) if cost_of is not None else state.candidates[i].tokens
    return state.costs[i]


def _cost_now(state: _State, i: int) -> int:
    """What taking the candidate costs now, section titles included.

    Titles appear once the block holds two sections: the memory that opens the second section
    pays both titles, any later section its own.
    """
    section = state.candidates[i].section
    opened = [s for s in state.spent if s is not None]
    if section is None or section in state.spent or not opened:
        return _cost(state, i)
    opening = state.params.section_opening or {}
    return _cost(state, i) + opening.get(section, 0) + (opening.get(opened[0], 0) if len(opened) == 1 else 0)


def _held_for_others(state: _State, section: str | None) -> int:
    """What the other sections still reserve: only while they have candidates left to use it."""
    return sum(
        max(0, share - state.spent.get(other, 0))
        for other, share in state.reserve.items()
        if other != section and state.open_in.get(other, 0) > 0
    )


def _close(state: _State, i: int) -> None:
    state.open_in[state.candidates[i].section] -= 1


def _fits(state: _State, i: int) -> bool:
    """Whether the candidate can be taken now; one over the budget is rejected for good."""
    if state.params.token_budget is None:
        return True  # no budget, no reservations: nothing to count
    if _cost_now(state, i) + state.used > state.budget:
        state.rejected[i] = CutReason.OVER_BUDGET
        _close(state, i)
        return False
    if not state.reserve:
        return True
    # Over another section's reservation: not rejected, it may fit once that is released.
    return _cost_now(state, i) + state.used + _held_for_others(state, state.candidates[i].section) <= state.budget


def _take(state: _State, i: int, phase: str, penalty: float) -> None:
    section = state.candidates[i].section
    paid = 0 if state.params.token_budget is None else _cost_now(state, i)
    state.used += paid
    state.spent[section] = state.spent.get(section, 0) + paid
    _close(state, i)
    state.chosen[i] = True
    state.taken.append(Selected(state.candidates[i].id, penalty, phase))
    if state.has_vec[i] and state.matrix is not None:
        np.maximum(state.max_sim, state.matrix @ state.matrix[i], out=state.max_sim)
        state.any_selected_with_vec = True


def _take_pinned(state: _State) -> None:
    """Phase 1: pinned candidates, best first."""
    for i, c in enumerate(state.candidates):
        if state.full():
            break
        if c.pinned and i not in state.rejected and _fits(state, i):
            _take(state, i, "pinned", 0.0)


def _take_sessions(state: _State) -> None:
    """Phase 2: the best candidate of each session not yet covered, up to ``ceil(k / 2)`` of them."""
    quota = min(state.params.k, len(state.taken) + math.ceil(state.params.k / 2))
    covered = {state.candidates[i].session for i in range(len(state.candidates)) if state.chosen[i]}
    for i, c in enumerate(state.candidates):
        if len(state.taken) >= quota:
            break
        if not state.available(i) or c.session in covered:
            continue
        if _fits(state, i):
            _take(state, i, "session", 0.0)
            covered.add(c.session)


def _take_by_mmr(state: _State) -> None:
    """Phase 3: the candidate of highest marginal relevance that fits, until ``k`` or none is left."""
    params = state.params
    lam = 1.0 if params.mmr_lambda is None else params.mmr_lambda
    phase = "mmr" if params.mmr_lambda is not None else "score"
    chosen, rejected = state.chosen, state.rejected
    while not state.full():
        open_ = [i for i in range(len(state.candidates)) if not chosen[i] and i not in rejected]
        if not open_:
            break
        idx = np.asarray(open_)
        sim = np.where(state.has_vec[idx] & state.any_selected_with_vec, state.max_sim[idx], 0.0)
        penalty = (1 - lam) * np.where(sim >= params.mmr_similarity_floor, sim, 0.0)
        value = lam * state.rel[idx] - penalty
        for j in np.argsort(-value, kind="stable"):
            i = int(idx[j])
            if _fits(state, i):
                _take(state, i, phase, float(penalty[j]))
                break
        else:
            if state.reserve and any(i not in state.rejected for i in open_):
                state.reserve = {}  # nothing fits under the reservations: the rest goes to the best left
