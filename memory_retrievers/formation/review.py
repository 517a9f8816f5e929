"""Scheduled passes over stored memories: fuzzy duplicates, reported or folded away.

The write path merges only exact and near-exact duplicates; over months, paraphrased facts pile
up. :func:`review_duplicates` runs :func:`~memory_retrievers.formation.find_fuzzy_duplicates` over a
namespace's knowledge memories (facts, preferences, events, insights; never chat turns) and
returns what it found. With ``apply=True`` it folds each redundant memory into the one that keeps
it: the keeper gains its ``links`` and tags, and the redundant one is archived (out of recall,
still stored, ``metadata.duplicate_of`` naming the keeper), so nothing is deleted by a heuristic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_retrievers.errors import NotFoundError
from memory_retrievers.formation.consolidate import KNOWLEDGE_KINDS
from memory_retrievers.formation.hygiene import find_fuzzy_duplicates
from memory_retrievers.models import Memory
from memory_retrievers.store.paging import aall_memories

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["DuplicateFinding", "review_duplicates"]


@dataclass(frozen=True, slots=True)
class DuplicateFinding:
    """One redundant memory and the one that makes it so.

    Attributes:
        keep: The memory kept (its words contain, or nearly equal, the other's).
        drop: The redundant memory.
        jaccard: Word-set overlap.
        containment: Share of the shorter memory's words in the longer one.
        reason: ``"substring"``, ``"containment"`` or ``"jaccard"``.
        applied: Whether ``drop`` was folded into ``keep`` (``apply=True``).
    """

    keep: Memory
    drop: Memory
    jaccard: float
    containment: float
    reason: str
    applied: bool = False


async def review_duplicates(store: MemoryStore, namespace: str, *, apply: bool = False) -> list[DuplicateFinding]:
    """Find (and with ``apply`` fold away) the fuzzy duplicates among a namespace's knowledge memories."""
    memories = await aall_memories(store, namespace, filter={"kinds": list(KNOWLEDGE_KINDS)}, newest_first=True)
    findings: list[DuplicateFinding] = []
    folded: set[str] = set()
    for pair in find_fuzzy_duplicates([m.text for m in memories]):
        keep, drop = memories[pair.keep], memories[pair.drop]
        if keep.id in folded or drop.id in folded:
            continue  # one memory is folded once per pass; a chain is finished by the next pass
        applied = False
        if apply:
            try:
                await _fold(store, namespace, keep, drop)
            except NotFoundError:  # changed or deleted by someone else meanwhile
                continue
            folded.add(drop.id)
            applied = True
        findings.append(DuplicateFinding(keep, drop, pair.jaccard, pair.containment, pair.reason, applied))
    return findings


async def _fold(store: MemoryStore, namespace: str, keep: Memory, drop: Memory) -> None:
    links = list(dict.fromkeys([*keep.links, *drop.links]))
    tags = list(dict.fromkeys([*keep.tags, *drop.tags]))
    if links != list(keep.links) or tags != list(keep.tags):
        await store.aupdate(keep.id, namespace=namespace, links=links, tags=tags)
    await store.aupdate(
        drop.id, namespace=namespace, lifecycle="archived", metadata={**drop.metadata, "duplicate_of": keep.id}
    )
