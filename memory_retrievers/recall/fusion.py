"""Weighted reciprocal rank fusion (pure functions, no I/O).

For ranked lists ``L_1..L_n`` with weights ``w_i``, a memory's fused score is::

    score(d) = Σ_i  w_i / (k_rrf + rank_i(d))   +   bonus(best_rank(d))

with ranks counted **from 1** (LangChain ``EnsembleRetriever`` and LanceDB ``RRFReranker``
convention; LlamaIndex counts from 0), ``k_rrf = 60`` (Cormack et al. 2009), lists that do not
contain ``d`` contributing nothing, and a top-rank bonus given once per memory from its best rank
over all lists with a positive weight: ``rank1_bonus`` (0.05) for a first place, ``top3_bonus``
(0.02) for a second or third. Identity is the memory id; inputs are never modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Contribution", "FusedHit", "RankedList", "weighted_rrf"]


@dataclass(frozen=True, slots=True)
class RankedList:
    """One ranked list of memory ids (best first) from one channel and query variant.

    Attributes:
        label: Names the list in explanations, e.g. ``"bm25"`` or ``"vector:expansion 1"``.
        ids: Memory ids, best first; duplicates after the first occurrence are ignored.
        weight: Its weight in the fusion (0 = shown in explanations but not counted).
        channel: The channel that produced it (``"vector"``, ``"bm25"``...).
        ranks: The rank of each id (from 1), when ties share a rank (see :func:`tied_ranks`);
            ``None`` ranks by position.
    """

    label: str
    ids: tuple[str, ...]
    weight: float = 1.0
    channel: str = ""
    ranks: tuple[int, ...] | None = None


def tied_ranks(scores: Sequence[float]) -> tuple[int, ...]:
    """Competition ranks ("1224") of scores sorted best first: equal scores share the best rank.

    A channel that cannot tell memories apart (every memory matches a BM25 query only on the
    user's name, say) then adds the same amount to each instead of an arbitrary order.

    >>> tied_ranks([9.0, 7.5, 7.5, 3.0])
    (1, 2, 2, 4)
    """
    ranks: list[int] = []
    for i, score in enumerate(scores):
        ranks.append(ranks[-1] if i and score == scores[i - 1] else i + 1)
    return tuple(ranks)


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one list added to one memory's fused score."""

    label: str
    channel: str
    rank: int
    weight: float
    value: float


@dataclass(frozen=True, slots=True)
class FusedHit:
    """A memory's fused score and where it came from."""

    id: str
    score: float
    bonus: float
    contributions: tuple[Contribution, ...]

    @property
    def best_rank(self) -> int:
        """Its best rank over the lists that counted."""
        return min(c.rank for c in self.contributions)


def weighted_rrf(
    lists: Sequence[RankedList],
    *,
    k_rrf: float = 60.0,
    rank1_bonus: float = 0.05,
    top3_bonus: float = 0.02,
) -> list[FusedHit]:
    """Fuse ranked lists; returns hits ordered by fused score (ties: better best rank, then id).

    Args:
        lists: The ranked lists; negative weights are rejected.
        k_rrf: The RRF constant (> 0); larger flattens the difference between ranks.
        rank1_bonus: Added once to a memory ranked first in any counted list.
        top3_bonus: Added once to a memory whose best rank is 2 or 3.

    Raises:
        ValueError: ``k_rrf <= 0`` or a negative weight/bonus.
    """
    if k_rrf <= 0:
        raise ValueError(f"k_rrf must be > 0, got {k_rrf}")
    if rank1_bonus < 0 or top3_bonus < 0:
        raise ValueError("bonuses must be >= 0")
    contributions: dict[str, list[Contribution]] = {}
    for lst in lists:
        if lst.weight < 0:
            raise ValueError(f"list {lst.label!r} has a negative weight {lst.weight}")
        if lst.ranks is not None and len(lst.ranks) != len(lst.ids):
            raise ValueError(f"list {lst.label!r} has {len(lst.ids)} ids but {len(lst.ranks)} ranks")
        seen: set[str] = set()
        rank = 0
        for position, id_ in enumerate(lst.ids):
            if id_ in seen:
                continue
            seen.add(id_)
            rank = lst.ranks[position] if lst.ranks is not None else rank + 1
            value = lst.weight / (k_rrf + rank)
            contributions.setdefault(id_, []).append(Contribution(lst.label, lst.channel, rank, lst.weight, value))
    hits = []
    for id_, parts in contributions.items():
        counted = [c.rank for c in parts if c.weight > 0]
        best = min(counted) if counted else None
        bonus = rank1_bonus if best == 1 else top3_bonus if best is not None and best <= 3 else 0.0
        hits.append(FusedHit(id_, sum(c.value for c in parts) + bonus, bonus, tuple(parts)))
    hits.sort(key=lambda h: (-h.score, h.best_rank, h.id))
    return hits
