"""What opening a table checks and upgrades: that it is ours and of our model, and its columns.

Columns added by later releases (see ``added_sql`` in :mod:`memory_retrievers.storage.fields`) are added to
an older table when it is opened (additive migrations only: one LanceDB commit, existing rows get
the column's default). A table of a *newer* schema version, another embedder, or not written by
memory-retrievers is refused with an error that says what to do.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

from memory_retrievers.errors import EmbedderMismatchError, SchemaMismatchError, StorageError
from memory_retrievers.storage.fields import FIELDS
from memory_retrievers.storage.schema import META_DIMENSION, META_EMBEDDER, META_SCHEMA_VERSION, SCHEMA_VERSION

__all__ = ["add_missing_columns", "check_schema", "storage_error"]

logger = logging.getLogger(__name__)


def storage_error(action: str, exc: BaseException) -> StorageError:
    """The error for a failed LanceDB call, naming what the store was doing."""
    return StorageError(f"LanceDB could not {action}: {exc}")


async def add_missing_columns(table: Any, found: pa.Schema, where: str) -> None:
    """Add the columns a table written by an older release lacks (additive migrations only)."""
    missing = {f.name: f.added_sql for f in FIELDS if f.name not in found.names and f.added_sql is not None}
    if not missing:
        return
    try:
        await table.add_columns(missing)
    except Exception as exc:
        # Another process may have migrated the table at the same moment: fine if the columns are there.
        if set(missing) - set((await table.schema()).names):
            raise storage_error(
                f"add the column(s) {sorted(missing)} that this release needs to {where} (it was written by an "
                "older memory-retrievers; opening it once with write access migrates it)",
                exc,
            ) from exc
    logger.info("memory-retrievers: added column(s) %s to %s", sorted(missing), where)


def check_schema(found: pa.Schema, expected: pa.Schema, where: str) -> None:
    """Refuse a table of another schema version or embedding model (vectors of two models never mix).

    Raises:
        SchemaMismatchError: Not ours, or another schema version.
        EmbedderMismatchError: Another embedder (name or dimension); it is also a
            ``DimensionMismatchError``, so code catching either keeps working.
    """
    meta = found.metadata or {}
    want = expected.metadata or {}
    version = meta.get(META_SCHEMA_VERSION)
    if version is None:
        raise SchemaMismatchError(
            f"{where} was not created by memory-retrievers (no schema version recorded); use another table_name or path"
        )
    if int(version) != SCHEMA_VERSION:
        raise SchemaMismatchError(
            f"{where} has schema version {int(version)}, this memory-retrievers reads version {SCHEMA_VERSION}; "
            + (
                "upgrade memory-retrievers"
                if int(version) > SCHEMA_VERSION
                else "export it with the older version (store.list) and re-import"
            )
        )
    dim, name = int(meta.get(META_DIMENSION, b"0")), meta.get(META_EMBEDDER, b"").decode("utf-8")
    want_dim, want_name = int(want[META_DIMENSION]), want[META_EMBEDDER].decode("utf-8")
    if dim != want_dim or name != want_name:
        raise EmbedderMismatchError(
            f"{where} was written with embedder {name!r} (dimension {dim}), but this store uses {want_name!r} "
            f"(dimension {want_dim}); pass the original embedder, or use a new table_name/path for the new model "
            "(vectors of two models do not mix)"
        )
