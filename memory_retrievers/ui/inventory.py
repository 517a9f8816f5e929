"""What the inspector's pages show, read from a store without the web: namespaces, a namespace, a page of memories.

Every read is bounded: the namespaces page reads the store's statistics (one scan of three small
columns) plus the created/expiry/text columns of the namespaces on the page; a namespace's summary
reads its small columns once and is cached per store version; the memory list is one page of
``store.alist`` (or of BM25 hits). Nothing loads a namespace's memories whole.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.models import Memory, MemoryKind
from memory_retrievers.storage.stats import StoreStats
from memory_retrievers.ui.reads import columns as read_columns
from memory_retrievers.ui.reads import get_many, namespace_version
from memory_retrievers.ui.scans import ReviewScan

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

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
        daily: ``(UTC day, kind, count)`` of the live memories, for the timeline.
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
    daily: list[tuple[date, str, int]] = field(repr=False)
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
        hidden: Whether superseded, archived and expired memories are listed too.
    """

    memories: list[Memory]
    page: int
    pages: int
    total: int
    kind: str | None
    q: str | None
    hidden: bool = False


def _pages(total: int) -> int:
    return max(1, -(-total // PAGE_SIZE))


def check_page(page: int, pages: int) -> None:
    """Refuse a page past the last one.

    Raises:
        InvalidInputError: ``page`` is beyond ``pages`` (names the parameter and the range).
    """
    if page > pages:
        raise InvalidInputError(f"page must be between 1 and {pages}, got {page}")


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
        # A scan is current while the namespace's own table is unchanged (a shard's, on a sharded store).
        current = scan is not None and scan.version == await namespace_version(store, counts.namespace)
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
    wanted = ["namespace", "created_at", "expires_at", "text"]
    # Live memories, expired and archived ones included (the page counts the expired ones).
    live = {"include_expired": True, "include_archived": True}
    table = await read_columns(store, namespaces, wanted, filter=live)
    now = store.clock()
    # Aggregated in Arrow: converting 100k rows to Python objects costs ten times the read.
    figures = pa.table(
        {
            "namespace": table.column("namespace"),
            "size": pc.binary_length(table.column("text")),
            "created": table.column("created_at"),
            "expired": _expired(table.column("expires_at"), now),
        }
    )
    agg = figures.group_by("namespace").aggregate(
        [("size", "sum"), ("created", "min"), ("created", "max"), ("expired", "sum")]
    )
    columns = ("namespace", "size_sum", "created_min", "created_max", "expired_sum")
    return {
        ns: (int(size or 0), _utc(oldest), _utc(newest), int(expired or 0))
        for ns, size, oldest, newest, expired in zip(*(agg.column(c).to_pylist() for c in columns), strict=True)
    }


def _expired(expires_at: pa.ChunkedArray, now: datetime) -> pa.ChunkedArray:
    """1 where ``expires_at`` is at or before ``now``, else 0 (never-expiring rows included)."""
    past = pc.less_equal(expires_at, pa.scalar(now, type=expires_at.type))
    return pc.cast(pc.fill_null(past, False), pa.int64())


async def namespace_summary(store: MemoryStore, namespace: str) -> NamespaceSummary:
    """The figures and timeline data of one namespace (its small columns, in one read).

    Raises:
        NotFoundError: The namespace holds no memory.
    """
    from memory_retrievers.errors import NotFoundError

    cols = ["kind", "created_at", "superseded_by", "expires_at", "lifecycle", "pinned", "text"]
    version = await namespace_version(store, namespace)
    table = await read_columns(store, namespace, cols)
    if table.num_rows == 0:
        raise NotFoundError(f"namespace {namespace!r} holds no memory", [namespace])
    # Off the event loop: a 100k-memory namespace is a few hundred ms of Python.
    return await asyncio.to_thread(_summarize, namespace, table, store.clock(), version)


def _summarize(namespace: str, table: pa.Table, now: datetime, version: int) -> NamespaceSummary:
    """The summary's figures, aggregated in Arrow (a 100k-memory namespace stays well under a second)."""
    superseded = pc.sum(pc.is_valid(table.column("superseded_by"))).as_py() or 0
    live = table.filter(pc.is_null(table.column("superseded_by")))
    kinds = {k: int(n) for k, n in zip(*_counts(live, ["kind"]), strict=True)}
    created = live.column("created_at")
    days = pc.cast(created, pa.date32())  # the UTC day (timestamps are stored in UTC)
    per_day = pa.table({"day": days, "kind": live.column("kind")}).group_by(["day", "kind"])
    counted = per_day.aggregate([([], "count_all")])
    daily = list(zip(*(counted.column(c).to_pylist() for c in ("day", "kind", "count_all")), strict=True))
    archived = pc.sum(pc.fill_null(pc.equal(live.column("lifecycle"), "archived"), False)).as_py() or 0
    return NamespaceSummary(
        namespace, live.num_rows, int(superseded), dict(sorted(kinds.items())),
        int(pc.sum(pc.binary_length(live.column("text"))).as_py() or 0),
        _utc(pc.min(created).as_py()), _utc(pc.max(created).as_py()),
        int(pc.sum(_expired(live.column("expires_at"), now)).as_py() or 0), int(archived),
        int(pc.sum(pc.fill_null(live.column("pinned"), False)).as_py() or 0), daily, version,
    )  # fmt: skip


def _counts(table: pa.Table, keys: list[str]) -> tuple[list[Any], list[int]]:
    agg = table.group_by(keys).aggregate([([], "count_all")])
    return agg.column(keys[0]).to_pylist(), agg.column("count_all").to_pylist()


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
    store: MemoryStore,
    namespace: str,
    *,
    page: int = 1,
    kind: str | None = None,
    q: str | None = None,
    hidden: bool = False,
) -> MemoryPage:
    """One page (:data:`PAGE_SIZE`) of a namespace's memories, newest first or by BM25 match of ``q``.

    Live memories only, unless ``hidden``: then superseded, archived and expired ones too.

    Raises:
        InvalidInputError: ``page`` is below 1 or past the last page, or ``kind`` is not a kind.
    """
    if page < 1:
        raise InvalidInputError(f"page must be 1 or more, got {page}")
    kind = parse_kind(kind)
    flt: dict[str, Any] = {"kinds": [kind]} if kind else {}
    if hidden:
        flt |= {"include_superseded": True, "include_archived": True, "include_expired": True}
    if q:
        hits = await store.afts_search(q, namespace=namespace, k=MAX_TEXT_HITS, filter=flt or None)
        pages = _pages(len(hits))
        check_page(page, pages)
        ids = [h.id for h in hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]]
        return MemoryPage(await get_many(store, namespace, ids), page, pages, len(hits), kind, q, hidden)
    total = await store.acount(namespace, filter=flt or None)
    pages = _pages(total)
    check_page(page, pages)
    memories = await store.alist(namespace, filter=flt or None, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    return MemoryPage(memories, page, pages, total, kind, q, hidden)
