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
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from memory_retrievers.config import CheckedModel
from memory_retrievers.models import Memory, MemoryKind
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.text.speakers import speaker_of

__all__ = ["DecayKind", "ScoringConfig", "ScoringContext", "decay", "multipliers"]


class DecayKind(str, enum.Enum):
    """How relevance fades with time since a memory was last accessed (or created)."""

    HYPERBOLIC = "hyperbolic"
    """``1 / (1 + days / scale_days)``: gentle, never reaches 0."""
    EXPONENTIAL = "exponential"
    """``0.5 ** (days / half_life_days)``: halves every half-life."""
    NONE = "none"
    """No decay."""


class ScoringConfig(CheckedModel):
    """The constants of :func:`multipliers`: decay, boosts and penalties (``RecallConfig.scoring``).

    A new scoring option is a field here and its use in :func:`multipliers`: one file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decay: DecayKind = DecayKind.HYPERBOLIC
    decay_scale_days: float = Field(default=60.0, gt=0)
    """Hyperbolic decay ``1 / (1 + days_since_access / decay_scale_days)``."""
    half_life_days: float = Field(default=60.0, gt=0)
    decay_weight: float = Field(default=0.2, ge=0, le=1)
    """Strength of the decay: factor ``(1 - w) + w * decay`` (1 = the pure curve). On LoCoMo, whose
    questions reach back months, the pure curve cost 0.165 recall@10; 0.2 costs 0.004 and still
    prefers recent memories among equally relevant ones."""
    pinned_boost: float = Field(default=1.1, gt=0)
    kind_boosts: Mapping[MemoryKind, float] = Field(
        default_factory=lambda: {
            MemoryKind.INSIGHT: 1.5,
            MemoryKind.EVENT: 1.0,
            MemoryKind.FACT: 1.0,
            MemoryKind.PREFERENCE: 1.0,
            MemoryKind.MESSAGE: 1.0,
            MemoryKind.RAW: 0.5,
        }
    )
    speaker_boost: float = Field(default=2.0, gt=0)
    """Multiplier for a chat turn (a ``message`` memory written ``"Name: text"``) whose speaker the
    query names: a question about Melanie is nearly always answered by what Melanie said (96.5 %
    of the evidence on LoCoMo). 1 turns it off. See :mod:`memory_retrievers.text.speakers`."""
    date_boost: float = Field(default=2.0, gt=0)
    """Multiplier for a memory created within a day, month or year the query names (1 turns it
    off). See :mod:`memory_retrievers.text.dates`."""
    same_project_boost: float = Field(default=1.3, gt=0)
    other_project_penalty: float = Field(default=0.8, gt=0)
    no_project_penalty: float = Field(default=0.9, gt=0)
    cross_topic_penalty: float = Field(default=0.4, gt=0)

    @field_validator("kind_boosts", mode="before")
    @classmethod
    def _kind_keys(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            valid = ", ".join(repr(k.value) for k in MemoryKind)
            out: dict[MemoryKind, Any] = {}
            for key, boost in value.items():
                try:
                    out[MemoryKind(key)] = boost
                except ValueError:
                    raise ValueError(f"kind_boosts key {key!r} is not a memory kind; use one of {valid}") from None
            return out
        return value


@dataclass(frozen=True, slots=True)
class ScoringContext:
    """Where and when the recall happens, and what the query names.

    Attributes:
        now: The time of the recall (decay counts from it).
        project: The caller's project, if any.
        topic: The caller's topic, if any.
        speakers: Chat speakers the query names, case-folded (see :mod:`memory_retrievers.text.speakers`).
        dates: Spans of time the query names (see :mod:`memory_retrievers.text.dates`).
    """

    now: datetime
    project: str | None = None
    topic: str | None = None
    speakers: frozenset[str] = frozenset()
    dates: tuple[DateSpan, ...] = ()


def decay(days: float, params: ScoringConfig) -> float:
    """Decay factor in (0, 1] for a memory last touched ``days`` ago (negative days count as 0).

    ``decay_weight`` w blends it with no decay: ``(1 - w) + w * raw`` so w = 1 is the pure curve.
    """
    days = max(0.0, days)
    if params.decay is DecayKind.NONE:
        raw = 1.0
    elif params.decay is DecayKind.EXPONENTIAL:
        raw = math.pow(0.5, days / params.half_life_days)
    else:
        raw = 1.0 / (1.0 + days / params.decay_scale_days)
    return (1.0 - params.decay_weight) + params.decay_weight * raw


def multipliers(memory: Memory, ctx: ScoringContext, params: ScoringConfig) -> dict[str, float]:
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
