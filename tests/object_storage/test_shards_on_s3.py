"""A sharded store on the loopback S3 server: one key prefix per shard, each its own table and manifest."""

from __future__ import annotations

import lancedb
import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, ShardedMemoryStore, reshard, shard_of
from testing.local_s3 import LocalS3Server

pytestmark = [pytest.mark.long]

TENANTS = [f"tenant-{i}" for i in range(9)]


def _namespaces_in(server: LocalS3Server, uri: str) -> set[str]:
    table = lancedb.connect(uri, storage_options=server.storage_options).open_table("memories")
    return set(table.to_arrow().column("namespace").to_pylist())


def test_a_sharded_store_on_s3_keeps_each_tenant_under_its_shards_prefix(s3_server: LocalS3Server, s3_uri: str) -> None:
    prefixes = [f"{s3_uri}/shard-{i}" for i in range(3)]
    options = s3_server.storage_options
    store = ShardedMemoryStore(prefixes[:2], embedder=HashEmbedder(32), storage_options=options)
    store.add_many([{"text": f"{ns} prefers green tea", "namespace": ns} for ns in TENANTS])
    assert store.open_shards == sorted({shard_of(ns, 2) for ns in TENANTS})
    retriever = MemoryRetriever(store)
    for ns in TENANTS:
        found = retriever.recall("what does the user drink?", namespace=ns).memories
        assert [m.memory.text for m in found] == [f"{ns} prefers green tea"]
    stats = store.admin.stats()
    assert stats.rows == len(TENANTS) and [s.uri for s in stats.shards] == prefixes[:2]
    store.admin.optimize()

    grown = ShardedMemoryStore(prefixes, embedder=HashEmbedder(32), storage_options=options)
    result = reshard(store, grown)
    assert set(result.moved) == {ns for ns in TENANTS if shard_of(ns, 3) == 2}
    for i, prefix in enumerate(prefixes):
        assert _namespaces_in(s3_server, prefix) == {ns for ns in TENANTS if shard_of(ns, 3) == i}
    assert grown.namespaces() == sorted(TENANTS)
    store.close()
    grown.close()
