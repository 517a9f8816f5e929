"""Opening the LanceDB table: in this process, or in the engine process when fork makes this one unsafe.

Both :class:`~memory_retrievers.storage.table.MemoryTable` (in-process) and the engine
(``storage.engine``, for forked children, see ``memory_retrievers.runtime.fork``) open a table with
:func:`open_lancedb_table`, so they create, find and refuse tables by the same rules.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from memory_retrievers.errors import ConfigError, StorageError

__all__ = ["CacheSizes", "CloudAccess", "cloud_access", "create_or_open", "is_uri", "open_lancedb_table"]


@dataclass(frozen=True)
class CacheSizes:
    """Ceilings of LanceDB's caches for one connection (``None``: LanceDB's own, 6 GiB and 1 GiB)."""

    index_bytes: int | None = None
    metadata_bytes: int | None = None


@dataclass(frozen=True)
class CloudAccess:
    """How to reach LanceDB Cloud or Enterprise (``db://`` URIs): passed to ``lancedb.connect_async``.

    The API key never appears in this object's repr, nor in the store's repr or error messages
    (:meth:`scrub`). The object itself pickles only to reach the private engine process of a
    forked child (``storage.remote``); a store refuses to be pickled at all.

    Attributes:
        api_key: The LanceDB Cloud API key (``None``: LanceDB refuses to connect to ``db://``).
        region: The Cloud region (``None``: LanceDB's default, ``us-east-1``).
        host_override: The URL of a LanceDB Enterprise deployment, instead of LanceDB Cloud's.
    """

    api_key: str | None = field(default=None, repr=False)
    region: str | None = None
    host_override: str | None = None

    def __repr__(self) -> str:
        key = "None" if self.api_key is None else "'***'"
        return f"CloudAccess(api_key={key}, region={self.region!r}, host_override={self.host_override!r})"

    def connect_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``lancedb.connect_async`` that were given (LanceDB's defaults otherwise)."""
        given = {"api_key": self.api_key, "region": self.region, "host_override": self.host_override}
        return {name: value for name, value in given.items() if value is not None}

    def identity(self) -> str:
        """A digest of the settings, never the key itself: tells two accounts' ``db://<name>`` apart.

        A database name is per LanceDB account, so the URI alone does not name one database.
        """
        given = "\0".join(str(value) for value in (self.api_key, self.region, self.host_override))
        return hashlib.sha256(given.encode("utf-8")).hexdigest()[:32]

    def scrub(self, text: str) -> str:
        """``text`` with the API key masked (error messages may quote what the client sent)."""
        return text.replace(self.api_key, "***") if self.api_key else text


def cloud_access(
    uri: str | None, *, api_key: str | None, region: str | None, host_override: str | None
) -> CloudAccess | None:
    """The Cloud settings given with a store's ``uri`` (``None`` when none was given).

    Raises:
        ConfigError: A setting that is not a non-empty string, or settings given with a URI that is not
            ``db://`` (LanceDB would ignore them: the store would silently not be the one meant).
    """
    given = {"api_key": api_key, "region": region, "host_override": host_override}
    for name, value in given.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            shown = "a value that is not a non-empty string" if name == "api_key" else repr(value)
            raise ConfigError(f"{name} must be a non-empty string or None, got {shown}")
    if all(value is None for value in given.values()):
        return None
    if uri is None or not str(uri).startswith("db://"):
        names = ", ".join(name for name, value in given.items() if value is not None)
        raise ConfigError(
            f"{names} only apply to LanceDB Cloud or Enterprise: pass a 'db://<database>' URI with them, "
            f"not {'the default local folder' if uri is None else repr(str(uri))} (local folders and s3://... "
            "take storage_options instead)"
        )
    return CloudAccess(api_key=api_key, region=region, host_override=host_override)


def is_uri(value: str) -> bool:
    """Whether a store location is a URI (``s3://…``, ``memory://``) rather than a local folder."""
    return "://" in value


async def open_lancedb_table(
    uri: str,
    table_name: str,
    schema: pa.Schema,
    storage_options: Mapping[str, str] | None,
    read_consistency_interval: timedelta | None,
    caches: CacheSizes | None = None,
    cloud: CloudAccess | None = None,
) -> Any:
    """Connect and open the table (a LanceDB ``AsyncTable``); create it only where nothing is stored yet.

    ``cloud`` carries the API key, region and host of LanceDB Cloud or Enterprise (``db://`` URIs).

    Raises:
        StorageError: A local table folder holds data but no readable version.
        Exception: Whatever LanceDB raised (the caller names the action).
    """
    import lancedb  # here, not at import: the engine's client side must not need it

    session = None
    if caches is not None and (caches.index_bytes is not None or caches.metadata_bytes is not None):
        session = lancedb.Session(
            index_cache_size_bytes=caches.index_bytes, metadata_cache_size_bytes=caches.metadata_bytes
        )
    db = await lancedb.connect_async(
        uri,
        storage_options=dict(storage_options) if storage_options else None,
        read_consistency_interval=read_consistency_interval,
        session=session,
        **(cloud.connect_kwargs() if cloud is not None else {}),
    )
    for attempt in range(3):
        try:
            return await db.open_table(table_name)
        except ValueError:  # not found
            if _damaged_folder(uri, table_name) is None:
                return await create_or_open(db, table_name, schema)
            await asyncio.sleep(0.05 * (attempt + 1))  # another process may be half-way through creating it
    folder = _damaged_folder(uri, table_name)
    raise StorageError(
        f"{folder} holds table data but no readable version (its _versions folder is missing or damaged); "
        "opening it would start an empty store over the memories it holds. Restore the folder from a backup, "
        "or move it away to start a new store"
    )


async def create_or_open(db: Any, table_name: str, schema: pa.Schema) -> Any:
    """Create the table, or open it when another process created it meanwhile.

    ``exist_ok`` covers a table created with our schema; once its first opener has recorded the
    primary key (field metadata, ``keys.ensure_primary_key``) LanceDB finds the schemas unequal
    and raises instead (issue 27 item 3: 1-2 of 4-6 processes opening a new store at once failed
    with "Provided schema does not match existing table schema"). The table found is opened and
    its schema checked by the caller, as any existing table's, metadata aside.
    """
    try:
        # exist_ok: another process may be creating it at this moment
        return await db.create_table(table_name, schema=schema, exist_ok=True)
    except Exception as created:
        try:
            return await db.open_table(table_name)
        except Exception:
            raise created from None


def _damaged_folder(uri: str, table_name: str) -> Path | None:
    """A local table folder that has content although LanceDB found no table there."""
    if is_uri(uri):
        return None  # object stores: LanceDB's own view is all there is (see docs/explanation/reliability.md)
    folder = Path(uri) / f"{table_name}.lance"
    return folder if folder.is_dir() and any(folder.iterdir()) else None
