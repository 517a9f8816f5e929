"""The LanceDB edge: reads as Requests, named index kinds, and nothing past the table layer calling LanceDB."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import memory_retrievers
from memory_retrievers import StoreConfig
from memory_retrievers.filters import MemoryFilter, build_where
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.backend import INDEX_KINDS, Merge, Request, TableBackend, index_config
from memory_retrievers.storage.maintenance import Maintainer
from memory_retrievers.storage.table import MemoryTable

from .conftest import EMBEDDER, rows

STORAGE = Path(memory_retrievers.__file__).parent / "storage"


@pytest.mark.parametrize("name", ["search.py", "duplicates.py", "maintenance.py", "stats.py"])
def test_past_the_table_layer_nothing_calls_lancedb(name: str) -> None:
    tree = ast.parse((STORAGE / name).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in {"lancedb", "lance"}}, name
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    # The LanceDB handle and its query builders stay behind storage/backend.py and storage/table.py.
    assert not attributes & {"handle", "query", "nearest_to", "nearest_to_text", "list_indices", "merge_insert"}, name


async def test_requests_compile_filters_order_and_paging(table: MemoryTable) -> None:
    await table.add(rows("u", ["one", "two", "three", "four"]))
    await table.add(rows("v", ["other tenant"]))
    where = build_where("u", MemoryFilter())
    page = await table.search(Request(where, ["text"], limit=2, offset=1, order=(("created_at", False),)), "read")
    assert page.column("text").to_pylist() == ["three", "two"]
    everything = await table.search(Request(None, ["namespace"]), "read")
    assert sorted(set(everything.column("namespace").to_pylist())) == ["u", "v"]


async def test_requests_rank_by_vector_and_by_text(table: MemoryTable) -> None:
    Maintainer(table, StoreConfig(), AccessLog(table))  # builds the FTS indexes after the first write
    await table.add(rows("u", ["the cat sat on the mat", "dogs bark at night"]))
    where = build_where("u", MemoryFilter())
    query = np.asarray(EMBEDDER.embed_query("dogs bark at night"), dtype=np.float32)
    near = await table.search(Request(where, ["text", "_distance"], limit=1, vector=query), "vector")
    assert near.column("text").to_pylist() == ["dogs bark at night"]
    bm25 = await table.search(Request(where, ["text", "_score"], limit=5, text="cat", text_column="text"), "fts")
    assert bm25.column("text").to_pylist() == ["the cat sat on the mat"]


async def test_index_kinds_build_list_and_drop_through_the_backend(table: MemoryTable) -> None:
    await table.add(rows("u", ["alpha", "beta"]))
    backend = table.backend
    await backend.create_index("kind", "Bitmap")
    await backend.create_index("tags", "LabelList")
    listed = {(i.kind, i.columns) for i in await backend.indexes()}
    assert {("Bitmap", ("kind",)), ("LabelList", ("tags",))} <= listed
    assert "Bitmap:kind" in await table.refresh_indexes()
    (name,) = [n for n, _, column in await backend.listed_indexes() if column == "kind"]
    await backend.drop_index(name)
    assert "Bitmap:kind" not in await table.refresh_indexes()
    assert await backend.version() == await table.version() and (await backend.versions())


def test_index_kinds_are_checked() -> None:
    assert {type(index_config(k)).__name__ for k in INDEX_KINDS} == {"BTree", "Bitmap", "LabelList", "FTS", "HnswSq"}
    with pytest.raises(ValueError, match="unknown index kind 'IvfPq'"):
        index_config("IvfPq", "vector")


async def test_commits_go_through_the_backend_protocol(table: MemoryTable) -> None:
    backend: TableBackend = table.backend  # LanceBackend implements the protocol (mypy checks it)
    await backend.append(rows("u", ["one", "two"]))
    stored = (await table.rows(build_where("u", MemoryFilter()), ["id", "text"])).to_pylist()
    keep = next(r["id"] for r in stored if r["text"] == "one")
    whole = table.whole_rows(list((await table.rows_by_id("u", [keep])).values()))
    doomed = build_where("u", MemoryFilter(include_superseded=True), ids=[r["id"] for r in stored if r["id"] != keep])
    await backend.merge(whole, ["namespace", "id"], Merge(update_where=None, delete_where=doomed))
    await backend.checkout_latest()
    assert await backend.count(None) == 1 and await backend.count(f"id = '{keep}'") == 1
    await backend.delete(build_where("u", MemoryFilter(include_superseded=True)))
    await backend.checkout_latest()
    assert await backend.count(None) == 0
