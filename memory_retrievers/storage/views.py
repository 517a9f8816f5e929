"""In-memory views of namespaces, for recall.

A recall touches a few dozen memories but pays several milliseconds of LanceDB overhead per query;
loading a namespace's rows and vectors once costs about one query (4 ms for 600 memories) and makes
the vector, entity, recency and link channels numpy/dict work. BM25 still runs in LanceDB.

The :class:`ViewCache` subscribes to the table's commits. A view stays valid while every table
version after it was written by this store; anything else (another process's commit seen through
``read_consistency_interval``, compaction, index builds) makes it stale. This store's own writes to
the namespace are patched in: an append as written (its rows are stored as given), anything else
by re-reading just the rows it touched (by id, so a conditional rewrite that did not land is read
as it stands), instead of the whole namespace, which on object storage is about one request per
memory of the namespace.

A stale view is brought up to date the same way when it can be: every write bumps a row's
``revision`` or ``updated_at`` and every read records its access in ``access_count``, so reading
those few columns of the namespace tells which rows another writer added, changed or deleted, and
only those rows are re-read whole (compaction and index builds change none: nothing is re-read).
When more than half of the namespace changed, a full reload is cheaper and is done instead.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.filters import MemoryFilter, build_where
from memory_retrievers.storage.bounded import bounded_put
from memory_retrievers.storage.table import CommitEvent, MemoryTable
from memory_retrievers.storage.view import SIGNATURE, VIEW_COLUMNS, NamespaceView

__all__ = ["NamespaceView", "ViewCache"]

_EPOCH_BUCKETS = 4096
# A namespace found over the view limit is not counted again for this long (counting 100,000
# rows costs 2 ms of each recall); one that shrank below it gets its view that much later.
_OUTGROWN_RECHECK_S = 30.0
_OUTGROWN_HELD = 1024


class ViewCache:
    """Views of the namespaces recall reads, kept valid across this store's own commits.

    Memory is bounded whatever the number of namespaces: views hold at most ``total_rows`` rows
    (least recently used dropped first), and the write counters that detect a write racing a load
    live in a fixed number of buckets (two namespaces sharing one only cost a view not kept once).

    Args:
        table: The table layer (this subscribes to its commits).
        max_rows: Namespaces larger than this get no view (0 disables views).
        total_rows: Rows held over all views (default four times ``max_rows``; at least ``max_rows``).
        on_outgrown: Called with a namespace found larger than ``max_rows`` (it is read from LanceDB).
    """

    def __init__(
        self,
        table: MemoryTable,
        max_rows: int,
        total_rows: int | None = None,
        on_outgrown: Callable[[str], None] | None = None,
    ) -> None:
        self._table = table
        self._on_outgrown = on_outgrown
        self._max_rows = max_rows
        self._total_rows = max(max_rows, total_rows if total_rows is not None else 4 * max_rows)
        self._views: dict[str, NamespaceView] = {}  # least recently used first
        # The table versions this store wrote, and write counters that tell a view built during a
        # write to its namespace to go away (bucketed by namespace hash: bounded memory).
        self._own_versions: set[int] = set()
        self._epochs = [0] * _EPOCH_BUCKETS
        # Ids this store's commits touched since a view was last patched, per namespace (re-read),
        # and changes whose commit says exactly what is stored now (appends, rewrites that all
        # landed, deletes), applied in order without a read.
        self._touched: dict[str, set[str]] = {}
        self._known: dict[str, list[tuple[set[str], pa.Table | None]]] = {}
        # How stale views were brought up to date: whole reloads vs signature checks (for tests
        # and benchmarks; a reload is about one request per memory on object storage).
        self.reloads = 0
        self.refreshes = 0
        # Namespaces found over max_rows -> monotonic time they were counted (bounded, oldest out).
        self._outgrown: dict[str, float] = {}
        # Namespace -> the result of a get() under way (see current()).
        self._getting: dict[str, asyncio.Future[NamespaceView | None]] = {}
        table.subscribe(self._on_commit)

    def cached(self, namespace: str) -> NamespaceView | None:
        """The view held for ``namespace``, without checking or loading anything."""
        return self._views.get(namespace)

    @property
    def own_versions(self) -> frozenset[int]:
        """Table versions remembered as this store's own (bounded: see :meth:`_on_commit`)."""
        return frozenset(self._own_versions)

    def _on_commit(self, event: CommitEvent) -> None:
        """Note the ids the commit touched; move views up to the version the commit made.

        Views move up when every version since theirs is one of ours, so the set of versions to
        remember stays small. Forgetting a version can only make a view rebuild, never keep a
        stale one. A view whose namespace the commit touched is patched on its next read; one the
        commit may have changed in ways its ids do not say (a failed commit, ``forget``) is dropped.
        """
        touched = _touched_ids(event)
        for ns in event.namespaces:
            self._epochs[_bucket(ns)] += 1
            ids = touched.get(ns)
            if event.version is None or ids is None:
                self._views.pop(ns, None)
                self._forget_pending(ns)
            elif ns in self._views:
                known = _known_change(event, ns, ids)
                if known is not None and ns not in self._touched:
                    self._known.setdefault(ns, []).append(known)
                else:  # anything else, or after it, is re-read: the stored rows decide
                    pending = self._touched.setdefault(ns, set())
                    pending.update(ids)
                    pending.update(i for change, _ in self._known.pop(ns, ()) for i in change)
        if event.version is None:
            return
        version = event.version
        self._own_versions.add(version)
        for view in self._views.values():
            if view.stale:
                continue
            if all(v in self._own_versions for v in range(view.version + 1, version + 1)):
                view.version = version
            else:  # something else changed the table in between: checked on the next read
                view.stale = True
        oldest = min((v.version for v in self._views.values() if not v.stale), default=version)
        self._own_versions = {v for v in self._own_versions if v > oldest}

    async def get(self, namespace: str) -> NamespaceView | None:
        """The namespace's view, loaded when missing or stale; ``None`` when disabled or too large."""
        if self._max_rows == 0:
            return None
        done: asyncio.Future[NamespaceView | None] = asyncio.get_running_loop().create_future()
        self._getting[namespace] = done
        view: NamespaceView | None = None
        try:
            view = await self._get(namespace)
        finally:
            done.set_result(view)  # a failed or cancelled get gives None: the caller asks the table
            if self._getting.get(namespace) is done:
                del self._getting[namespace]
        return view

    async def current(self, namespace: str) -> NamespaceView | None:
        """A view to answer a cue (who speaks) from, without loading one; ``None``: ask the table.

        A recall starts getting its namespace's view and reads the speakers while that runs: this
        waits for that get (so a cold namespace is read once, not once for the view and once for
        the speakers), or brings a held view up to date (this store's own writes patched in), and
        leaves a namespace with no view to the table.
        """
        if self._max_rows == 0:
            return None
        await asyncio.sleep(0)  # a get started just before this call (the recall's source) registers
        pending = self._getting.get(namespace)
        if pending is not None and pending.get_loop() is asyncio.get_running_loop():
            return await asyncio.shield(pending)
        if namespace in self._views:
            return await self.get(namespace)
        return None

    async def _get(self, namespace: str) -> NamespaceView | None:
        counted = self._outgrown.get(namespace)
        if counted is not None and time.monotonic() - counted < _OUTGROWN_RECHECK_S:
            return None
        current = await self._table.version()
        view = self._views.pop(namespace, None)
        if view is not None:
            self._views[namespace] = view  # most recently used last
        if (
            view is not None
            and not view.stale
            and all(v in self._own_versions for v in range(view.version + 1, current + 1))
        ):
            return await self._brought_up(view, current)
        if view is not None:
            # Stale: another writer, a compaction or an index build moved the table since.
            refreshed, fresh_view = await self._refreshed(view, current)
            if refreshed:
                return fresh_view
            self._views.pop(namespace, None)
        return await self._load(namespace, current)

    async def _brought_up(self, view: NamespaceView, current: int) -> NamespaceView | None:
        """A view valid but for this store's own commits: those patched in (``None``: now too large)."""
        touched = self._touched.pop(view.namespace, None)
        known = self._known.pop(view.namespace, ())
        patched: NamespaceView | None = view
        if touched:
            # Ids touched by a commit that lands during this read are noted again, and re-read next time.
            patched = await self._patch(view, touched, current)
        elif known:
            for change, rows in _combined(known):
                view = view.patched(change, rows, current)
            patched = self._keep(view)
        if patched is not None:
            patched.version = current
        return patched

    async def _refreshed(self, view: NamespaceView, current: int) -> tuple[bool, NamespaceView | None]:
        """A stale view brought up to date by re-reading only the rows that changed, when few did.

        Returns ``(False, None)`` when a full reload is cheaper (more than half changed, or too large).
        """
        namespace = view.namespace
        epoch = self._epochs[_bucket(namespace)]
        self._forget_pending(namespace)
        everything = build_where(namespace, MemoryFilter(include_superseded=True))
        signature = await self._table.rows(everything, list(SIGNATURE), action="check a namespace view")
        changed = view.changed_since(signature)
        if len(changed) > signature.num_rows // 2 or signature.num_rows > self._max_rows:
            return False, None
        self.refreshes += 1
        fresh_view = await self._patch(view, changed, current) if changed else view
        if fresh_view is not None:
            fresh_view.version = current
            fresh_view.stale = False
            if self._epochs[_bucket(namespace)] != epoch:  # a write of ours raced the read
                self._views.pop(namespace, None)
        return True, fresh_view

    async def _load(self, namespace: str, current: int) -> NamespaceView | None:
        """The namespace read whole into a new view (held unless a write of ours raced the read)."""
        self._forget_pending(namespace)
        epoch = self._epochs[_bucket(namespace)]
        everything = build_where(namespace, MemoryFilter(include_superseded=True))
        # A namespace not known to be large is read at once, at most one row past the limit: no
        # count first (one LanceDB query less on every tenant's first recall). One found too large
        # before is counted on its recheck, not read again.
        known_large = namespace in self._outgrown
        table = None
        if not known_large or await self._table.count_namespace(namespace) <= self._max_rows:
            limit = self._max_rows + 1
            table = await self._table.rows(everything, VIEW_COLUMNS, limit=limit, action="load a namespace view")
        if table is None or table.num_rows > self._max_rows:
            bounded_put(self._outgrown, namespace, time.monotonic(), _OUTGROWN_HELD)
            if self._on_outgrown is not None:
                self._on_outgrown(namespace)
            return None
        self._outgrown.pop(namespace, None)
        self.reloads += 1
        view = NamespaceView.from_table(namespace, current, table)
        if self._epochs[_bucket(namespace)] == epoch:  # no write of ours raced the load
            self._views[namespace] = view
            held = sum(len(v) for v in self._views.values())
            while held > self._total_rows and len(self._views) > 1:
                evicted = next(iter(self._views))  # the least recently used
                held -= len(self._views.pop(evicted))
                self._forget_pending(evicted)
        return view

    @property
    def rows_held(self) -> int:
        """Rows held over all views (at most ``total_rows``)."""
        return sum(len(v) for v in self._views.values())

    async def _patch(self, view: NamespaceView, ids: set[str], version: int) -> NamespaceView | None:
        """``view`` with the rows of ``ids`` re-read (stored again where it is held); ``None`` if too large."""
        namespace = view.namespace
        where = build_where(namespace, MemoryFilter(include_superseded=True), ids=sorted(ids))
        fresh = await self._table.rows(where, VIEW_COLUMNS, action="patch a namespace view")
        return self._keep(view.patched(ids, fresh, version))

    def _keep(self, view: NamespaceView) -> NamespaceView | None:
        """Hold a patched view in place of its predecessor; ``None`` (and dropped) once too large."""
        if len(view) > self._max_rows:
            self._views.pop(view.namespace, None)
            return None
        if self._views.get(view.namespace) is not None:
            self._views[view.namespace] = view
        return view

    def _forget_pending(self, namespace: str) -> None:
        self._touched.pop(namespace, None)
        self._known.pop(namespace, None)


def _bucket(namespace: str) -> int:
    # crc32, not hash(): deterministic across runs (hash() of a str is salted per process).
    return zlib.crc32(namespace.encode()) % _EPOCH_BUCKETS


def _combined(known: list[tuple[set[str], pa.Table | None]]) -> list[tuple[set[str], pa.Table | None]]:
    """Known changes applied in order, as one change when their rows can be joined.

    A chat turn's ``add`` commits twice (the turn, then the context of the turns before it), and
    each patch copies the view's id index: one patch per recall instead of one per commit. A
    later change's ids remove an earlier change's rows of those ids, as applying both in turn does.
    """
    if len(known) < 2:
        return known
    schemas = {rows.schema for _, rows in known if rows is not None}
    if len(schemas) > 1:
        return known  # rows that cannot be concatenated: one patch each
    gone: set[str] = set()
    parts: list[pa.Table] = []
    for ids, rows in known:
        gone |= ids
        dropped = pa.array(sorted(ids), pa.string())
        parts = [part.filter(pc.invert(pc.is_in(part.column("id"), value_set=dropped))) for part in parts]
        if rows is not None and rows.num_rows:
            parts.append(rows)
    return [(gone, pa.concat_tables(parts) if parts else None)]


def _known_change(event: CommitEvent, namespace: str, ids: set[str]) -> tuple[set[str], pa.Table | None] | None:
    """What a commit stored in ``namespace``, when it says so exactly: the ids and their rows now.

    An append stores its rows as given, and so does a conditional merge of whole rows when every
    row landed; a plain delete removes its ids. Anything else (access statistics, a merge where
    some row had changed, a delete that revived predecessors) is ``None``: re-read.
    """
    rows = event.rows
    if event.action == "delete":
        return (ids, None) if rows is None or rows.num_rows == 0 else None
    if rows is None or not set(VIEW_COLUMNS) <= set(rows.column_names):
        return None
    if event.action != "add" and event.landed != event.row_count:
        return None
    return ids, rows.filter(pc.equal(rows.column("namespace"), namespace)).select(VIEW_COLUMNS)


def _touched_ids(event: CommitEvent) -> dict[str, set[str]]:
    """Ids per namespace that a commit wrote or deleted; a namespace deleted whole is absent."""
    out: dict[str, set[str]] = {}
    rows = event.rows
    if rows is not None and rows.num_rows:
        if "namespace" not in rows.column_names or "id" not in rows.column_names:
            return {}  # no way to say which rows changed: every touched view is dropped
        for ns, row_id in zip(rows.column("namespace").to_pylist(), rows.column("id").to_pylist(), strict=True):
            out.setdefault(ns, set()).add(row_id)
    if event.deleted is not None:
        for ns, ids in event.deleted.items():
            out.setdefault(ns, set()).update(ids)
    return out
