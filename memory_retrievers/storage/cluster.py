"""Tenants laid out together: rewriting rows so each namespace's rows are contiguous.

Rows land in the table in write order, so one namespace's memories are scattered over every
fragment written while it was active. On object storage a cold read of one namespace then costs
about one request per memory (issue 29: ~1,050 GETs for a 1,000-memory tenant in a 100k-row
table). Rewritten in ``(namespace, created_at, id)`` order, a namespace's rows sit next to each
other in each *run*, and a read of them is a few range requests per run.

Incremental, LSM style. The layout itself is the record of progress, so a new process (or one
that crashed mid-pass) continues where the last left, with nothing else to keep consistent: the
table is read as runs (maximal stretches in row-address order whose rows are in key order; a run
goes on into the next fragment only from a piece of at least ``min_run_rows`` rows); runs of at
least ``min_run_rows`` rows are settled, everything else (rows written since the last pass, short
runs) is rewritten as one new sorted run. When that would leave more than ``max_runs`` settled
runs, every row is rewritten as one run instead (the merge).

Bounded memory: only the layout (``namespace``, ``created_at``, ``id``, row address: tens of bytes
a row) is held whole. The rows to move are sorted by key there, then read whole (vector included)
and committed ``chunk_rows`` at a time, in key order: each commit appends one fragment that goes on
from the one before, so the chunks of a pass read back as one run and the next pass moves nothing.
One merge fed a streamed source instead was measured holding most of it anyway (LanceDB 0.40:
~0.7 KB a row of 384-d vectors, ~0.37 KB at 32-d), so a pass is several commits. Each of them
races the other writers: a chunk whose commit they keep preempting past Lance's own retries is sent
again (a few times, with pauses), keeping the chunks committed before it.

Never losing a concurrent write: each commit is one merge by key that updates only (never
inserts), and only rows still exactly as read (``stamp``, ``revision``, ``updated_at``,
``access_count``, ``last_accessed_at``). A row deleted meanwhile stays deleted (also when written
again under its id); a row changed meanwhile keeps its change and its old place, and is picked up
by the next pass; a row changed before its chunk is read is no longer at its address and is not
read. A crash between commits leaves every row exactly once: the chunks committed already form a
run, the rest stay where they were, and the next pass goes on from that layout. Each merge joins
by hashing: that writes its rows in source order (measured on LanceDB 0.40 up to 100k rows; the
tests check the row addresses), while the join through the ``id`` index writes them in the
table's old order. ``runs_after`` is read back from the table, so a LanceDB that stopped keeping
the order would show in every result.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.errors import StorageError
from memory_retrievers.storage.backend import Merge, Request
from memory_retrievers.storage.events import CommitEvent
from memory_retrievers.storage.table import MemoryTable

__all__ = ["ClusterResult", "Clusterer", "SAME_ROW", "find_runs"]

#: The condition of the rewrite: the stored row is still exactly the one read (the clustering keeps
#: ``revision`` and ``stamp`` as they are, so this checks every column a write or an access flush
#: changes). ``stamp`` is drawn afresh by every write: a memory deleted and written again under its
#: id at the same clock reading has revision 0 and equal timestamps again, but not the stamp (a
#: table from before stamps holds nulls). Lance's SQL has no ``IS NOT DISTINCT FROM``: nulls are
#: compared by hand.
SAME_ROW = (
    "(target.stamp = source.stamp OR (target.stamp IS NULL AND source.stamp IS NULL))"
    " AND target.revision = source.revision AND target.updated_at = source.updated_at"
    " AND target.access_count = source.access_count"
    " AND (target.last_accessed_at = source.last_accessed_at"
    " OR (target.last_accessed_at IS NULL AND source.last_accessed_at IS NULL))"
)
#: Update only, and by hash join: Lance's ``id``-index path writes rows in the table's order, not ours.
_MOVE = Merge(update_where=SAME_ROW, in_source_order=True)
_ORDER = [("namespace", "ascending"), ("created_at", "ascending"), ("id", "ascending")]
_LAYOUT = ["namespace", "created_at", "id", "_rowaddr"]
_MAX_STRETCHES = 64  # address ranges in one filter; more and the chunk is read by its addresses
_READ = "read the rows to cluster"
#: Lance's messages for a commit that other writers kept preempting. Lance retries a merge itself,
#: but within one 30 s budget; a pass of many chunks beside a steady writer was seen exhausting it
#: (10-row chunks, a writer committing continuously, a loaded 2-core machine).
_CONTENDED = ("too many concurrent writers", "retryable commit conflict")
_CHUNK_ATTEMPTS = 6


@dataclass(frozen=True)
class ClusterResult:
    """What one clustering pass did.

    Attributes:
        moved: Rows rewritten in namespace order.
        skipped: Rows that changed or were deleted while the pass ran (left where they were; the
            next pass takes them).
        runs_before: Sorted runs the table was read as (a cold namespace read costs about a few
            requests per run holding it).
        runs_after: Runs it holds after the pass (read back; rows skipped or written meanwhile count).
        merged: Whether every row was rewritten as one run (too many runs had piled up).
        elapsed_s: Wall time of the pass, in seconds.
    """

    moved: int
    skipped: int
    runs_before: int
    runs_after: int
    merged: bool
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-friendly dict."""
        return asdict(self)


def find_runs(layout: pa.Table, *, span_rows: int | None = None) -> list[np.ndarray]:
    """The table's sorted runs: positions into ``layout`` of each run, in row-address order.

    Args:
        layout: ``namespace``, ``created_at``, ``id`` and ``_rowaddr`` of every row.
        span_rows: A run goes on into the next fragment (the high 32 bits of the row address)
            when the key order goes on and its part in the fragment before holds at least this
            many rows: a pass commits a long run as consecutive fragments. ``None``: a run never
            spans fragments. Short pieces never carry a run on, so rows written one commit at a
            time stay loose even when in key order (each of them is a request to read).

    Returns:
        One array of row positions per run: a maximal stretch in row-address order whose rows
        are in ``(namespace, created_at, id)`` order, split at fragments as ``span_rows`` says.
    """
    if layout.num_rows == 0:
        return []
    by_addr = pc.sort_indices(layout, [("_rowaddr", "ascending")]).to_numpy()
    rank = np.empty(layout.num_rows, dtype=np.int64)
    rank[pc.sort_indices(layout, _ORDER).to_numpy()] = np.arange(layout.num_rows)
    ranks = rank[by_addr]
    fragments = layout.column("_rowaddr").to_numpy()[by_addr].astype(np.uint64) >> np.uint64(32)
    order_breaks = np.diff(ranks) < 0
    fragment_breaks = np.diff(fragments) != 0
    breaks = np.flatnonzero(order_breaks | fragment_breaks) + 1
    if span_rows is not None and breaks.size:
        pieces = np.diff(np.concatenate(([0], breaks)))  # rows of the piece ending at each break
        carried = ~order_breaks[breaks - 1] & (pieces >= span_rows)
        breaks = breaks[~carried]
    return list(np.split(by_addr, breaks))


class Clusterer:
    """One clustering pass over a table (see the module docstring).

    Args:
        table: The table layer (its commit subscribers see the rewrite as an update that changed
            no value: views of the namespaces stay valid).
        min_run_rows: Runs shorter than this are rewritten with the newer rows.
        max_runs: Settled runs beyond which every row is rewritten as one run.
        chunk_rows: Rows read, held and committed at a time (at least ``min_run_rows``, so each
            commit's fragment carries the run on into the next).
    """

    def __init__(self, table: MemoryTable, *, min_run_rows: int, max_runs: int, chunk_rows: int = 100_000) -> None:
        self._table = table
        self._min_run_rows = min_run_rows
        self._max_runs = max_runs
        self._chunk_rows = max(chunk_rows, min_run_rows)

    async def run(self) -> ClusterResult:
        """Run one pass: rewrite the rows written since the last one (or every row, to merge runs)."""
        started = time.perf_counter()
        layout = await self._layout()
        runs = find_runs(layout, span_rows=self._min_run_rows)
        settled = [r for r in runs if len(r) >= self._min_run_rows]
        loose = [r for r in runs if len(r) < self._min_run_rows]
        merged = len(settled) + (1 if loose else 0) > self._max_runs
        chosen = runs if merged else loose
        if len(chosen) <= 1:  # one run (or none) is already in order: nothing to gain
            return ClusterResult(0, 0, len(runs), len(runs), False, time.perf_counter() - started)
        positions = np.concatenate(chosen)
        in_order = positions[pc.sort_indices(layout.take(pa.array(positions)), _ORDER).to_numpy()]
        address_rank = np.empty(layout.num_rows, dtype=np.int64)
        address_rank[np.concatenate(runs)] = np.arange(layout.num_rows)
        moved = read = 0
        for start in range(0, len(in_order), self._chunk_rows):
            data = await self._read_chunk(layout, in_order[start : start + self._chunk_rows], address_rank)
            event = await self._move(data)
            moved, read = moved + int(event.updated or 0), read + data.num_rows
        after = len(find_runs(await self._layout(), span_rows=self._min_run_rows))
        return ClusterResult(moved, read - moved, len(runs), after, merged, time.perf_counter() - started)

    async def _move(self, data: pa.Table) -> CommitEvent:
        """Commit one chunk, sent again while other writers keep preempting its commit.

        Sending the same rows again is safe: the merge updates only rows still exactly as read, so
        a row changed or deleted meanwhile is skipped, and a failed commit changed nothing. Retrying
        the chunk keeps the chunks committed before it (retrying the whole pass would read the
        layout again and redo the work, and fail as often).

        Raises:
            StorageError: The commit failed for another reason, or stayed preempted every attempt.
        """
        for attempt in range(_CHUNK_ATTEMPTS):
            try:
                return await self._table.rewrite(data, merge=_MOVE)
            except StorageError as exc:
                contended = any(text in str(exc).lower() for text in _CONTENDED)
                if not contended or attempt == _CHUNK_ATTEMPTS - 1:
                    raise
            # Jittered, growing pauses (50 ms .. ~1.6 s): let the writer's burst pass.
            await asyncio.sleep(min(1.6, 0.05 * 2**attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _layout(self) -> pa.Table:
        await self._table.refresh()
        return await self._table.search(Request(None, _LAYOUT), "read the table layout")

    async def _read_chunk(self, layout: pa.Table, chunk: np.ndarray, address_rank: np.ndarray) -> pa.Table:
        """The stored rows at positions ``chunk`` of the layout (whole, vector included), in key order.

        A table no bigger than a chunk is scanned whole when the chunk is most of it or scattered
        through it: a scan reads each column in large requests (a pass over 100k rows on loopback
        S3: 111-140 requests scanning, 758 reading one row-address range over every row, which
        Lance reads in small batches). Otherwise rows neighbouring in the table are read as one
        row-address range (a few requests, where reading by id fetches one file region per row:
        measured 101,269 requests for 100k rows on S3), and a chunk scattered over more stretches
        by its addresses. Rows changed or deleted since the layout was read are no longer at those
        addresses: not moved.
        """
        addresses = layout.column("_rowaddr").take(pa.array(chunk))
        gaps = np.diff(np.sort(address_rank[chunk])) != 1  # where a stretch of neighbours ends
        scattered = int(np.count_nonzero(gaps)) >= _MAX_STRETCHES
        where: str | None
        if layout.num_rows <= self._chunk_rows and (scattered or 2 * len(chunk) >= layout.num_rows):
            where = None  # the whole table holds no more than a chunk: within the memory bound
        elif not scattered:
            by_rank = pc.sort_indices(addresses).to_numpy()
            bounds = np.flatnonzero(gaps) + 1
            ends = [(int(s[0]), int(s[-1])) for s in np.split(addresses.to_numpy()[by_rank], bounds)]
            where = " OR ".join(f"(_rowaddr >= {lo} AND _rowaddr <= {hi})" for lo, hi in ends)
        else:
            where = f"_rowaddr IN ({', '.join(str(a) for a in addresses.to_pylist())})"
        columns = self._table.schema.names
        read = await self._table.search(Request(where, [*columns, "_rowaddr"]), _READ)
        read = read.filter(pc.is_in(read.column("_rowaddr"), value_set=addresses))
        table = read.select(columns).cast(self._table.schema)
        return table.take(pc.sort_indices(table, _ORDER))
