"""The argument checks and call routing shared by the sharded store (``shards.py``) and its admin."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from memory_retrievers.errors import ConfigError
from memory_retrievers.storage.connect import cloud_access
from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["check_cloud", "check_shards", "namespace_at", "table_identity"]


def namespace_at(args: tuple[Any, ...], kwargs: Mapping[str, Any], position: int | None, name: str) -> Any:
    """The namespace a call names: its keyword, else its positional argument at ``position``."""
    if "namespace" in kwargs:
        return kwargs["namespace"]
    if position is not None and len(args) > position:
        return args[position]
    raise TypeError(f"{name}() missing required argument 'namespace'")


def check_shards(shards: Any, sharded: type) -> list[str | os.PathLike[str] | MemoryStore]:
    """The shards given, checked: a non-empty list of locations or open stores, none of them ``sharded``.

    Raises:
        ConfigError: Not such a list (the message names the bad item).
    """
    if isinstance(shards, (str, bytes, os.PathLike)) or not isinstance(shards, Sequence) or not shards:
        raise ConfigError(
            "shards must be a non-empty list of store locations (folders or URIs) or MemoryStore objects, "
            f"got {shards!r}"
        )
    for i, shard in enumerate(shards):
        if isinstance(shard, sharded):
            raise ConfigError(f"shards[{i}] is itself a ShardedMemoryStore; list its locations instead")
        if not isinstance(shard, (str, os.PathLike, MemoryStore)) or (isinstance(shard, str) and not shard.strip()):
            raise ConfigError(f"shards[{i}] must be a folder, a LanceDB URI or a MemoryStore, got {shard!r}")
    return list(shards)


def check_cloud(
    locations: Sequence[str], *, api_key: str | None, region: str | None, host_override: str | None
) -> dict[str, Any]:
    """The LanceDB Cloud settings given, checked now for the ``db://`` shards that take them (the others take none).

    Raises:
        ConfigError: A setting that is not a non-empty string, or settings while no shard is ``db://``.
    """
    given = {"api_key": api_key, "region": region, "host_override": host_override}
    if all(value is None for value in given.values()):
        return {}
    cloud_access(next((loc for loc in locations if loc.startswith("db://")), locations[0]), **given)
    return {name: value for name, value in given.items() if value is not None}


def table_identity(location: str, table: str) -> tuple[str, str]:
    """One spelling of the table ``table`` at ``location``, to tell whether two shards are the same table.

    A local folder is resolved (``shard-0``, ``./shard-0/`` and its absolute path are one folder);
    a URI loses its trailing slashes. Comparing the strings as given took one table for two, and
    a reshard onto it then forgot what it had just copied.
    """
    if "://" in location:
        return location.rstrip("/"), table
    return os.path.realpath(os.path.expanduser(location)), table
