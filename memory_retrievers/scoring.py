"""Score adjustments after fusion (pure functions): decay, priority, pin, kind, project, topic, cues.

The cues are a speaker or a date the query names. Each adjustment is a multiplier; the final score
is the fused score times their product, and every factor is reported so a score can be explained.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from .dates import DateSpan
from .models import Memory, MemoryKind
from .speakers import speaker_of

__all__ = ["DecayKind", "ScoringContext", "ScoringParams", "decay", "multipliers"]


class DecayKind(str, enum.Enum):
    """How relevance fades with time since a memory was last accessed (or created)."""

    HYPERBOLIC = "hyperbolic"
    """``1 / (1 + days / scale_days)``: gentle, never reaches 0."""
    EXPONENTIAL = "exponential"
    """``0.5 ** (days / half_life_days)``: halves every half-life."""
    NONE = "none"
    """No decay."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringParams:
    """The constants of :func:`multipliers`, all required.

    Build them with :meth:`RecallConfig.scoring_params() <memory_retrievers.RecallConfig.scoring_params>`
    (the defaults live there, once), and vary one with ``dataclasses.replace``.
    """

    decay_kind: DecayKind
    decay_scale_days: float
    half_life_days: float
    decay_weight: float
    pinned_boost: float
    kind_boosts: Mapping[MemoryKind, float]
    same_project_boost: float
    other_project_penalty: float
    no_project_penalty: float
    cross_topic_penalty: float
    speaker_boost: float
    date_boost: float


@dataclass(frozen=True, slots=True)
class ScoringContext:
    """Where and when the recall happens, and what the query names.

    Attributes:
        now: The time of the recall (decay counts from it).
        project: The caller's project, if any.
        topic: The caller's topic, if any.
        speakers: Chat speakers the query names, case-folded (see :mod:`memory_retrievers.speakers`).
        dates: Spans of time the query names (see :mod:`memory_retrievers.dates`).
    """

    now: datetime
    project: str | None = None
    topic: str | None = None
    speakers: frozenset[str] = frozenset()
    dates: tuple[DateSpan, ...] = ()


def decay(days: float, params: ScoringParams) -> float:
    """Decay factor in (0, 1] for a memory last touched ``days`` ago (negative days count as 0).

    ``decay_weight`` w blends it with no decay: ``(1 - w) + w * raw`` so w = 1 is the pure curve.
    """
    days = max(0.0, days)
    if params.decay_kind is DecayKind.NONE:
        raw = 1.0
    elif params.decay_kind is DecayKind.EXPONENTIAL:
        raw = math.pow(0.5, days / params.half_life_days)
    else:
        raw = 1.0 / (1.0 + days / params.decay_scale_days)
    return (1.0 - params.decay_weight) + params.decay_weight * raw


def multipliers(memory: Memory, ctx: ScoringContext, params: ScoringParams) -> dict[str, float]:
    """Every multiplier that applies to ``memory``, by name (1.0 entries are included)."""
    touched = memory.last_accessed_at or memory.created_at or ctx.now
    days = (ctx.now - touched).total_seconds() / 86_400.0
    out = {
        "decay": decay(days, params),
        "priority": memory.priority,
        "pinned": params.pinned_boost if memory.pinned else 1.0,
        "kind": params.kind_boosts.get(memory.kind, 1.0),
    }
    if ctx.project is not None:
        if memory.project is None:
            out["project"] = params.no_project_penalty
        elif memory.project == ctx.project:
            out["project"] = params.same_project_boost
        else:
            out["project"] = params.other_project_penalty
    if ctx.topic is not None and memory.topic is not None and memory.topic != ctx.topic:
        out["topic"] = params.cross_topic_penalty
    if ctx.speakers and memory.kind is MemoryKind.MESSAGE:
        speaker = speaker_of(memory.text)
        if speaker is not None and speaker.casefold() in ctx.speakers:
            out["speaker"] = params.speaker_boost
    if ctx.dates and memory.created_at is not None and any(s.contains(memory.created_at) for s in ctx.dates):
        out["date"] = params.date_boost
    return out
