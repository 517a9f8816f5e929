"""Resharding: moving every namespace whose shard changes to another sharded store, through export/restore."""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.errors import ConfigError, InvalidInputError, MemoryRetrieversError
from memory_retrievers.shards.calls import table_identity
from memory_retrievers.shards.lease import Leases, TableLease, lease_ttl
from memory_retrievers.shards.sharded_store import ShardedMemoryStore
from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["ReshardResult", "areshard", "reshard"]

#: Records per export page and restore commit while resharding.
_PAGE = 1000


@dataclass(frozen=True)
class ReshardResult:
    """What :func:`reshard` did.

    Attributes:
        moved: Namespaces copied to their new shard and then forgotten in the old one, sorted.
        stayed: Namespaces left where they are: their shard is the same table in both stores, or
            the source's shard for them holds none of their memories (nothing to move).
        memories: Memories copied (superseded ones included).
    """

    moved: tuple[str, ...]
    stayed: tuple[str, ...]
    memories: int


async def areshard(source: MemoryStore, target: ShardedMemoryStore, *, purge: bool = False) -> ReshardResult:
    """Async twin of :func:`reshard`."""
    if not isinstance(source, MemoryStore) or not isinstance(target, ShardedMemoryStore):
        raise ConfigError(
            "reshard(source, target) takes a MemoryStore or ShardedMemoryStore as source and a ShardedMemoryStore "
            f"as target, got {type(source).__name__} and {type(target).__name__}"
        )
    if source.embedder.name != target.embedder.name:
        raise ConfigError(
            f"source and target use different embedders ({source.embedder.name!r}, {target.embedder.name!r}): "
            "reshard copies vectors as they are; re-embed with a restore into a new store instead"
        )
    if not isinstance(purge, bool):
        raise InvalidInputError(f"purge must be True or False, got {purge!r}")
    async with _leases(source, target) as leases:
        return await _run(source, target, purge, leases)


def _leases(source: MemoryStore, target: ShardedMemoryStore) -> Leases:
    """The leases of a run: one per table of either store, each table once, in one order for every run."""
    tables = {table_identity(t.uri, t.table_name): t for s in (source, target) for t in s.table_locations()}
    ttl = lease_ttl([source.config.storage_timeout, target.config.storage_timeout])
    timeouts = [s.config.storage_timeout for s in (source, target) if s.config.storage_timeout is not None]
    timeout_s = max(t.total_seconds() for t in timeouts) if len(timeouts) == 2 else None
    return Leases([TableLease(tables[key], ttl_s=ttl, timeout_s=timeout_s) for key in sorted(tables)], ttl)


async def _run(source: MemoryStore, target: ShardedMemoryStore, purge: bool, leases: Leases) -> ReshardResult:
    moved: builtins.list[str] = []
    stayed: builtins.list[str] = []
    memories = 0
    emptied: dict[tuple[str, str], MemoryStore] = {}
    for namespace in await source.anamespaces():
        old = await source.ashard_for(namespace) if isinstance(source, ShardedMemoryStore) else source
        new = await target.ashard_for(namespace)
        same = table_identity(old.uri, old.table_name) == table_identity(new.uri, new.table_name)
        if same or not await old.admin.aexport(namespace, limit=1, include_vectors=False):
            # Also when the source's shard for it holds none of it: listed from another of its
            # tables (moved there by an earlier run, or written through the target since).
            stayed.append(namespace)
            continue
        memories += await _move(namespace, old, new, leases)
        moved.append(namespace)
        emptied[table_identity(old.uri, old.table_name)] = old
    if purge:
        for old in emptied.values():
            await leases.check()
            await old.admin.apurge()
    return ReshardResult(moved=tuple(moved), stayed=tuple(stayed), memories=memories)


async def _move(namespace: str, old: MemoryStore, new: MemoryStore, leases: Leases) -> int:
    """Copy ``namespace`` from ``old`` to ``new`` (ids, timestamps, links, vectors), check, then forget it in ``old``.

    Idempotent: a move cut short by a crash is done again whole by the next run; ``old`` loses the
    namespace only once ``new`` holds every one of its memories. ``old`` still holds it (the caller
    checked), so the move has not completed and what ``new`` already holds of it can only be such a
    leftover (not served from ``new`` before the move returns): it is forgotten first, so that a
    memory deleted in ``old`` since then does not come back.
    """
    # Every change starts under the lease (see lease.py): only then can no other run be moving this namespace.
    if await new.admin.aexport(namespace, limit=1, include_vectors=False):
        await leases.check()
        await new.aforget(namespace)
    ids: set[str] = set()
    offset = 0
    while True:
        page = await old.admin.aexport(namespace, limit=_PAGE, offset=offset, include_vectors=True)
        if not page:
            break
        await leases.check()
        await new.admin.arestore(page)
        ids.update(str(r["id"]) for r in page)
        offset += len(page)
    found = await new.aget(sorted(ids), namespace=namespace) if ids else []
    copied = {m.id for m in (found if isinstance(found, builtins.list) else [found])}
    if copied != ids:  # get() raises on a missing id already; this guards the contract itself
        raise MemoryRetrieversError(f"reshard: {namespace!r} was not fully copied; its old copy is kept")
    await leases.check()
    await old.aforget(namespace)
    return len(ids)


def reshard(source: MemoryStore, target: ShardedMemoryStore, *, purge: bool = False) -> ReshardResult:
    """Move every namespace of ``source`` whose shard differs in ``target`` to its ``target`` shard.

    For each namespace: every memory is exported from its ``source`` shard (superseded ones, ids,
    timestamps, access statistics, supersession links and vectors included), restored into its
    ``target`` shard, checked there, and only then forgotten in ``source``. A namespace whose shard
    is the same table in both (same location and table name) is left where it is: growing
    ``["s0", "s1"]`` to ``["s0", "s1", "s2"]`` moves only the namespaces that now hash to ``s2``.
    Safe to run again after a crash: what was copied is replaced by the same, what was forgotten is
    not found again, and a memory deleted in ``source`` since then is not brought back. A
    namespace forgotten in ``source`` after a cut-short run may be left copied in its ``target``
    shard (a run only visits ``source``'s namespaces): forget it in ``target`` too.

    Stop writes to ``source`` while it runs (a write between a namespace's copy and its forget
    would be lost), and point the app at ``target`` once it returns.

    Args:
        source: The store to move from: a :class:`ShardedMemoryStore` or one :class:`MemoryStore`.
        target: The sharded store to move to (its shards may reuse some of ``source``'s).
        purge: Then purge every shard that lost namespaces, so their bytes leave the disk
            (see :meth:`StoreAdmin.purge`); otherwise they are deleted but kept until ``optimize``
            prunes old versions.

    Returns:
        A :class:`ReshardResult`.

    Raises:
        ConfigError: Not a store and a sharded store, or their embedders differ.
        StorageError: A shard could not be read or written (run again: it resumes).
    """
    return _loop.run_sync(areshard(source, target, purge=purge))
