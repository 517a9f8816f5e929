"""Opening the table in this process or in the engine process, and the deadline of every LanceDB call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

import memory_retrievers.runtime.fork as _fork
from memory_retrievers.errors import ConfigError, StorageError
from memory_retrievers.storage.caller import CallerTable, missing_columns
from memory_retrievers.storage.connect import CacheSizes, CloudAccess, is_uri, open_lancedb_table
from memory_retrievers.storage.remote import RemoteTable, warn_engine
from memory_retrievers.storage.schema import META_SCHEMA_VERSION

__all__ = ["check_caller_schema", "connect_table", "make_folder", "open_caller", "within"]


def make_folder(uri: str) -> None:
    """Create a local store folder (a URI needs none).

    Raises:
        StorageError: The folder cannot be created.
    """
    if is_uri(uri):
        return
    try:
        Path(uri).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"cannot use {uri!r} as the store folder ({exc.strerror or exc}); pass a folder path "
            "that can be created or already is a folder"
        ) from exc


async def open_caller(caller: CallerTable, table_name: str, schema: pa.Schema) -> tuple[Any, pa.Schema, str]:
    """Open the store's table on the caller's connection or handle; its schema and URI.

    Raises:
        ConfigError: The table was not made for this store (the message names its missing columns).
        ForkedStoreError: This process was forked after LanceDB ran in its parent.
    """
    table, found, uri = await caller.open(table_name, schema)
    check_caller_schema(found, schema, f"table {table_name!r} at {uri!r}")
    return table, found, uri


def check_caller_schema(found: pa.Schema, expected: pa.Schema, where: str) -> None:
    """Refuse a caller's table this library did not create, naming what it lacks and the fix.

    A table with the store's schema version recorded is ours: it is checked (embedder, version)
    and migrated like any other, by the caller of this.
    """
    if META_SCHEMA_VERSION in (found.metadata or {}):
        return
    wrong = missing_columns(found, expected)
    detail = (
        f"its columns do not fit the store: {', '.join(wrong)}"
        if wrong
        else "it records no schema version or embedder, so its vectors cannot be checked against the store's"
    )
    raise ConfigError(
        f"{where} was not created by memory-retrievers: {detail}. Let the store create its table: "
        "MemoryStore(connection=db, table_name='<a new name>') (or create it with "
        "memory_retrievers.storage.schema.memory_schema(embedder.dimension, embedder.name))"
    )


T = TypeVar("T")


async def connect_table(
    uri: str,
    table_name: str,
    schema: pa.Schema,
    storage_options: Mapping[str, str] | None,
    consistency: timedelta | None,
    caches: CacheSizes | None,
    cloud: CloudAccess | None = None,
) -> tuple[Any, pa.Schema]:
    """Connect, open (or create) the table and read its schema."""
    # LanceDB's runtime came from the process this one was forked from, and is unsafe here even
    # for a new connection: a fresh engine process does the LanceDB work.
    engine = _fork.lancedb_inherited()
    if not engine:
        _fork.note_lancedb()
    try:
        if engine:
            table = await RemoteTable.open(uri, table_name, schema, storage_options, consistency, caches, cloud)
        else:
            table = await open_lancedb_table(uri, table_name, schema, storage_options, consistency, caches, cloud)
    except Exception as exc:
        if cloud is None or cloud.scrub(str(exc)) == str(exc):
            raise
        # LanceDB's message quoted the API key (here or in the engine process, which sends its
        # message back): the error (and its chain) must not carry it on.
        raise RuntimeError(cloud.scrub(str(exc))) from None
    if engine:
        warn_engine(uri)
    return table, await table.schema()


async def within(
    awaitable: Awaitable[T], timeout_s: float | None, action: str, uri: str, *, setting: str = "storage_timeout"
) -> T:
    """Await one LanceDB call within the store's deadline (``StoreConfig.storage_timeout``, or ``setting``).

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
        if setting == "storage_timeout":
            why, after = (
                "does not answer",
                "a write given up on may still land: check with get() before writing it again",
            )
        else:
            why, after = "does not answer, or the step needs longer", "the data is intact; the next run starts it over"
        raise StorageError(
            f"LanceDB did not {action} within {timeout_s:g} s (StoreConfig.{setting}): the storage at {uri!r} "
            f"{why}. Check that it is reachable, or raise {setting} ({after})"
        ) from None
