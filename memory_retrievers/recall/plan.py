"""Routing: which channels and stages one recall runs, and why (reported in ``RecallResult.plan``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_retrievers.recall.builtin import default_registry
from memory_retrievers.recall.config import RecallConfig, RoutingMode
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.text.query import QueryFeatures

__all__ = ["Plan", "route"]


@dataclass
class Plan:
    """What this recall runs, and why."""

    mode: RoutingMode
    features: QueryFeatures
    channels: list[str] = field(default_factory=list)
    expansion: str = "off"
    hyde: str = "off"
    session_diverse: bool = False
    speakers: list[str] = field(default_factory=list)
    """Chat speakers the query names (known once the namespace's speakers are read)."""
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The plan as reported in ``RecallResult.plan``."""
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
            "speakers": list(self.speakers),
            "dates": [[s.start.isoformat(), s.end.isoformat()] for s in f.dates],
            "notes": list(self.notes),
        }


def route(
    features: QueryFeatures, cfg: RecallConfig, *, has_llm: bool, registry: ChannelRegistry | None = None
) -> Plan:
    """Decide the channels and stages for a query.

    Each registered channel with a weight above 0 says whether it runs
    (:meth:`~memory_retrievers.recall.channel.Channel.runs`). The built-ins: ``vector`` mode runs
    the vector channel alone; ``hybrid`` every enabled channel; ``auto`` the core channels (vector,
    BM25, context, links), plus entity and recency when the query's cues call for them; ``dated``
    whenever the query names a date. Stages: ``hybrid`` runs every enabled one, ``auto`` session
    diversity when the query's cues call for it and expansion/HyDE only with an LLM.
    """
    plan = Plan(mode=cfg.mode, features=features)
    w = cfg.weights
    plan.channels = (registry or default_registry()).routed(features, cfg, cfg.mode)
    if cfg.mode is RoutingMode.VECTOR:
        return plan
    auto = cfg.mode is RoutingMode.AUTO
    if cfg.query_expansion.expansion:
        if has_llm:
            plan.expansion = "llm"
        elif not auto:
            plan.expansion = "feedback"
    if cfg.query_expansion.hyde and w.hyde > 0:
        if has_llm:
            plan.hyde = "llm"
        elif not auto:
            plan.hyde = "rocchio"
    plan.session_diverse = cfg.selection.session_diverse and (features.aggregation or not auto)
    if auto:
        plan.notes.append(
            f"intent={features.intent}; entities={'yes' if features.entities else 'no'}; "
            f"recency cue={'yes' if features.recency else 'no'}; "
            f"aggregation cue={'yes' if features.aggregation else 'no'}"
        )
    return plan
