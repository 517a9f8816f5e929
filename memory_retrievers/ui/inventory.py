"""What the inspector's pages show, read from a store without the web: namespaces, a namespace, a page of memories.

Every read is bounded: the namespaces page reads the store's statistics (one scan of three small
columns) plus the created/expiry/text columns of the namespaces on the page; a namespace's summary
reads its small columns once and is cached per store version; the memory list is one page of
``store.alist`` (or of BM25 hits). Nothing loads a namespace's memories whole.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import InvalidInputError
from ..filters import MemoryFilter, build_where, sql_in, sql_literal
from ..models import Memory, MemoryKind
from ..storage.stats import StoreStats
from .scans import ReviewScan

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = [
    "PAGE_SIZE",
    "Maintenance",
    "MemoryPage",
    "NamespaceRow",
    "NamespaceSummary",
    "NamespacesPage",
    "memory_page",
    "namespace_summary",
    "namespaces_page",
    "store_version",
]

#: Rows per page on every paged view.
PAGE_SIZE = 50
#: BM25 hits a text filter reads at most (the list pages through them).
MAX_TEXT_HITS = 1000


@dataclass(frozen=True, slots=True)
class Maintenance:
    """Store-wide work pending, from ``store.admin.stats()``.

    Attributes:
        rows: Every row of the table (all namespaces, superseded and deleted-not-purged aside).
        unindexed_rows: The most rows any index has not folded in yet (``optimize`` folds them).
        fragments: Data fragments (``optimize`` compacts them).
        small_fragments: Fragments small enough to compact.
        versions: Table versions kept on disk (``optimize`` prunes old ones; ``purge`` all).
        version: The current table version.
        data_bytes: Size of the current version's files.
    """

    rows: int
    unindexed_rows: int
    fragments: int
    small_fragments: int
    versions: int
    version: int
    data_bytes: int

    @classmethod
    def of(cls, stats: StoreStats) -> Maintenance:
        """The maintenance figures of a statistics read."""
        unindexed = max((i.unindexed_rows for i in stats.indexes), default=0)
        return cls(
            stats.rows,
            unindexed,
            stats.fragments,
            stats.small_fragments,
            stats.versions,
            stats.version,
            stats.data_bytes,
        )


@dataclass(frozen=True, slots=True)
class NamespaceRow:
    """One namespace on the namespaces page.

    Attributes:
        namespace: Its name.
        live: Memories not superseded (expired ones not yet removed included).
        superseded: Memories replaced by newer ones.
        kinds: Live memories per kind.
        text_bytes: UTF-8 bytes of the live memories' text.
        oldest: Creation time of the oldest live memory.
        newest: Creation time of the newest live memory.
        expired: Live memories past ``expires_at``, hidden from reads, still stored until ``admin.expire()``.
        scan: The last duplicate/contradiction scan of the namespace, if one was run.
        scan_current: Whether that scan saw the store's current version.
    """

    namespace: str
    live: int
    superseded: int
    kinds: dict[str, int]
    text_bytes: int
    oldest: datetime | None
    newest: datetime | None
    expired: int
    scan: ReviewScan | None = None
    scan_current: bool = False


@dataclass(frozen=True, slots=True)
class NamespacesPage:
    """One page of the namespaces table.

    Attributes:
        rows: The namespaces of this page, sorted by name.
        page: This page's number (1-based).
        pages: How many pages there are (at least 1).
        total: Namespaces matching the prefix.
        prefix: The name prefix the table is filtered by (``""``: none).
        maintenance: Store-wide pending maintenance.
    """

    rows: list[NamespaceRow]
    page: int
    pages: int
    total: int
    prefix: str
    maintenance: Maintenance


@dataclass(frozen=True, slots=True)
class NamespaceSummary:
    """One namespace at a glance (its small columns, read once per store version).

    Attributes:
        namespace: Its name.
        live: Memories not superseded.
        superseded: Memories replaced by newer ones.
        kinds: Live memories per kind.
        text_bytes: UTF-8 bytes of the live memories' text.
        oldest: Creation time of the oldest live memory.
        newest: Creation time of the newest live memory.
        expired: Live memories past ``expires_at`` (hidden, still stored until ``admin.expire()``).
        archived: Live memories with lifecycle ``archived`` (hidden from recall, kept).
        pinned: Live pinned memories.
        created: ``(created_at, kind)`` of every live memory, for the timeline.
        version: The store version this summary read.
    """

    namespace: str
    live: int
    superseded: int
    kinds: dict[str, int]
    text_bytes: int
    oldest: datetime | None
    newest: datetime | None
    expired: int
    archived: int
    pinned: int
    created: list[tuple[datetime, str]] = field(repr=False)
    version: int = 0


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of a namespace's memory list.

    Attributes:
        memories: The memories of this page (newest first, or best BM25 match first with ``q``).
        page: This page's number (1-based).
        pages: How many pages there are (at least 1).
        total: Memories matching the filters (BM25 matches are capped at ``MAX_TEXT_HITS``).
        kind: The kind filter, if any.
        q: The text filter, if any.
    """

    memories: list[Memory]
    page: int
    pages: int
    total: int
    kind: str | None
    q: str | None


def _pages(total: int) -> int:
    return max(1, -(-total // PAGE_SIZE))


def check_page(page: int, pages: int) -> None:
    """Refuse a page past the last one.

    Raises:
        InvalidInputError: ``page`` is beyond ``pages`` (names the parameter and the range).
    """
    if page > pages:
        raise InvalidInputError(f"page must be between 1 and {pages}, got {page}")


async def store_version(store: MemoryStore) -> int:
    """The table version the store sees now (every commit makes a new one; caches key on it)."""
    return await store._table.version()


async def _columns(store: MemoryStore, where: str, columns: list[str], action: str) -> pa.Table:
    # The public API reads whole memories; a summary needs a few columns of many rows.
    return await store._table.rows(where, columns, action=action)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


async def namespaces_page(
    store: MemoryStore, *, page: int = 1, prefix: str = "", scans: dict[str, ReviewScan] | None = None
) -> NamespacesPage:
    """One page of namespaces (:data:`PAGE_SIZE`) whose name starts with ``prefix``, with their figures.

    Raises:
        InvalidInputError: ``page`` is below 1 or past the last page.
    """
    if page < 1:
        raise InvalidInputError(f"page must be 1 or more, got {page}")
    stats = await store.admin.astats()
    matching = [c for c in stats.namespaces if c.namespace.startswith(prefix)]
    pages = _pages(len(matching))
    check_page(page, pages)
    shown = matching[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    figures = await _page_figures(store, [c.namespace for c in shown])
    rows = []
    for counts in shown:
        text_bytes, oldest, newest, expired = figures.get(counts.namespace, (0, None, None, 0))
        scan = (scans or {}).get(counts.namespace)
        current = scan is not None and scan.version == stats.version
        rows.append(
            NamespaceRow(
                counts.namespace, counts.live, counts.superseded, counts.kinds, text_bytes, oldest, newest, expired,
                scan, current,
            )
        )  # fmt: skip
    return NamespacesPage(rows, page, pages, len(matching), prefix, Maintenance.of(stats))


async def _page_figures(
    store: MemoryStore, namespaces: list[str]
) -> dict[str, tuple[int, datetime | None, datetime | None, int]]:
    """Text bytes, oldest, newest and expired count of the live memories of ``namespaces``, in one read."""
    if not namespaces:
        return {}
    where = f"{sql_in('namespace', namespaces)} AND superseded_by IS NULL"
    table = await _columns(store, where, ["namespace", "created_at", "expires_at", "text"], "read namespace figures")
    now = store.clock()
    out: dict[str, tuple[int, datetime | None, datetime | None, int]] = {}
    for ns, created, expires, text in zip(
        *(table.column(c).to_pylist() for c in ("namespace", "created_at", "expires_at", "text")), strict=True
    ):
        size, oldest, newest, expired = out.get(ns, (0, None, None, 0))
        created = _utc(created)
        oldest = created if oldest is None or (created is not None and created < oldest) else oldest
        newest = created if newest is None or (created is not None and created > newest) else newest
        gone = expires is not None and _utc(expires) <= now  # type: ignore[operator]
        out[ns] = (size + len(text.encode("utf-8")), oldest, newest, expired + int(gone))
    return out


async def namespace_summary(store: MemoryStore, namespace: str) -> NamespaceSummary:
    """The figures and timeline data of one namespace (its small columns, in one read).

    Raises:
        NotFoundError: The namespace holds no memory.
    """
    from ..errors import NotFoundError

    where = build_where(namespace, MemoryFilter(include_superseded=True))
    cols = ["kind", "created_at", "superseded_by", "expires_at", "lifecycle", "pinned", "text"]
    version = await store_version(store)
    table = await _columns(store, where, cols, "read the namespace's summary")
    if table.num_rows == 0:
        raise NotFoundError(f"namespace {namespace!r} holds no memory", [namespace])
    return _summarize(namespace, table.to_pydict(), store.clock(), version)


def _summarize(namespace: str, data: dict[str, list[Any]], now: datetime, version: int) -> NamespaceSummary:
    kinds: Counter[str] = Counter()
    created: list[tuple[datetime, str]] = []
    superseded = size = expired = archived = pinned = 0
    for kind, at, succ, expires, tier, pin, text in zip(
        *(data[c] for c in ("kind", "created_at", "superseded_by", "expires_at", "lifecycle", "pinned", "text")),
        strict=True,
    ):
        if succ is not None:
            superseded += 1
            continue
        kinds[kind] += 1
        size += len(text.encode("utf-8"))
        when = _utc(at)
        if when is not None:
            created.append((when, kind))
        expired += int(expires is not None and _utc(expires) <= now)  # type: ignore[operator]
        archived += int(tier == "archived")
        pinned += int(bool(pin))
    times = [t for t, _ in created]
    return NamespaceSummary(
        namespace, sum(kinds.values()), superseded, dict(sorted(kinds.items())), size,
        min(times, default=None), max(times, default=None), expired, archived, pinned, created, version,
    )  # fmt: skip


def parse_kind(value: str | None) -> str | None:
    """The kind filter of a request, checked.

    Raises:
        InvalidInputError: ``value`` is not a kind (the message lists every kind).
    """
    if value is None or value == "":
        return None
    try:
        return MemoryKind(value).value
    except ValueError:
        valid = ", ".join(k.value for k in MemoryKind)
        raise InvalidInputError(f"kind must be one of {valid}, got {value!r}") from None


async def memory_page(
    store: MemoryStore, namespace: str, *, page: int = 1, kind: str | None = None, q: str | None = None
) -> MemoryPage:
    """One page (:data:`PAGE_SIZE`) of a namespace's live memories, newest first or by BM25 match of ``q``.

    Raises:
        InvalidInputError: ``page`` is below 1 or past the last page, or ``kind`` is not a kind.
    """
    if page < 1:
        raise InvalidInputError(f"page must be 1 or more, got {page}")
    kind = parse_kind(kind)
    flt: dict[str, Any] = {"kinds": [kind]} if kind else {}
    if q:
        hits = await store.afts_search(q, namespace=namespace, k=MAX_TEXT_HITS, filter=flt or None)
        pages = _pages(len(hits))
        check_page(page, pages)
        ids = [h.id for h in hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]]
        found = await store.aget(ids, namespace=namespace) if ids else []
        return MemoryPage(list(found), page, pages, len(hits), kind, q)
    total = await store.acount(namespace, filter=flt or None)
    pages = _pages(total)
    check_page(page, pages)
    memories = await store.alist(namespace, filter=flt or None, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    return MemoryPage(memories, page, pages, total, kind, q)


def linking_where(namespace: str, memory_id: str) -> str:
    """The predicate of the memories of ``namespace`` whose ``links`` name ``memory_id``."""
    where = build_where(namespace, MemoryFilter(include_superseded=True))
    return f"{where} AND array_has(links, {sql_literal(memory_id)})"
