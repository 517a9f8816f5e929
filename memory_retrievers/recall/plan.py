"""Routing: which channels and stages one recall runs, and why (reported in ``RecallResult.plan``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..query import QueryFeatures
from ..recall_config import RecallConfig, RoutingMode

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


def route(features: QueryFeatures, cfg: RecallConfig, *, has_llm: bool) -> Plan:
    """Decide the channels and stages for a query.

    ``vector`` mode runs the vector channel alone; ``hybrid`` every enabled channel and stage;
    ``auto`` the core channels, plus entity, recency and session diversity when the query's cues
    call for them, and expansion/HyDE only with an LLM. The ``dated`` channel runs in ``auto`` and
    ``hybrid`` whenever the query names a date.
    """
    plan = Plan(mode=cfg.mode, features=features)
    w = cfg.weights
    if cfg.mode is RoutingMode.VECTOR:
        plan.channels = ["vector"] if w.vector > 0 else []
        return plan
    auto = cfg.mode is RoutingMode.AUTO
    plan.channels = [name for name in ("vector", "bm25", "context") if getattr(w, name) > 0]
    if w.entity > 0 and (features.entities or not auto):
        plan.channels.append("entity")
    if w.recency > 0 and (features.recency or not auto):
        plan.channels.append("recency")
    if w.dated > 0 and features.dates:
        plan.channels.append("dated")
    if w.links > 0 and cfg.channels.link_hops > 0:
        plan.channels.append("links")
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
