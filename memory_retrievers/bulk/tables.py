"""The LanceDB tables behind a store, as a Ray task reopens them: one per shard of a sharded store.

A task opens its own :class:`~memory_retrievers.MemoryStore` (a process of its own, its own LanceDB
handle and write queue) from a plain dict that pickles: the table's location and name, the store's
config and the storage options the caller gives. A :class:`~memory_retrievers.ShardedMemoryStore`
is not one table: its tasks open the shard they work on, a plain store on that shard's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_retrievers.errors import InvalidInputError

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["check_storage_options", "open_table", "table_openers"]


def table_openers(store: MemoryStore, storage_options: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """What reopens each table of ``store`` in a Ray task, in shard order (one entry for a plain store).

    Args:
        store: A store or a sharded store.
        storage_options: Those the store was opened with (object storage credentials); ``None``
            reopens with the environment's.

    Returns:
        One dict per table: ``uri``, ``table_name``, ``config``, ``storage_options`` and ``cloud``
        (the :class:`~memory_retrievers.storage.connect.CloudAccess` of a ``db://`` table, whose
        repr masks the API key, or ``None``).
    """
    check_storage_options(storage_options)
    common = {
        "config": store.config.model_dump(),
        "storage_options": dict(storage_options) if storage_options else None,
    }
    # Each table's own name (an open store given as a shard may use another than the sharded
    # store's) and, for a db:// table, its key, region and host: a task reopening it without them
    # is refused by LanceDB.
    return [
        {"uri": _absolute(where.uri), "table_name": where.table_name, "cloud": where.cloud, **common}
        for where in store.table_locations()
    ]


def check_storage_options(storage_options: Mapping[str, str] | None) -> None:
    """Refuse options that are not a dict of str to str (Lance's; a bad value would fail in a Ray task).

    Raises:
        InvalidInputError: Naming the argument, never quoting its values (they hold credentials).
    """
    if storage_options is None:
        return
    if not isinstance(storage_options, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in storage_options.items()
    ):
        raise InvalidInputError(
            "storage_options must be a dict of str to str (e.g. {'aws_region': 'eu-west-1'}), "
            f"got a {type(storage_options).__name__}"
        )


def _absolute(location: str) -> str:
    """A local folder as an absolute path (a Ray worker need not share this process's working directory)."""
    return location if "://" in location else str(Path(location).resolve())


def open_table(opener: Mapping[str, Any], embedder: Any) -> MemoryStore:
    """The store one of :func:`table_openers`' entries describes, opened with ``embedder`` (in a Ray task)."""
    from memory_retrievers.store.memory_store import MemoryStore

    return MemoryStore(
        opener["uri"],
        table_name=opener["table_name"],
        embedder=embedder,
        config=opener["config"],
        storage_options=opener["storage_options"],
        **(opener["cloud"].connect_kwargs() if opener.get("cloud") is not None else {}),
    )
