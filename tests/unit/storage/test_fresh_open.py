"""A process that finds the table created meanwhile by another opener opens it (issue 27 item 3 regression).

The first opener of a new store records ``(namespace, id)`` as the primary key (field metadata);
an opener that found no table a moment before then takes the create path, where LanceDB's
``create_table(exist_ok=True)`` refused the table as "Provided schema does not match existing
table schema". The multi-process version is tests/reliability/test_fresh_open_race.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import lancedb
import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.storage import connect
from memory_retrievers.storage.connect import open_lancedb_table
from memory_retrievers.storage.schema import memory_schema


def test_item3_an_opener_that_finds_the_table_created_meanwhile_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: the table exists with its key recorded, and the opener takes the create path."""
    store_dir = str(tmp_path / "store")
    MemoryStore(store_dir, embedder=HashEmbedder(32)).close()  # created, primary key recorded
    real_open = lancedb.AsyncConnection.open_table
    calls = {"n": 0}

    async def not_yet(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:  # what a racing opener saw a moment before the table appeared
            raise ValueError(f"Table '{name}' was not found")
        return await real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(lancedb.AsyncConnection, "open_table", not_yet)
    # The folder looked empty too (an object store has no folder to look at): the create path, not a retry.
    monkeypatch.setattr(connect, "_damaged_folder", lambda uri, name: None)
    schema = memory_schema(32, HashEmbedder(32).name)
    table = asyncio.run(open_lancedb_table(store_dir, "memories", schema, None, None))
    assert calls["n"] == 2  # it went through create_table and then opened the existing table
    assert asyncio.run(table.count_rows()) == 0
    monkeypatch.undo()
    with MemoryStore(store_dir, embedder=HashEmbedder(32)) as store:
        store.add("still a working store", namespace="n")
        assert store.count("n") == 1
