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
    assert reads == ["patch a namespace view"]  # the new row only, not the whole namespace
    await table.delete("u", [added.column("id")[0].as_py()])
    after = await views.get("u")
    assert after is not None and [r["text"] for r in after.rows] == ["alpha"] and after.vectors.shape[0] == 1
    await table.delete("u", None)  # forget: nothing says which rows went, so the view is dropped
    assert views.cached("u") is None


async def test_a_commit_by_another_handle_rebuilds_the_view(tmp_path: Path) -> None:
    mine, theirs = new_table(tmp_path, read_consistency_interval=timedelta(0)), new_table(tmp_path)
    await mine.open()
    await theirs.open()
    views = ViewCache(mine, max_rows=100)
    await mine.add(rows("u", ["alpha"]))
    first = await views.get("u")
    await theirs.add(rows("other", ["not ours"]))  # even another namespace: we cannot know what it touched
    second = await views.get("u")
    assert second is not first and second is not None and len(second) == 1


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


async def test_views_disabled_with_zero_rows(table: MemoryTable) -> None:
    views = ViewCache(table, max_rows=0)
    await table.add(rows("u", ["alpha"]))
    assert await views.get("u") is None
