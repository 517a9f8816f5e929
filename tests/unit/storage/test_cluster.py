"""Clustering by namespace (issue 29 item 1): contiguous runs, incremental passes, nothing lost."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import memory_retrievers.runtime.loop as _loop
from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore, NotFoundError
from memory_retrievers.storage.backend import Request
from memory_retrievers.storage.cluster import _READ, Clusterer, ClusterResult, find_runs
from memory_retrievers.store.admin import StoreAdmin

NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)
QUIET = {"optimize_after_rows": 10**9, "optimize_after_commits": 10**9}
NAMESPACES = [f"user{n:02d}" for n in range(6)]


def open_store(path: Path, **config: Any) -> MemoryStore:
    return MemoryStore(path, embedder=HashEmbedder(32), config={**QUIET, **config})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with open_store(tmp_path / "db", cluster_min_run_rows=40) as s:
        yield s


def write_round_robin(store: MemoryStore, rounds: int, tag: str, per_round: int = 3) -> dict[str, list[str]]:
    """Interleaved writes, as real traffic: every commit holds a few rows of every namespace."""
    ids: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}
    for r in range(rounds):
        batch = [
            {"text": f"{ns} says {tag} thing {r} {j} about topic{(r * 7 + j) % 11}", "namespace": ns}
            for j in range(per_round)
            for ns in NAMESPACES
        ]
        for rec, out in zip(batch, store.add_many(batch, dedup=False), strict=True):
            ids[rec["namespace"]].append(out.id)
    return ids


def layout(store: MemoryStore) -> list[dict[str, Any]]:
    """Every row's namespace, id and row address, in row-address order."""

    async def read() -> pa.Table:
        return await store._table.search(Request(None, ["namespace", "id", "created_at", "_rowaddr"]), "layout")

    table = _run(read())
    return sorted(table.to_pylist(), key=lambda r: r["_rowaddr"])


def _run(coro: Any) -> Any:
    return _loop.run_sync(coro)


def recalled(retriever: MemoryRetriever, query: str, namespace: str) -> list[tuple[str, float]]:
    # A fixed ``now``: recency scores move with the clock, not with the layout.
    return [(m.id, round(m.score, 6)) for m in retriever.recall(query, namespace=namespace, now=NOW).memories]


def namespace_switches(rows: list[dict[str, Any]]) -> int:
    return sum(1 for a, b in itertools.pairwise(rows) if a["namespace"] != b["namespace"])


def test_find_runs_splits_at_order_breaks_and_fragments() -> None:
    frag = 1 << 32
    table = pa.table(
        {
            "namespace": ["a", "b", "a", "b", "a", "a"],
            "created_at": [1, 1, 2, 2, 3, 4],
            "id": ["1", "2", "3", "4", "5", "6"],
            "_rowaddr": pa.array([0, 1, 2, 3, frag, frag + 1], pa.uint64()),
        }
    )
    assert [list(r) for r in find_runs(table)] == [[0, 1], [2, 3], [4, 5]]
    assert find_runs(table.slice(0, 0)) == []


def test_cluster_makes_each_namespace_contiguous_and_changes_no_result(store: MemoryStore) -> None:
    write_round_robin(store, rounds=12, tag="early")
    store.admin.optimize()  # every row indexed: BM25 statistics differ between indexed and flat-scanned rows
    before_rows = layout(store)
    assert namespace_switches(before_rows) > 100  # scattered: every commit interleaves the namespaces
    retriever = MemoryRetriever(store, config={"record_access": False})  # accesses would change scores
    queries = ["thing about topic3", "early topic7 says", "user03 thing 5"]
    before = {(ns, q): recalled(retriever, q, ns) for ns in NAMESPACES for q in queries}
    every = {ns: {m.id for m in store.fts_search("topic3", namespace=ns, k=100)} for ns in NAMESPACES}
    vec_before = [m.id for m in store.vector_search("thing about topic5", namespace="user04", k=10)]
    count_before = store.count(namespace="user01")

    result = store.admin.cluster()

    assert isinstance(result, ClusterResult)
    assert result.moved == len(before_rows) and result.skipped == 0 and result.runs_after == 1
    after_rows = layout(store)
    assert namespace_switches(after_rows) == len(NAMESPACES) - 1
    keys = [(r["namespace"], r["created_at"], r["id"]) for r in after_rows]
    assert keys == sorted(keys)
    assert {r["id"] for r in after_rows} == {r["id"] for r in before_rows}
    # Findable at once, out of the indexes (flat-scanned): every full-text and vector hit still there.
    assert {ns: {m.id for m in store.fts_search("topic3", namespace=ns, k=100)} for ns in NAMESPACES} == every
    assert [m.id for m in store.vector_search("thing about topic5", namespace="user04", k=10)] == vec_before
    assert store.count(namespace="user01") == count_before
    # Folded back into the indexes by optimize, with the layout kept: every recall exactly as before.
    store.admin.optimize()
    assert namespace_switches(layout(store)) == len(NAMESPACES) - 1
    assert {(ns, q): recalled(retriever, q, ns) for ns in NAMESPACES for q in queries} == before


def test_a_second_pass_moves_only_the_rows_written_since(store: MemoryStore) -> None:
    write_round_robin(store, rounds=12, tag="early")
    first = store.admin.cluster()
    settled = {r["id"]: r["_rowaddr"] for r in layout(store)}
    new_ids = write_round_robin(store, rounds=2, tag="later")

    second = store.admin.cluster()

    new = {i for ids in new_ids.values() for i in ids}
    assert second.moved == len(new) == 36 and second.skipped == 0 and not second.merged
    assert (first.runs_after, second.runs_before, second.runs_after) == (1, 1 + 2 * 3, 2)  # 3 runs per commit
    rows = layout(store)
    assert {r["id"]: r["_rowaddr"] for r in rows if r["id"] in settled} == settled  # the old run untouched
    tail = [r for r in rows if r["id"] in new]
    assert [r["id"] for r in rows[-len(new) :]] == [r["id"] for r in tail]  # one new run, after it
    assert namespace_switches(tail) == len(NAMESPACES) - 1
    assert store.admin.cluster().moved == 0  # nothing new: nothing to do


def test_runs_are_merged_when_they_pile_up(tmp_path: Path) -> None:
    with open_store(tmp_path / "db", cluster_min_run_rows=10, cluster_max_runs=2) as store:
        write_round_robin(store, rounds=4, tag="a")
        assert store.admin.cluster().runs_after == 1
        write_round_robin(store, rounds=2, tag="b")
        assert store.admin.cluster().runs_after == 2
        write_round_robin(store, rounds=2, tag="c")
        result = store.admin.cluster()
        assert result.merged and result.runs_after == 1 and result.moved == len(layout(store)) == 8 * 18
        assert namespace_switches(layout(store)) == len(NAMESPACES) - 1


def test_rows_changed_during_the_pass_keep_their_change_and_deleted_ones_stay_deleted(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = write_round_robin(store, rounds=8, tag="early")
    updated, deleted, accessed = ids["user01"][0], ids["user02"][1], ids["user03"][2]
    forgotten = "user05"
    read_chunk = Clusterer._read_chunk

    async def racing(self: Clusterer, *args: Any) -> pa.Table:
        data = await read_chunk(self, *args)  # the pass has read the rows: now other writers act
        await store.aupdate(updated, namespace="user01", text="user01 changed her mind")
        await store.adelete(deleted, namespace="user02")
        store._access.record("user03", [accessed], store._clock())
        await store.admin.aflush_access()
        await store.aforget(forgotten)
        return data

    monkeypatch.setattr(Clusterer, "_read_chunk", racing)
    total = len(layout(store))
    result = store.admin.cluster()

    lost = 3 + len(ids[forgotten])
    assert result.skipped == lost and result.moved == total - lost
    assert store.get(updated, namespace="user01").text == "user01 changed her mind"
    assert store.get(accessed, namespace="user03").access_count == 1
    with pytest.raises(NotFoundError):
        store.get(deleted, namespace="user02")
    assert store.count(namespace=forgotten) == 0
    assert len(layout(store)) == total - 1 - len(ids[forgotten])


def write_steadily(path: Path, stop: threading.Event, log: dict[str, Any]) -> None:
    """Add, update and delete until told to stop (and at least 30 times), noting what was acknowledged."""
    expect: dict[str, dict[str, str]] = log["expect"]
    with open_store(path) as other:  # its own handle and queue: a real concurrent writer
        try:
            i = 0
            while not stop.is_set() or i < 30:
                ns = NAMESPACES[i % len(NAMESPACES)]
                added = other.add(f"{ns} writer fact {i}", namespace=ns, dedup=False)
                expect.setdefault(ns, {})[added.id] = added.text
                if i % 3 == 1:
                    expect[ns][added.id] = other.update(added.id, namespace=ns, text=f"{ns} updated fact {i}").text
                if i % 5 == 2:
                    victim = next(iter(expect[ns]))
                    other.delete(victim, namespace=ns)
                    log["gone"].append((ns, victim))
                    del expect[ns][victim]
                i += 1
        except BaseException as exc:  # reported by the test, which cannot see this thread's errors
            log["errors"].append(exc)


def test_concurrent_writer_thread_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with open_store(path, cluster_min_run_rows=10, cluster_max_runs=1) as store:
        write_round_robin(store, rounds=6, tag="seed")
        stop = threading.Event()
        expect: dict[str, dict[str, str]] = {}  # namespace -> id -> text
        gone: list[tuple[str, str]] = []
        errors: list[BaseException] = []
        log: dict[str, Any] = {"expect": expect, "gone": gone, "errors": errors}

        thread = threading.Thread(target=write_steadily, args=(path, stop, log))
        thread.start()
        passes = [store.admin.cluster() for _ in range(6)]
        stop.set()
        thread.join(120)
        assert not errors and not thread.is_alive()
        assert sum(p.moved for p in passes) > 0
        for ns, texts in expect.items():
            stored = {m.id: m.text for m in store.get(list(texts), namespace=ns)}
            assert stored == texts, ns
        for ns, id_ in gone:
            with pytest.raises(NotFoundError):
                store.get(id_, namespace=ns)
        final = store.admin.cluster()
        assert final.skipped == 0


def test_cluster_is_an_admin_operation_with_an_async_twin(store: MemoryStore) -> None:
    sync, twin = StoreAdmin.cluster, StoreAdmin.acluster
    assert inspect.iscoroutinefunction(twin) and not inspect.iscoroutinefunction(sync)
    assert sync.__doc__ == twin.__doc__
    assert asyncio.run(_twin_result(store)).moved == 0  # empty store: nothing to move
    assert store.admin.cluster().to_dict().keys() == {
        "moved",
        "skipped",
        "runs_before",
        "runs_after",
        "merged",
        "elapsed_s",
    }


async def _twin_result(store: MemoryStore) -> ClusterResult:
    return await store.admin.acluster()


def test_optimize_clusters_first_when_configured(tmp_path: Path) -> None:
    with open_store(tmp_path / "db", cluster_on_optimize=True, cluster_min_run_rows=40) as store:
        write_round_robin(store, rounds=8, tag="x")
        assert namespace_switches(layout(store)) > 50
        store.admin.optimize()
        assert namespace_switches(layout(store)) == len(NAMESPACES) - 1
        indexed = np.array([i.unindexed_rows for i in _run(store._table.backend.indexes())])
        assert (indexed == 0).all()  # the same optimize folded the moved rows back in


def test_views_treat_a_cluster_pass_like_a_compaction(tmp_path: Path) -> None:
    """Ids, revisions and values are unchanged: a view is checked (signature read), never reloaded."""
    path = tmp_path / "db"
    with open_store(path, cluster_min_run_rows=40) as reader, open_store(path, cluster_min_run_rows=40) as other:
        write_round_robin(reader, rounds=8, tag="x")
        reader.admin.optimize()  # every row indexed: the same BM25 statistics before and after
        retriever = MemoryRetriever(reader, config={"record_access": False})
        before = recalled(retriever, "thing about topic3", "user02")
        mine = reader._views
        own = MemoryRetriever(other, config={"record_access": False})
        own_before = recalled(own, "thing about topic3", "user02")
        reloads, refreshes, other_reloads = mine.reloads, mine.refreshes, other._views.reloads
        assert other.admin.cluster().moved > 0  # another store moved every row; this one's view is stale
        other.admin.optimize()
        assert recalled(retriever, "thing about topic3", "user02") == before
        assert (mine.reloads, mine.refreshes) == (reloads, refreshes + 1)
        # The store that clustered patched its own view from the commit: not even a signature read.
        assert recalled(own, "thing about topic3", "user02") == own_before
        assert other._views.reloads == other_reloads


def test_a_memory_deleted_and_written_again_during_the_pass_keeps_its_new_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 29 red team): the rewrite's condition compared revision, updated_at and the
    # access statistics only. A memory deleted and written again under the same id (revision 0
    # again) at the same clock reading matched its stale copy, which then overwrote it: the
    # deleted text came back. Every write draws a new stamp; the condition now compares it too.
    frozen = MemoryStore(
        tmp_path / "db", embedder=HashEmbedder(32), config={**QUIET, "cluster_min_run_rows": 40}, clock=lambda: NOW
    )
    with frozen:
        for r in range(4):
            frozen.add_many([{"text": f"{ns} note {r}", "namespace": ns, "id": f"m{r}"} for ns in NAMESPACES])
        read_chunk = Clusterer._read_chunk

        async def racing(self: Clusterer, *args: Any) -> pa.Table:
            data = await read_chunk(self, *args)
            await frozen.adelete("m0", namespace="user01")
            await frozen.aadd("user01 wants this forgotten text gone", namespace="user01", id="m0")
            return data

        monkeypatch.setattr(Clusterer, "_read_chunk", racing)
        result = frozen.admin.cluster()
        assert frozen.get("m0", namespace="user01").text == "user01 wants this forgotten text gone"
        assert result.skipped == 1 and result.moved == 4 * len(NAMESPACES) - 1


def test_find_runs_carries_a_long_run_on_into_the_next_fragment() -> None:
    frag = 1 << 32
    table = pa.table(
        {
            "namespace": ["a", "a", "a", "a", "b", "b", "b", "a"],
            "created_at": [1, 2, 3, 4, 1, 2, 3, 5],
            "id": [str(i) for i in range(8)],
            "_rowaddr": pa.array([0, 1, 2, frag, frag + 1, 2 * frag, 3 * frag, 3 * frag + 1], pa.uint64()),
        }
    )
    # 3 rows in fragment 0 carry the run into fragment 1; fragment 1's 2 rows are too few to carry
    # it into fragment 2 (nor fragment 2's one row into 3); the order break in fragment 3 splits.
    assert [list(r) for r in find_runs(table, span_rows=3)] == [[0, 1, 2, 3, 4], [5], [6], [7]]
    assert [list(r) for r in find_runs(table, span_rows=2)] == [[0, 1, 2, 3, 4, 5], [6], [7]]
    assert [list(r) for r in find_runs(table)] == [[0, 1, 2], [3, 4], [5], [6], [7]]


def _version(store: MemoryStore) -> int:
    return int(_run(store._table.backend.version()))


@pytest.mark.parametrize(("chunk_rows", "commits"), [(25, 5), (3, 11)])  # never below min_run_rows (10)
def test_a_pass_commits_chunk_by_chunk_in_key_order_and_the_next_moves_nothing(
    tmp_path: Path, chunk_rows: int, commits: int
) -> None:
    with open_store(tmp_path / "db", cluster_min_run_rows=10, cluster_chunk_rows=chunk_rows) as store:
        write_round_robin(store, rounds=6, tag="x")  # 108 rows, 6 commits, 18 runs
        before = _version(store)

        result = store.admin.cluster()

        assert _version(store) - before == commits  # one commit per chunk: the pass held a chunk at a time
        assert (result.moved, result.skipped, result.runs_before, result.runs_after) == (108, 0, 18, 1)
        rows = layout(store)
        assert len({r["_rowaddr"] >> 32 for r in rows}) == commits  # one fragment per chunk, one run over them
        keys = [(r["namespace"], r["created_at"], r["id"]) for r in rows]
        assert keys == sorted(keys)
        again = store.admin.cluster()
        assert (again.moved, again.runs_before, again.runs_after) == (0, 1, 1)
        assert _version(store) - before == commits


def test_writes_between_chunks_keep_their_effect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(tmp_path / "db", cluster_min_run_rows=10, cluster_chunk_rows=25) as store:
        ids = write_round_robin(store, rounds=6, tag="x")
        moved_early, later, deleted = ids["user00"][0], ids["user04"][5], ids["user05"][7]
        read_chunk, calls = Clusterer._read_chunk, []

        async def racing(self: Clusterer, *args: Any) -> pa.Table:
            calls.append(1)
            if len(calls) == 3:  # two chunks committed (user00 and user01's rows): now others write
                await store.aupdate(moved_early, namespace="user00", text="user00 changed after moving")
                await store.aupdate(later, namespace="user04", text="user04 changed before moving")
                await store.adelete(deleted, namespace="user05")
                await store.aadd("user02 new fact in the middle of a pass", namespace="user02", id="fresh")
            return await read_chunk(self, *args)

        monkeypatch.setattr(Clusterer, "_read_chunk", racing)
        result = store.admin.cluster()
        monkeypatch.undo()

        assert len(calls) == 5
        assert (result.moved, result.skipped) == (108 - 2, 0)  # gone from their addresses: not read at all
        assert store.get(moved_early, namespace="user00").text == "user00 changed after moving"
        assert store.get(later, namespace="user04").text == "user04 changed before moving"
        assert store.get("fresh", namespace="user02").text == "user02 new fact in the middle of a pass"
        with pytest.raises(NotFoundError):
            store.get(deleted, namespace="user05")
        assert len(layout(store)) == 108
        assert result.runs_after > 1  # the writes landed between the chunks' fragments
        follow = store.admin.cluster()
        assert follow.moved > 0 and follow.skipped == 0
        assert store.admin.cluster().moved == 0
        with pytest.raises(NotFoundError):  # still deleted after the passes that followed
            store.get(deleted, namespace="user05")


def _reads(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How each chunk of the passes to come is read: ``scan``, ``ranges`` or ``addresses``."""
    seen: list[str] = []
    search = type(store._table).search

    async def spy(self: Any, request: Request, action: str) -> pa.Table:
        if action == _READ:
            where = request.where
            seen.append("scan" if where is None else "addresses" if " IN (" in where else "ranges")
        return await search(self, request, action)

    monkeypatch.setattr(type(store._table), "search", spy)
    return seen


def test_a_table_within_one_chunk_is_scanned_when_the_pass_moves_most_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On object storage a scan reads each column in large requests: at 100k rows on loopback S3
    # a pass reading one row-address range over every row took 758 requests, scanning 111-140.
    with open_store(tmp_path / "db", cluster_min_run_rows=40) as store:
        reads = _reads(store, monkeypatch)
        write_round_robin(store, rounds=8, tag="a")  # 144 rows: within the default chunk
        assert store.admin.cluster().moved == 144
        assert reads == ["scan"]
        write_round_robin(store, rounds=1, tag="b")  # 18 more at the end: one stretch of the table
        assert store.admin.cluster().moved == 18
        assert reads == ["scan", "ranges"]
        keys = [(r["namespace"], r["created_at"], r["id"]) for r in layout(store)]
        assert len(keys) == 162 and namespace_switches(layout(store)) == len(NAMESPACES) * 2 - 1


def test_a_scattered_chunk_of_a_bigger_table_is_read_by_its_addresses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A scan of a table bigger than a chunk would hold more than the chunk: read by address instead.
    with open_store(tmp_path / "db", cluster_min_run_rows=10, cluster_chunk_rows=80) as store:
        reads = _reads(store, monkeypatch)
        write_round_robin(store, rounds=80, tag="a", per_round=1)  # 480 rows, a namespace's every 6th
        result = store.admin.cluster()
        assert (result.moved, result.runs_after) == (480, 1)
        assert reads == ["addresses"] * 6  # a chunk is one namespace: 80 stretches of one row
        keys = [(r["namespace"], r["created_at"], r["id"]) for r in layout(store)]
        assert keys == sorted(keys)
