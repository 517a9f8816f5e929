"""Fixtures for the storage components, used directly (not through the MemoryStore facade)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from memory_retrievers import HashEmbedder
from memory_retrievers.config import StoreConfig
from memory_retrievers.storage.fields import build_row
from memory_retrievers.storage.schema import memory_schema, search_text, to_arrow
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.validation import content_hash, validate_record

EMBEDDER = HashEmbedder(32)
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def new_table(path: Path, **kwargs: Any) -> MemoryTable:
    return MemoryTable(
        uri=str(path),
        table_name="memories",
        schema=memory_schema(EMBEDDER.dimension, EMBEDDER.name),
        storage_options=None,
        read_consistency_interval=kwargs.pop("read_consistency_interval", None),
    )


def rows(namespace: str, texts: Sequence[str], **fields: Any) -> pa.Table:
    """Arrow rows for ``texts`` as the write path would build them (hash-embedded)."""
    recs = [validate_record({"text": t, "namespace": namespace, **fields}, StoreConfig()) for t in texts]
    built = [build_row(r, content_hash(r["text"]), None, T0 + timedelta(seconds=i)) for i, r in enumerate(recs)]
    for row in built:
        row["search_text"] = search_text(row["text"], row["context"])
    return to_arrow(built, EMBEDDER.embed_documents(list(texts)), memory_schema(EMBEDDER.dimension, EMBEDDER.name))


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[MemoryTable]:
    t = new_table(tmp_path / "db")
    await t.open()
    yield t


@pytest.fixture
def make_rows() -> Callable[..., pa.Table]:
    return rows
