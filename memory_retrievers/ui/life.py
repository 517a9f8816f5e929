"""A memory's life, read from a store: its supersession chain, links, provenance, access, expiry and tier."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memory_retrievers.errors import NotFoundError
from memory_retrievers.formation.config import FormationConfig
from memory_retrievers.formation.lifecycle import next_tier
from memory_retrievers.models import Memory
from memory_retrievers.ui.reads import EVERY_ROW, columns, get_many, get_one
from memory_retrievers.ui.scans import Conflict, ReviewScan

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["CHAIN_LIMIT", "MemoryLife", "memory_life"]

#: Steps followed each way along a supersession chain (a chain longer than this is cut, and says so).
CHAIN_LIMIT = 25
#: Memories read that link to this one (formed facts of a chat turn), at most.
LINKED_FROM_LIMIT = 100


@dataclass(frozen=True, slots=True)
class MemoryLife:
    """Everything the memory page shows.

    Attributes:
        memory: The memory.
        older: What it superseded, newest first (``older[0]`` is ``memory.supersedes``).
        newer: What superseded it, oldest first (``newer[0]`` is ``memory.superseded_by``).
        chain_cut: Whether a chain was longer than :data:`CHAIN_LIMIT` (or named a deleted memory).
        links: The memories its ``links`` name (for a formed fact: the chat turns it came from).
        missing_links: Ids in ``links`` that no longer exist.
        linked_from: Memories whose ``links`` name it (for a chat turn: the facts formed from it).
        conflicts: Contradictions it takes part in, from the namespace's last scan.
        scan: That scan (``None``: not scanned).
        next_tier: The lifecycle tier it moves to at the next formation pass, if any.
        expired: Whether ``expires_at`` has passed (hidden from reads, stored until ``admin.expire()``).
        now: The store's clock when read.
    """

    memory: Memory
    older: list[Memory]
    newer: list[Memory]
    chain_cut: bool
    links: list[Memory]
    missing_links: list[str]
    linked_from: list[Memory]
    conflicts: list[Conflict]
    scan: ReviewScan | None
    next_tier: str | None
    expired: bool
    now: datetime


async def _follow(store: MemoryStore, namespace: str, start: str | None, attr: str) -> tuple[list[Memory], bool]:
    """The chain from ``start`` along ``attr`` (``supersedes`` or ``superseded_by``), bounded."""
    out: list[Memory] = []
    seen: set[str] = set()
    current = start
    while current is not None and current not in seen:
        if len(out) >= CHAIN_LIMIT:
            return out, True
        seen.add(current)
        try:
            found = await get_one(store, namespace, current)
        except NotFoundError:
            return out, True
        out.append(found)
        current = getattr(found, attr)
    return out, False


async def _existing(store: MemoryStore, namespace: str, ids: tuple[str, ...]) -> tuple[list[Memory], list[str]]:
    if not ids:
        return [], []
    try:
        return await get_many(store, namespace, list(ids)), []
    except NotFoundError as exc:
        gone = set(exc.missing)
        missing = [i for i in ids if i in gone]
        kept = [i for i in ids if i not in missing]
        return await get_many(store, namespace, kept), missing


async def memory_life(
    store: MemoryStore, namespace: str, memory_id: str, *, scan: ReviewScan | None = None
) -> MemoryLife:
    """Read the life of one memory.

    Raises:
        NotFoundError: No memory with that id in the namespace.
    """
    memory = await get_one(store, namespace, memory_id)
    older, cut_old = await _follow(store, namespace, memory.supersedes, "supersedes")
    newer, cut_new = await _follow(store, namespace, memory.superseded_by, "superseded_by")
    links, missing = await _existing(store, namespace, memory.links)
    linking = {**EVERY_ROW, "links_any": [memory.id]}
    rows = await columns(store, namespace, ["id"], filter=linking, limit=LINKED_FROM_LIMIT)
    back_ids = [i for i in rows.column("id").to_pylist() if i != memory.id]
    linked_from = await get_many(store, namespace, back_ids)
    now = store.clock()
    return MemoryLife(
        memory=memory,
        older=older,
        newer=newer,
        chain_cut=cut_old or cut_new,
        links=links,
        missing_links=missing,
        linked_from=linked_from,
        conflicts=scan.conflicts_of(memory.id) if scan is not None else [],
        scan=scan,
        next_tier=next_tier(memory, now, FormationConfig()),
        expired=memory.expires_at is not None and memory.expires_at <= now,
        now=now,
    )
