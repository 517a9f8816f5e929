"""The review queues: duplicate groups and contradictions of a namespace, scanned on demand and kept.

Nothing new is scanned here: duplicate groups are those of ``memory-retrievers dedup`` (exact or
near duplicates by the write path's own rules, on the stored vectors), paraphrases are those of
:func:`~memory_retrievers.formation.review_duplicates`, contradictions those of the LLM-free
negation-aware :func:`~memory_retrievers.formation.contradictions.find_contradictions`. A scan is
O(n²) in the worst case, so the inspector runs one only when asked and keeps its result per
namespace with the store version it saw (:class:`ScanCache`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_retrievers.errors import NotFoundError
from memory_retrievers.formation.consolidate import KNOWLEDGE_KINDS
from memory_retrievers.formation.contradictions import find_contradictions
from memory_retrievers.formation.review import DuplicateFinding, review_duplicates
from memory_retrievers.models import Memory, MemoryKind
from memory_retrievers.store.paging import aall_memories
from memory_retrievers.ui.reads import get_many

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["Conflict", "DuplicateGroup", "ReviewScan", "ScanCache", "run_scan"]

#: Records ``admin.export`` returns per call while a scan reads a namespace.
_EXPORT_PAGE = 1000


@dataclass(frozen=True, slots=True)
class DuplicateGroup:
    """Exact or near duplicates (``memory-retrievers dedup``): the one to keep first, then the others.

    Attributes:
        keep_id: The memory kept (most accessed, then oldest, then smallest id).
        keep_text: Its text.
        others: ``(id, text, cosine similarity to the kept one)`` of each duplicate.
    """

    keep_id: str
    keep_text: str
    others: tuple[tuple[str, str, float], ...]

    @property
    def ids(self) -> tuple[str, ...]:
        """Every memory of the group, the kept one first."""
        return (self.keep_id, *(i for i, _, _ in self.others))


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two live memories that say the same thing with opposite polarity.

    Attributes:
        first: One memory.
        second: The other.
        overlap: Jaccard overlap of their core words.
        shared: The core words they share.
    """

    first: Memory
    second: Memory
    overlap: float
    shared: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReviewScan:
    """One scan of a namespace.

    Attributes:
        namespace: The namespace scanned.
        version: The store version it read.
        scanned_at: When (seconds since the epoch).
        seconds: How long it took.
        memories: Live memories of knowledge kinds read by the paraphrase and contradiction scans.
        groups: Exact/near duplicate groups.
        paraphrases: Fuzzy duplicates (one redundant memory and its keeper each).
        conflicts: Contradictions.
    """

    namespace: str
    version: int
    scanned_at: float
    seconds: float
    memories: int
    groups: tuple[DuplicateGroup, ...]
    paraphrases: tuple[DuplicateFinding, ...]
    conflicts: tuple[Conflict, ...]

    def conflicts_of(self, memory_id: str) -> list[Conflict]:
        """The contradictions a memory takes part in."""
        return [c for c in self.conflicts if memory_id in (c.first.id, c.second.id)]


class ScanCache:
    """The last scan of each namespace (an app keeps one; a scan is replaced by the next one)."""

    def __init__(self) -> None:
        self._scans: dict[str, ReviewScan] = {}

    def get(self, namespace: str) -> ReviewScan | None:
        """The last scan of ``namespace``, or ``None``."""
        return self._scans.get(namespace)

    def put(self, scan: ReviewScan) -> None:
        """Keep ``scan`` as its namespace's last."""
        self._scans[scan.namespace] = scan

    def drop(self, namespace: str) -> None:
        """Forget the scan of a namespace (e.g. once the namespace is forgotten)."""
        self._scans.pop(namespace, None)

    def all(self) -> dict[str, ReviewScan]:
        """Every namespace's last scan."""
        return dict(self._scans)


async def run_scan(store: MemoryStore, namespace: str, version: int) -> ReviewScan:
    """Scan ``namespace`` for duplicates, paraphrases and contradictions (reads it whole, on request)."""
    started = time.monotonic()
    groups = await _duplicate_groups(store, namespace)
    paraphrases = await review_duplicates(store, namespace)
    knowledge = await aall_memories(store, namespace, filter={"kinds": list(KNOWLEDGE_KINDS)}, newest_first=True)
    # The pure scans run on a thread: the server's event loop keeps answering other pages meanwhile.
    found = await asyncio.to_thread(find_contradictions, [m.text for m in knowledge])
    conflicts = tuple(Conflict(knowledge[c.first], knowledge[c.second], c.overlap, c.shared) for c in found)
    return ReviewScan(
        namespace, version, time.time(), time.monotonic() - started, len(knowledge), groups, tuple(paraphrases),
        conflicts,
    )  # fmt: skip


async def _still_there(store: MemoryStore, namespace: str, memory_id: str) -> list[Memory]:
    try:
        return await get_many(store, namespace, [memory_id], include_vector=True)
    except NotFoundError:
        return []


async def _duplicate_groups(store: MemoryStore, namespace: str) -> tuple[DuplicateGroup, ...]:
    """The groups ``memory-retrievers dedup`` reports, at the store's own near-duplicate threshold."""
    from memory_retrievers.cli.cmd_health import duplicate_groups

    # Only the live memories of kinds a write dedups are read, and only they with vectors: a chat
    # namespace of 100k messages (an exempt kind) exported whole took 76 s to keep none of it.
    kinds = [k.value for k in MemoryKind if k not in store.config.dedup_exempt_kinds]
    live = await aall_memories(store, namespace, filter={"kinds": kinds}) if kinds else []
    records: list[dict[str, Any]] = []
    for start in range(0, len(live), _EXPORT_PAGE):
        ids = [m.id for m in live[start : start + _EXPORT_PAGE]]
        try:
            page = await get_many(store, namespace, ids, include_vector=True)
        except NotFoundError:  # forgotten since the listing: scan what is still there
            page = [m for i in ids for m in await _still_there(store, namespace, i)]
        records += [m.to_dict() for m in page]
    threshold = store.config.near_duplicate_threshold or 0.95
    groups = await asyncio.to_thread(duplicate_groups, records, threshold)
    return tuple(
        DuplicateGroup(g[0][0]["id"], g[0][0]["text"], tuple((m["id"], m["text"], round(s, 4)) for m, s in g[1:]))
        for g in groups
    )
