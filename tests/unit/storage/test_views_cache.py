"""Namespace views follow the table's commits: kept across others' namespaces, dropped when theirs change."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memory_retrievers import MemoryFilter
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.storage.views import ViewCache

from .conftest import new_table, rows


async def test_a_view_holds_the_namespace_rows_and_unit_vectors(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=100)
    await table.add(rows("u", ["alpha", "beta"]))
    await table.add(rows("other", ["gamma"]))
    view = await views.get("u")
    assert view is not None and len(view) == 2 and {r["text"] for r in view.rows} == {"alpha", "beta"}
    assert np.allclose(np.linalg.norm(view.vectors, axis=1), 1.0)
    assert view.mask(MemoryFilter()).tolist() == [True, True]


async def test_own_commits_keep_other_namespaces_views_and_patch_their_own(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=100)
    await table.add(rows("u", ["alpha"]))
    view = await views.get("u")
    await table.add(rows("other", ["gamma"]))
    assert views.cached("u") is view and await views.get("u") is view
    reads: list[str] = []
    original = table.rows

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs.get("action", ""))
        return await original(*args, **kwargs)

    table.rows = counted  # type: ignore[method-assign]
    added = rows("u", ["delta"])
    await table.add(added)
    patched = await views.get("u")
    assert patched is not None and patched is not view and len(patched) == 2
    assert [patched.rows[i]["text"] for i in range(2)] == ["alpha", "delta"]
    assert np.array_equal(patched.vectors[1], added.column("vector").to_numpy(zero_copy_only=False)[0])
    assert reads == []  # an append stores its rows as given: patched in from the commit, no read
    stored = await table.rows_by_id("u", [patched.ids[0]])
    assert (await table.rewrite(table.whole_rows([{**stored[patched.ids[0]], "text": "alpha again"}]))).landed
    reads.clear()
    rewritten = await views.get("u")
    assert rewritten is not None and rewritten.row(rewritten.index[patched.ids[0]])["text"] == "alpha again"
    assert reads == []  # every row of the conditional rewrite landed: stored as given
    # A rewrite from a stale copy does not land: the view reads the row back and keeps what is stored.
    stale = table.whole_rows([{**stored[patched.ids[0]], "text": "a stale overwrite"}])
    assert (await table.rewrite(stale)).landed == 0
    kept = await views.get("u")
    assert kept is not None and kept.row(kept.index[patched.ids[0]])["text"] == "alpha again"
    assert reads == ["patch a namespace view"]
    await table.delete("u", [added.column("id")[0].as_py()])
    after = await views.get("u")
    assert after is not None and [r["text"] for r in after.rows] == ["alpha again"] and after.vectors.shape[0] == 1
    await table.delete("u", None)  # forget: nothing says which rows went, so the view is dropped
    assert views.cached("u") is None


def counting(table: MemoryTable) -> list[str]:
    """Record the ``action`` of every read ``table.rows`` makes from now on."""
    reads: list[str] = []
    original = table.rows

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs.get("action", ""))
        return await original(*args, **kwargs)

    table.rows = counted  # type: ignore[method-assign]
    return reads


async def test_another_writers_commits_are_patched_in_after_a_signature_check(tmp_path: Path) -> None:
    mine, theirs = new_table(tmp_path, read_consistency_interval=timedelta(0)), new_table(tmp_path)
    await mine.open()
    await theirs.open()
    views = ViewCache(mine, max_rows=100)
    await mine.add(rows("u", ["alpha", "beta", "gamma", "delta"]))
    first = await views.get("u")
    assert first is not None
    reads = counting(mine)

    # Another namespace: the view cannot know what the commit touched, so it checks; nothing changed.
    await theirs.add(rows("other", ["not ours"]))
    second = await views.get("u")
    assert second is first and reads == ["check a namespace view"]
    assert await views.get("u") is first and reads == ["check a namespace view"]  # checked once per version

    # Their add to this namespace: only the new row is read whole.
    reads.clear()
    added = rows("u", ["epsilon"])
    await theirs.add(added)
    third = await views.get("u")
    assert third is not None and sorted(r["text"] for r in third.rows) == ["alpha", "beta", "delta", "epsilon", "gamma"]
    assert reads == ["check a namespace view", "patch a namespace view"]
    new_id = added.column("id")[0].as_py()
    assert np.array_equal(third.vectors[third.index[new_id]], added.column("vector").to_numpy(zero_copy_only=False)[0])

    # Their delete: the row leaves the view.
    await theirs.delete("u", [new_id])
    fourth = await views.get("u")
    assert fourth is not None and new_id not in fourth.index and len(fourth) == 4

    # Their rewrite of a row (a new revision): the view holds the new text.
    stored = await theirs.rows_by_id("u", [fourth.rows[0]["id"]])
    row = {**next(iter(stored.values())), "text": "alpha, reworded"}
    assert (await theirs.rewrite(theirs.whole_rows([row]))).landed
    fifth = await views.get("u")
    assert fifth is not None and fifth.row(fifth.index[row["id"]])["text"] == "alpha, reworded"

    # A compaction rewrites files, not rows: checked, nothing re-read.
    reads.clear()
    await theirs.handle.optimize()
    assert await views.get("u") is fifth and reads == ["check a namespace view"]
    assert views.reloads == 1  # the first load only


async def test_a_mostly_rewritten_namespace_is_reloaded_whole(tmp_path: Path) -> None:
    mine, theirs = new_table(tmp_path, read_consistency_interval=timedelta(0)), new_table(tmp_path)
    await mine.open()
    await theirs.open()
    views = ViewCache(mine, max_rows=100)
    await mine.add(rows("u", ["alpha", "beta"]))
    assert await views.get("u") is not None
    await theirs.add(rows("u", ["gamma", "delta", "epsilon"]))
    reads = counting(mine)
    view = await views.get("u")
    assert view is not None and len(view) == 5
    assert reads == ["check a namespace view", "load a namespace view"] and views.reloads == 2


async def test_a_view_made_stale_by_another_writer_survives_our_own_next_commit(tmp_path: Path) -> None:
    # A worker process whose neighbours write all the time must not reload on every own write.
    mine, theirs = new_table(tmp_path, read_consistency_interval=timedelta(0)), new_table(tmp_path)
    await mine.open()
    await theirs.open()
    views = ViewCache(mine, max_rows=100)
    await mine.add(rows("u", ["alpha", "beta", "gamma"]))
    await views.get("u")
    for i in range(5):
        await theirs.add(rows("other", [f"their {i}"]))
        await mine.add(rows("u", [f"mine {i}"]))
        view = await views.get("u")
        assert view is not None and f"mine {i}" in {r["text"] for r in view.rows}
    assert views.reloads == 1 and views.refreshes == 5


async def test_a_failed_commit_drops_the_namespace_view(table: MemoryTable) -> None:
    import pyarrow as pa
    import pytest

    from memory_retrievers import StorageError

    views = ViewCache(table, max_rows=100)
    await table.add(rows("u", ["alpha"]))
    await views.get("u")
    with pytest.raises(StorageError):
        await table.add(pa.table({"namespace": ["u"], "broken": [1]}))
    assert views.cached("u") is None


async def test_large_namespaces_get_no_view_and_views_stay_bounded(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=3)
    await table.add(rows("big", [f"row {i}" for i in range(4)]))
    assert await views.get("big") is None
    for i in range(6):
        await table.add(rows(f"ns{i}", [f"a {i}", f"b {i}", f"c {i}"]))
    for i in range(6):
        assert await views.get(f"ns{i}") is not None
    held = [views.cached(f"ns{i}") for i in range(6)]
    assert sum(len(v) for v in held if v is not None) <= 4 * 3  # oldest views evicted
    assert views.cached("ns5") is not None


async def test_a_namespace_over_the_limit_is_read_once_then_counted_once_per_recheck_interval(
    table: MemoryTable, monkeypatch: Any
) -> None:
    from memory_retrievers.storage import views as views_module

    outgrown: list[str] = []
    views = ViewCache(table, max_rows=3, on_outgrown=outgrown.append)
    await table.add(rows("big", [f"row {i}" for i in range(5)]))
    counts: list[str] = []
    loads: list[int | None] = []
    original, original_rows = table.count_namespace, table.rows

    async def counted(namespace: str) -> int:
        counts.append(namespace)
        return await original(namespace)

    async def read(where: str, columns: Any, **kwargs: Any) -> Any:
        if kwargs.get("action") == "load a namespace view":
            loads.append(kwargs.get("limit"))
        return await original_rows(where, columns, **kwargs)

    monkeypatch.setattr(table, "count_namespace", counted)
    monkeypatch.setattr(table, "rows", read)
    for _ in range(5):
        assert await views.get("big") is None
    # Read once (never more than one row past the limit), no count, not once per recall.
    assert loads == [4] and counts == [] and outgrown == ["big"]
    # Past the interval a namespace known to be large is counted, not read again.
    monkeypatch.setattr(views_module, "_OUTGROWN_RECHECK_S", 0.0)
    assert await views.get("big") is None
    assert loads == [4] and counts == ["big"] and outgrown == ["big", "big"]
    # Shrunk below the limit: it gets its view.
    first = (await original_rows("namespace = 'big'", ["id"], limit=2)).column("id").to_pylist()
    await table.delete("big", first)
    view = await views.get("big")
    assert view is not None and len(view) == 3 and counts == ["big", "big"] and loads == [4, 4]


async def test_a_namespace_exactly_at_the_limit_gets_a_whole_view(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=3)
    await table.add(rows("u", ["a", "b", "c"]))
    view = await views.get("u")
    assert view is not None and sorted(r["text"] for r in view.rows) == ["a", "b", "c"]


async def test_views_disabled_with_zero_rows(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=0)
    await table.add(rows("u", ["alpha"]))
    assert await views.get("u") is None


async def test_views_hold_at_most_total_rows_dropping_the_least_recently_used(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=3, total_rows=6)
    for name in ("a", "b", "c"):
        await table.add(rows(name, [f"{name} 1", f"{name} 2", f"{name} 3"]))
    await views.get("a")
    await views.get("b")
    assert views.rows_held == 6
    await views.get("a")  # a is now the most recently used
    await views.get("c")
    assert views.rows_held == 6 and views.cached("b") is None
    assert views.cached("a") is not None and views.cached("c") is not None


async def test_write_counters_stay_bounded_over_many_namespaces(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=10)
    await table.add(rows("seed", ["x"]))
    before = len(views._epochs)
    for i in range(50):
        await table.add(rows(f"tenant-{i}", [f"t {i}"]))
    assert len(views._epochs) == before  # fixed buckets, not one entry per namespace ever written


def test_the_total_view_ceiling_must_hold_one_view() -> None:
    import pytest

    from memory_retrievers import ConfigError, StoreConfig

    with pytest.raises(ConfigError, match=r"recall_view_total_rows .* must be at least recall_view_max_rows"):
        StoreConfig(recall_view_max_rows=1000, recall_view_total_rows=500)
    assert StoreConfig().recall_view_total_rows == 100_000


async def test_the_entity_cache_is_bounded(table: MemoryTable, monkeypatch: Any) -> None:
    from memory_retrievers.storage import search
    from memory_retrievers.storage.access import AccessLog

    monkeypatch.setattr(search, "ENTITY_CACHE_NAMESPACES", 5)
    searcher = search.Searcher(table, AccessLog(table))
    for i in range(12):
        await searcher.has_entities(f"tenant-{i}")
    assert len(searcher._entity_cache) == 5 and "tenant-11" in searcher._entity_cache


async def test_rewritten_and_deleted_rows_become_tombstones_until_a_quarter_of_the_view(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=100)
    added = rows("u", [f"memory {i}" for i in range(8)])
    await table.add(added)
    base = await views.get("u")
    assert base is not None and len(base) == 8
    ids = base.ids[:]
    stored = await table.rows_by_id("u", [ids[0]])
    assert (await table.rewrite(table.whole_rows([{**stored[ids[0]], "text": "memory 0, reworded"}]))).landed
    view = await views.get("u")
    assert view is not None and len(view) == 8 and view.dead == 1
    assert view.index[ids[0]] == 8 and view.row(8)["text"] == "memory 0, reworded"
    assert not view.mask(MemoryFilter())[0] and view.mask(MemoryFilter())[8]  # the tombstone never matches
    assert view.top_by_vector(view.vectors[8], view.mask(MemoryFilter()), 1)[0] == [8]
    assert sorted(r["text"] for r in view.rows) == sorted(["memory 0, reworded", *(f"memory {i}" for i in range(1, 8))])
    await table.delete("u", [ids[1]])
    view = await views.get("u")
    assert view is not None and len(view) == 7 and view.dead == 2 and ids[1] not in view.index
    await table.delete("u", [ids[2]])  # a third tombstone: 3 * 4 > 9 rows, rebuilt compact
    view = await views.get("u")
    assert view is not None and len(view) == 6 and view.dead == 0 and len(view.ids) == 6


async def test_memories_are_read_right_across_the_chunks_own_appends_add(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=100)
    await table.add(rows("u", ["alpha", "beta", "gamma"]))
    assert await views.get("u") is not None
    for text in ["delta", "epsilon", "zeta"]:
        await table.add(rows("u", [text]))
        view = await views.get("u")
    assert view is not None and view.table.column("id").num_chunks == 4  # patched in, one chunk each
    order = [5, 0, 3, 4, 1, 2, 3]  # unsorted, repeated, from every chunk
    texts = [m.text for m in view.memories(order)]
    assert texts == [view.row(i)["text"] for i in order]
    assert texts[0] == "zeta" and texts[2] == "delta" and set(texts) == {r["text"] for r in view.rows}
    assert [m.id for m in view.memories(order)] == [view.ids[i] for i in order]


async def test_known_changes_patched_in_one_pass_equal_patching_them_in_turn(table: MemoryTable) -> None:
    from memory_retrievers.storage.views import _combined

    first = rows("u", ["alpha", "beta"])
    ids = first.column("id").to_pylist()
    fresh = rows("u", ["alpha again"])
    at = fresh.schema.get_field_index("id")
    rewritten = fresh.set_column(at, fresh.schema.field(at), first.column("id").slice(0, 1))
    later = rows("u", ["gamma"])
    known = [(set(ids), first), ({ids[0]}, rewritten), (set(later.column("id").to_pylist()), later)]
    ((gone, joined),) = _combined(known)
    assert gone == set(ids) | set(later.column("id").to_pylist())
    assert joined is not None and joined.column("text").to_pylist() == ["beta", "alpha again", "gamma"]
    # A delete after them removes their rows too, and the ids stay gone.
    ((gone, joined),) = _combined([*known, ({ids[1]}, None)])
    assert joined is not None and joined.column("text").to_pylist() == ["alpha again", "gamma"]
    assert ids[1] in gone


async def test_a_chat_turns_two_commits_patch_the_view_once(table: MemoryTable, monkeypatch: Any) -> None:
    from memory_retrievers.storage.view import NamespaceView

    views = ViewCache(table, max_rows=100)
    await table.add(rows("u", ["alpha", "beta"]))
    assert await views.get("u") is not None
    first = rows("u", ["gamma"])
    await table.add(first)
    await table.add(rows("u", ["delta"]))
    patches: list[int] = []
    original = NamespaceView.patched

    def counted(self: NamespaceView, touched: set[str], fresh: Any, version: int) -> NamespaceView:
        patches.append(len(touched))
        return original(self, touched, fresh, version)

    monkeypatch.setattr(NamespaceView, "patched", counted)
    view = await views.get("u")
    assert view is not None and patches == [2]
    assert sorted(r["text"] for r in view.rows) == ["alpha", "beta", "delta", "gamma"]
