"""The argument checks and call routing shared by the sharded store (``shards.py``) and its admin."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ConfigError
from .store import MemoryStore

__all__ = ["check_shards", "namespace_at"]


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
