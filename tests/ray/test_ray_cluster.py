"""The clustering rewrite as a Ray job, and the bulk jobs on a sharded store (issue 29 item 4)."""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore, ShardedMemoryStore
from memory_retrievers.bulk import ClusterReport, backfill_formation, cluster_tables, import_records, reembed
from memory_retrievers.errors import EmbedderMismatchError, InvalidInputError
from memory_retrievers.formation import MemoryFormer
from memory_retrievers.storage.cluster import ClusterResult
from testing.paths import ROOT

# The layout reader and contiguity check of the clustering's own tests, reused as they are.
_CHECKS = ROOT / "tests" / "unit" / "storage" / "test_cluster.py"
_spec = importlib.util.spec_from_file_location("_cluster_checks", _CHECKS)
assert _spec is not None and _spec.loader is not None
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

QUIET = checks.QUIET
# shard_of over 3 shards: user05, user08 -> 0; user01, user02, user04 -> 1; user00, user03, user06, user07 -> 2.
NAMESPACES = [f"user{n:02d}" for n in range(9)]
WHEN = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _sharded(tmp_path: Path, *, dimension: int = 32) -> ShardedMemoryStore:
    return ShardedMemoryStore(
        [tmp_path / f"shard{i}" for i in range(3)], embedder=HashEmbedder(dimension), config=QUIET
    )


def _interleaved(store: MemoryStore, namespaces: list[str], rounds: int, per_round: int = 3) -> None:
    """Every commit holds a few rows of every namespace (each shard's commits interleave its own)."""
    for r in range(rounds):
        store.add_many(
            [
                {"text": f"{ns} says thing {r} {j} about topic{(r * 7 + j) % 11}", "namespace": ns}
                for j in range(per_round)
                for ns in namespaces
            ],
            dedup=False,
        )


@pytest.fixture
def sharded(tmp_path: Path) -> Iterator[ShardedMemoryStore]:
    with _sharded(tmp_path) as store:
        yield store


def _recalls(store: MemoryStore) -> dict[tuple[str, str], list[tuple[str, float]]]:
    retriever = MemoryRetriever(store, config={"record_access": False})  # accesses would change scores
    queries = ["thing about topic3", "says topic7", "user03 thing 5"]
    return {(ns, q): checks.recalled(retriever, q, ns) for ns in NAMESPACES for q in queries}


def test_every_shard_is_clustered_in_parallel_and_no_result_changes(
    ray_instance: Any, sharded: ShardedMemoryStore
) -> None:
    _interleaved(sharded, NAMESPACES, rounds=10)
    sharded.admin.optimize()  # every row indexed: BM25 statistics differ between indexed and flat-scanned rows
    shards = [sharded.shard(i) for i in range(3)]
    rows_before = [checks.layout(s) for s in shards]
    assert all(checks.namespace_switches(rows) > 50 for rows in rows_before)  # scattered by the interleaving
    before = _recalls(sharded)

    report = cluster_tables(sharded, optimize=True, workers=2)

    assert isinstance(report, ClusterReport) and report.failed == ()
    assert [t.shard for t in report.tables] == [0, 1, 2]
    assert [t.uri for t in report.tables] == list(sharded.locations)
    for done, shard, rows in zip(report.tables, shards, rows_before, strict=True):
        assert isinstance(done.result, ClusterResult) and done.optimized and done.error is None
        # Figures per shard: every row of that shard moved into one run.
        assert (done.result.moved, done.result.skipped, done.result.runs_after) == (len(rows), 0, 1)
        assert done.result.runs_before > 1
        after = checks.layout(shard)
        held = {r["namespace"] for r in rows}
        assert checks.namespace_switches(after) == len(held) - 1  # each namespace contiguous
        keys = [(r["namespace"], r["created_at"], r["id"]) for r in after]
        assert keys == sorted(keys)
        assert {r["id"] for r in after} == {r["id"] for r in rows}
    assert report.moved == sum(len(rows) for rows in rows_before)
    assert _recalls(sharded) == before
    # A second job finds every shard laid out: nothing to move.
    again = cluster_tables(sharded, workers=3)
    assert [(t.result.moved, t.result.runs_after) for t in again.tables if t.result] == [(0, 1)] * 3
    assert json.loads(json.dumps(again.to_dict()))["failed"] == 0


def test_a_failing_shard_is_reported_typed_and_the_others_are_clustered(ray_instance: Any, tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "shard2", embedder=HashEmbedder(16)) as other:
        other.add("written with another model", namespace="user00")
    with _sharded(tmp_path) as store:
        _interleaved(store, ["user05", "user08", "user01", "user02"], rounds=6)  # shards 0 and 1 only
        report = cluster_tables(store)
        assert [t.error is None for t in report.tables] == [True, True, False]
        assert [t.result.runs_after for t in report.tables[:2] if t.result] == [1, 1]
        (failed,) = report.failed
        assert failed.shard == 2 and failed.result is None
        assert isinstance(failed.error, EmbedderMismatchError)
        assert report.to_dict()["tables"][2]["error"]["type"] == "EmbedderMismatchError"


def test_a_plain_store_is_one_table(ray_instance: Any, tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32), config=QUIET) as store:
        _interleaved(store, NAMESPACES[:4], rounds=5)
        rows = checks.layout(store)
        report = cluster_tables(store, workers=1)
        (done,) = report.tables
        assert (done.shard, done.uri, done.table) == (0, store.uri, store.table_name)
        assert done.result is not None and done.result.moved == len(rows) and not done.optimized
        assert checks.namespace_switches(checks.layout(store)) == 3
        with pytest.raises(InvalidInputError, match="workers must be an int >= 1"):
            cluster_tables(store, workers=0)


def _by_namespace(store: MemoryStore) -> dict[str, list[tuple[Any, ...]]]:
    return {
        ns: [(r["id"], r["text"], r["created_at"], tuple(r["vector"])) for r in store.admin.export(ns)]
        for ns in store.namespaces()
    }


def test_import_and_reembed_on_sharded_stores(ray_instance: Any, tmp_path: Path) -> None:
    records = [
        {
            "id": f"m{i}",
            "text": f"{ns} note {i} on tea",
            "namespace": ns,
            "kind": "message",
            "session_id": "s",
            "created_at": WHEN + timedelta(seconds=i),
        }
        for i, ns in enumerate(NAMESPACES * 20)
    ]
    with (
        _sharded(tmp_path / "plain") as plain,
        _sharded(tmp_path / "ray") as on_ray,
    ):
        plain.add_many(records, batch_size=50)
        report = import_records(on_ray, records, batch_size=50, workers=2, embed_batch=40)
        assert report.added == len(records)
        assert _by_namespace(on_ray) == _by_namespace(plain)
        for i, location in enumerate(on_ray.locations):  # each namespace in its own shard only
            with MemoryStore(location, embedder=HashEmbedder(32)) as shard:
                assert {on_ray.shard_index(ns) for ns in shard.namespaces()} == {i}
        # Sharded source into a plain store, and back into another sharded store.
        with MemoryStore(tmp_path / "one", embedder=HashEmbedder(16, name="v2")) as one:
            copied = reembed(on_ray, one, workers=2)
            assert (copied.records, copied.added) == (len(records), len(records))
            assert sorted(one.namespaces()) == NAMESPACES
            v2_shards = [tmp_path / f"v2-{i}" for i in range(3)]
            with ShardedMemoryStore(v2_shards, embedder=HashEmbedder(16, name="v2")) as v2:
                back = reembed(one, v2, workers=2)
                assert back.added == len(records)
                assert {ns: [r[:3] for r in rows] for ns, rows in _by_namespace(v2).items()} == {
                    ns: [r[:3] for r in rows] for ns, rows in _by_namespace(on_ray).items()
                }
                (m3,) = [r for r in v2.admin.export("user03") if r["id"] == "m3"]
                assert np.array_equal(m3["vector"], HashEmbedder(16).embed_documents(["user03 note 3 on tea"])[0])
        with (
            ShardedMemoryStore([on_ray.locations[1]], embedder=HashEmbedder(32)) as overlapping,
            pytest.raises(InvalidInputError, match="same table"),
        ):
            reembed(on_ray, overlapping)


def test_formation_backfill_on_a_sharded_store_forms_what_a_sequential_run_forms(
    ray_instance: Any, tmp_path: Path
) -> None:
    """Each namespace formed by a Ray task on its own shard: the same facts as MemoryFormer over a plain store."""
    jobs = _ray_jobs_module()
    if not jobs.LOCOMO.exists():
        pytest.skip("needs the LoCoMo dev split (shared/data/locomo)")
    conversations = json.loads(jobs.LOCOMO.read_text())[:2]
    namespaces = [c["sample_id"] for c in conversations]
    wanted = {(ns, "session_1") for ns in namespaces}
    turns = [t for t in jobs.load_turns(jobs.LOCOMO) if (t.conversation, t.session) in wanted]
    records = [
        {
            "text": t.text,
            "namespace": t.conversation,
            "kind": "message",
            "session_id": t.session,
            "created_at": t.created_at + timedelta(seconds=i),
        }
        for i, t in enumerate(turns)
    ]
    shards = [tmp_path / f"shard{i}" for i in range(3)]
    with (
        ShardedMemoryStore(shards, embedder=HashEmbedder(64)) as sharded,
        MemoryStore(tmp_path / "plain", embedder=HashEmbedder(64)) as plain,
    ):
        assert len({sharded.shard_index(ns) for ns in namespaces}) == 2  # two shards, one task each
        sharded.add_many(records)
        plain.add_many(records)
        report = backfill_formation(sharded, functools.partial(jobs.LoCoMoReplayLLM, jobs.LOCOMO))
        assert [n.namespace for n in report.namespaces] == namespaces
        assert all(n.sessions == 1 and n.added > 0 for n in report.namespaces)
        former = MemoryFormer(plain, llm=jobs.LoCoMoReplayLLM(jobs.LOCOMO))
        for ns in namespaces:
            stored = plain.list(ns, filter={"kinds": ["message"]}, limit=1000, newest_first=False)
            former.form(stored, namespace=ns, session_id="session_1")
        former.close()
        kinds = {"kinds": jobs.FORMED}
        formed = {
            label: {ns: sorted(m.text for m in s.list(ns, filter=kinds, limit=1000)) for ns in namespaces}
            for label, s in (("ray", sharded), ("sequential", plain))
        }
        assert formed["ray"] == formed["sequential"]
        assert all(formed["ray"].values())


def _ray_jobs_module() -> Any:
    """tests/ray/test_ray_jobs.py (its LoCoMo path, loader and replay LLM), loaded by path."""
    spec = importlib.util.spec_from_file_location("_ray_jobs_checks", Path(__file__).with_name("test_ray_jobs.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
