"""``admin.cluster()`` on the loopback S3 server: a cold tenant's first recall costs far fewer requests.

Rows written interleaved across namespaces scatter each tenant over the whole table, so a cold
read of one tenant fetches a file region per memory; clustered, it reads a few ranges (issue 29).
Requests are counted by the metered proxy of benchmarks/_s3_meter.py (no latency added: the
counts are stable, the times are not).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from testing.local_s3 import LocalS3Server
from testing.paths import BENCHMARKS

ROWS, TENANTS, DIM = 20_000, 50, 384
CONFIG = {"optimize_after_rows": 10**9, "optimize_after_commits": 10**6, "ann_index_min_rows": 10**9}


@pytest.fixture
def proxy(anonymous_s3: LocalS3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from _s3_meter import MeteredProxy  # type: ignore[import-not-found]

    metered = MeteredProxy(anonymous_s3.port)
    yield metered
    metered.close()


@pytest.mark.heavy
def test_cluster_on_s3_makes_a_cold_tenant_cheap(anonymous_s3: LocalS3Server, proxy: Any) -> None:
    uri = anonymous_s3.uri(f"cluster-cold-tenant-{np.random.default_rng().integers(1 << 30)}")
    embedder = HashEmbedder(DIM)

    def open_store() -> MemoryStore:
        return MemoryStore(uri, storage_options=proxy.storage_options, embedder=embedder, config=CONFIG)

    def cold_recall(tenant: int) -> int:
        """Requests of the first recall of ``tenant`` on a freshly opened store."""
        with open_store() as store:
            with proxy.measure() as usage:
                memories = MemoryRetriever(store, config={"record_access": False}).recall(
                    f"tenant {tenant} note", namespace=f"t{tenant:03d}", k=10
                )
            assert memories.memories and all(m.memory.namespace == f"t{tenant:03d}" for m in memories.memories)
        return sum(usage.requests.values())

    with open_store() as store:
        records = [{"text": f"tenant {i % TENANTS} note {i}", "namespace": f"t{i % TENANTS:03d}"} for i in range(ROWS)]
        store.add_many(records, batch_size=2_000, dedup=False, progress=False)  # interleaved, as real traffic
        store.admin.optimize()
    before = [cold_recall(t) for t in (1, 2)]

    with open_store() as store:
        with proxy.measure() as pass_usage:
            result = store.admin.cluster()
        store.admin.optimize()
    assert result.moved == ROWS and result.skipped == 0 and result.runs_after == 1
    # The pass reads by address ranges (a scan), not one file region per row.
    assert sum(pass_usage.requests.values()) < ROWS // 20, pass_usage.as_dict()

    after = [cold_recall(t) for t in (3, 4)]
    print(f"\ncold tenant of {ROWS // TENANTS} in {ROWS} rows on S3: requests {before} before, {after} after cluster")
    print(f"the pass: {pass_usage.as_dict()}")
    assert max(after) * 4 <= min(before), (before, after)
    with open_store() as store:  # every memory still there, each namespace whole
        assert sum(store.count(f"t{t:03d}") for t in range(TENANTS)) == ROWS
