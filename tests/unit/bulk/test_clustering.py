"""The pure parts of the Ray clustering job and of the bulk jobs on shards, without Ray.

The job on a local Ray instance is in tests/ray/test_ray_cluster.py (long tier).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore, ShardedMemoryStore
from memory_retrievers.bulk import ClusterReport, TableCluster, cluster_tables
from memory_retrievers.bulk.backfill import _table_of
from memory_retrievers.bulk.clustering import _cluster_one, _run_tasks
from memory_retrievers.bulk.engine import factory_for
from memory_retrievers.bulk.tables import open_table, table_openers
from memory_retrievers.errors import EmbedderMismatchError, InvalidInputError, StorageError
from memory_retrievers.storage.cluster import ClusterResult

NAMESPACES = ["user05", "user01", "user00"]  # shard_of over 3 shards: 0, 1, 2


def test_a_plain_store_is_one_table_and_a_sharded_store_one_per_shard(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    with MemoryStore("plain", embedder=HashEmbedder(16), config={"write_batch_size": 7}) as plain:
        (only,) = table_openers(plain, {"aws_region": "eu-west-1"})
        assert only["uri"] == str(tmp_path / "plain") and only["table_name"] == plain.table_name
        assert only["config"]["write_batch_size"] == 7 and only["storage_options"] == {"aws_region": "eu-west-1"}
        given = MemoryStore(tmp_path / "given", table_name="other", embedder=HashEmbedder(16))
        sharded = ShardedMemoryStore(["s0", "s3://bucket/s1", given], embedder=HashEmbedder(16))
        openers = table_openers(sharded, None)
        # Relative folders made absolute (a Ray worker need not share the cwd), URIs kept, each shard's table.
        assert [o["uri"] for o in openers] == [str(tmp_path / "s0"), "s3://bucket/s1", given.uri]
        # The location shards take the open store's table name (51fc39f: the shards' shared table).
        assert [o["table_name"] for o in openers] == ["other", "other", "other"] == list(sharded.tables)
        named = ShardedMemoryStore(["s0", given], table_name="memories", embedder=HashEmbedder(16))
        assert [o["table_name"] for o in table_openers(named, None)] == ["memories", "other"]
        assert all(o["storage_options"] is None for o in openers)
        assert sharded.open_shards == [2]  # listing the tables opened no shard
        sharded.close()
        named.close()  # given was closed with sharded: closing it again is a no-op
        assert [_table_of(plain, ns) for ns in NAMESPACES] == [0, 0, 0]
        assert [_table_of(sharded, ns) for ns in NAMESPACES] == [0, 1, 2]


def test_the_task_clusters_its_table_and_reports_its_error_typed(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        for r in range(3):
            store.add_many([{"text": f"{ns} note {r}", "namespace": ns} for ns in NAMESPACES], dedup=False)
        (opener,) = table_openers(store, None)
        factory = factory_for(store.embedder)
    done = _cluster_one(4, opener, factory, True)
    assert (done.shard, done.uri, done.optimized, done.error) == (4, str(tmp_path / "db"), True, None)
    assert isinstance(done.result, ClusterResult) and (done.result.moved, done.result.runs_after) == (9, 1)
    with open_table(opener, HashEmbedder(16)) as reopened:
        assert reopened.count(namespace="user01") == 3
    failed = _cluster_one(4, opener, factory_for(HashEmbedder(8)), False)  # another model: refused on opening
    assert failed.result is None and isinstance(failed.error, EmbedderMismatchError)
    assert failed.to_dict()["error"]["type"] == "EmbedderMismatchError"


class _FakeRay:
    """Runs "tasks" at once; ``ray.get`` of the ones in ``broken`` raises as a dead Ray worker would."""

    def __init__(self, broken: set[int]) -> None:
        self.broken = broken
        self.in_flight: list[int] = []
        self.most = 0

    def wait(self, refs: list[Any], num_returns: int) -> tuple[list[Any], list[Any]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: tuple[int, Any]) -> Any:
        self.in_flight.remove(ref[0])
        if ref[0] in self.broken:
            raise RuntimeError("worker died")
        return ref[1]


def test_tasks_run_at_most_n_at_once_and_a_dead_task_is_reported(tmp_path: Path) -> None:
    ray = _FakeRay(broken={1})
    result = ClusterResult(5, 0, 2, 1, False, 0.1)

    class Task:
        @staticmethod
        def remote(shard: int, opener: dict[str, Any], *_: Any) -> tuple[int, TableCluster]:
            ray.in_flight.append(shard)
            ray.most = max(ray.most, len(ray.in_flight))
            return shard, TableCluster(shard, opener["uri"], "memories", result, False, 0.2)

    openers = [{"uri": f"/data/s{i}", "table_name": "memories"} for i in range(4)]
    calls = [(i, o, None, False) for i, o in enumerate(openers)]
    tables = _run_tasks(ray, Task, calls, openers, 2)
    assert ray.most == 2
    assert [t.shard for t in tables] == [0, 1, 2, 3]
    assert [t.result for t in tables] == [result, None, result, result]
    assert isinstance(tables[1].error, StorageError) and "shard 1: the Ray task failed: RuntimeError" in str(
        tables[1].error
    )
    report = ClusterReport(tuple(tables), 1.0)
    assert report.failed == (tables[1],) and report.moved == 15
    assert report.to_dict()["failed"] == 1 and report.to_dict()["tables"][1]["uri"] == "/data/s1"


def test_bad_arguments_are_refused_before_ray_starts(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        with pytest.raises(InvalidInputError, match="workers must be an int >= 1, got 0"):
            cluster_tables(store, workers=0)
        with pytest.raises(InvalidInputError, match="optimize must be True or False, got 'yes'"):
            cluster_tables(store, optimize="yes")  # type: ignore[arg-type]
