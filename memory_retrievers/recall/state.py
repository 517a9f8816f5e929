"""One recall's state, as its stages read and write it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from memory_retrievers.recall.blend import fuse
from memory_retrievers.recall.channel import ChannelQuery
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.fusion import FusedHit, RankedList
from memory_retrievers.recall.plan import Plan
from memory_retrievers.recall.scoring import ScoringContext

__all__ = ["RecallState"]


@dataclass
class RecallState:
    """What one recall found so far: its plan, lists, fused hits and timings.

    Attributes:
        config: This call's config.
        plan: What runs, and the notes reported in ``RecallResult.plan``.
        context: What the multipliers read (the time, project, topic; the speakers once known).
        query: The query as the channels see it (its vectors once embedded).
        vector: The query's unit vector for relevance and feedback (set once embedded).
        lists: Every ranked list so far, in the order they were searched.
        fused: The fused candidates, best first (after the caller's exclusions at the end).
        folded: Extracted facts folded into their source turns, by turn id.
        notes: The note shown under each candidate that has one.
        marks: Milliseconds since the start at each stage's end.
    """

    config: RecallConfig
    plan: Plan
    context: ScoringContext
    query: ChannelQuery
    vector: np.ndarray | None = None
    lists: list[RankedList] = field(default_factory=list)
    fused: list[FusedHit] = field(default_factory=list)
    folded: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    marks: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def mark(self, stage: str) -> None:
        """Record that ``stage`` ended now."""
        self.marks[stage] = round((time.perf_counter() - self.started) * 1000, 2)

    def add(self, lists: list[RankedList]) -> None:
        """Add lists and fuse again (nothing to do when there are none)."""
        if lists:
            self.lists += lists
            self.fused = fuse(self.lists, self.config)

    @property
    def query_vector(self) -> np.ndarray:
        """The query's vector (once embedded)."""
        if self.vector is None:
            raise RuntimeError("the query is not embedded yet")
        return self.vector
