"""Lifecycle tiers of formed memories: candidate -> validated by use -> archived when unused.

A fact formed from a conversation starts as a ``candidate``. It becomes ``validated`` once it has
been used (recalled or otherwise accessed) ``validate_after_uses`` times, or when a later
conversation confirms it (consolidation's SKIP or MERGE onto it). A candidate or validated memory
not used for ``archive_after_days`` (counted from its last access, else its creation) is
``archived``: it leaves recall and every read unless a filter sets ``include_archived``, and it is
kept, so ``store.update(id, lifecycle="validated")`` brings it back. Memories without a tier
(everything not formed by :class:`~memory_retrievers.formation.MemoryFormer`) are never touched.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memory_retrievers.formation.config import FormationConfig
from memory_retrievers.models import Memory

__all__ = ["next_tier"]


def next_tier(memory: Memory, now: datetime, cfg: FormationConfig) -> str | None:
    """The tier ``memory`` should move to at ``now``, or ``None`` when it stays where it is."""
    tier = memory.lifecycle
    if tier not in ("candidate", "validated"):
        return None
    last_used = memory.last_accessed_at or memory.created_at
    if (
        cfg.archive_after_days is not None
        and last_used is not None
        and now - last_used >= timedelta(days=cfg.archive_after_days)
    ):
        return "archived"
    if tier == "candidate" and memory.access_count >= cfg.validate_after_uses:
        return "validated"
    return None
