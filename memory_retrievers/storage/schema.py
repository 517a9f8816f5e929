"""The table's Arrow schema, the metadata recorded with it, and row <-> :class:`Memory` conversion."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from memory_retrievers.models import Memory, MemoryKind
from memory_retrievers.storage.fields import FIELDS, SCALAR_COLUMNS

__all__ = [
    "INTERNAL_COLUMNS",
    "META_DIMENSION",
    "META_EMBEDDER",
    "META_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "SCALAR_COLUMNS",
    "SEARCHED_CHARS",
    "memory_schema",
    "row_to_memory",
    "rows_to_memories",
    "search_text",
    "to_arrow",
    "vectors_of",
]

SCHEMA_VERSION = 1
META_SCHEMA_VERSION = b"memory_retrievers.schema_version"
META_EMBEDDER = b"memory_retrievers.embedder"
META_DIMENSION = b"memory_retrievers.dimension"

#: Columns that are storage internals, never part of a :class:`Memory`.
INTERNAL_COLUMNS = tuple(f.name for f in FIELDS if not f.public)


def memory_schema(dimension: int, embedder_name: str) -> pa.Schema:
    """The schema of a memory table (from the field registry), with schema version and embedder as metadata."""
    fields = [
        pa.field(f.name, f.type if f.type is not None else pa.list_(pa.float32(), dimension), nullable=f.nullable)
        for f in FIELDS
    ]
    meta = {
        META_SCHEMA_VERSION: str(SCHEMA_VERSION).encode(),
        META_EMBEDDER: embedder_name.encode("utf-8"),
        META_DIMENSION: str(dimension).encode(),
    }
    return pa.schema(fields, metadata=meta)


#: The opening of a memory's text that is embedded and put in its ``search_text`` (a longer text is
#: stored whole: see ``StoreConfig.max_text_chars``). The default model reads only its first 256 word
#: pieces, and a 77,000-character reply searched whole made the text-with-context index several
#: times slower to search; the chat adapters cut their searched text here before it was the store's rule.
SEARCHED_CHARS = 32_000


def search_text(text: str, context: str | None) -> str:
    """What the context full-text index sees: the memory's text (its first :data:`SEARCHED_CHARS`) and its context."""
    text = text[:SEARCHED_CHARS]
    return f"{text}\n{context}" if context else text


def to_arrow(rows: Sequence[Mapping[str, Any]], vectors: np.ndarray, schema: pa.Schema) -> pa.Table:
    """Build an Arrow table from row dicts (all columns but ``vector``) and a vector matrix.

    Every row gets a fresh random ``stamp`` (whatever the dict holds): each write of a row is then
    told apart from every earlier one, even when it carries the same revision and timestamps.
    """
    columns: dict[str, Any] = {}
    for field in schema:
        if field.name == "stamp":
            # os.urandom, not a seeded generator: a forked child would repeat its parent's draws.
            columns["stamp"] = pa.array(np.frombuffer(os.urandom(8 * len(rows)), dtype=np.int64), type=pa.int64())
        elif field.name == "vector":
            dim = field.type.list_size
            flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel(), type=pa.float32())
            columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, dim)
        else:
            columns[field.name] = pa.array([r.get(field.name) for r in rows], type=field.type)
    return pa.Table.from_pydict(columns, schema=schema)


def row_to_memory(row: Mapping[str, Any], vector: Sequence[float] | None = None) -> Memory:
    """One :class:`Memory` from a row dict (any subset of columns containing ``id``).

    Keys starting with ``_`` (search scores) and internal columns are ignored.
    """
    fields = {k: v for k, v in row.items() if not k.startswith("_") and k not in INTERNAL_COLUMNS}
    fields.pop("vector", None)
    return Memory(
        **{k: v for k, v in fields.items() if k not in _CONVERTED},
        kind=MemoryKind(fields.get("kind", MemoryKind.FACT.value)),
        tags=tuple(fields.get("tags") or ()),
        entities=tuple(fields.get("entities") or ()),
        links=tuple(fields.get("links") or ()),
        metadata=json.loads(fields.get("metadata") or "{}"),
        vector=tuple(float(x) for x in vector) if vector is not None else None,
    )


_CONVERTED = frozenset({"kind", "tags", "entities", "links", "metadata"})


def rows_to_memories(table: pa.Table) -> list[Memory]:
    """Convert fetched rows (any subset of columns containing ``id``) to :class:`Memory` records."""
    return [row_to_memory(row, row.get("vector")) for row in table.to_pylist()]


def vectors_of(table: pa.Table, column: str = "vector") -> np.ndarray:
    """The fixed-size-list vector column as a ``(rows, dim)`` float32 matrix, without Python lists."""
    chunked = table.column(column)
    if table.num_rows == 0:
        return np.zeros((0, chunked.type.list_size), dtype=np.float32)
    array = chunked.combine_chunks()
    return np.asarray(array.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(
        table.num_rows, array.type.list_size
    )
