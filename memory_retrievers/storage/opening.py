"""Opening the table in this process or in the engine process, and the deadline of every LanceDB call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

import pyarrow as pa

from .. import _fork
from ..errors import StorageError
from .connect import CacheSizes, open_lancedb_table
from .remote import RemoteTable, warn_engine

__all__ = ["connect_table", "within"]

T = TypeVar("T")


async def connect_table(
    uri: str,
    table_name: str,
    schema: pa.Schema,
    storage_options: Mapping[str, str] | None,
    consistency: timedelta | None,
    caches: CacheSizes | None,
) -> tuple[Any, pa.Schema]:
    """Connect, open (or create) the table and read its schema."""
    if _fork.lancedb_inherited():
        # LanceDB's runtime came from the process this one was forked from, and is unsafe
        # here even for a new connection: a fresh engine process does the LanceDB work.
        table = await RemoteTable.open(uri, table_name, schema, storage_options, consistency, caches)
        warn_engine(uri)
    else:
        _fork.note_lancedb()
        table = await open_lancedb_table(uri, table_name, schema, storage_options, consistency, caches)
    return table, await table.schema()


async def within(awaitable: Awaitable[T], timeout_s: float | None, action: str, uri: str) -> T:
    """Await one LanceDB call within the store's deadline (``StoreConfig.storage_timeout``).

    Object-store clients retry an unanswered request for minutes (a server that accepts
    connections and never answers blocked opening a store for more than 190 s, issue 27 item 19).

    Raises:
        StorageError: The deadline passed; the message names it and the action.
    """
    if timeout_s is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        raise StorageError(
            f"LanceDB did not {action} within {timeout_s:g} s (StoreConfig.storage_timeout): the storage at {uri!r} "
            "does not answer. Check that it is reachable, or raise storage_timeout (a write given up on may still "
            "land: check with get() before writing it again)"
        ) from None
