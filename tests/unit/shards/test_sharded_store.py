"""Shards built in: a store over several tables, each namespace routed to one by a stable hash (issue 29 item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lancedb
import numpy as np
import pytest

from memory_retrievers import (
    ConfigError,
    ForkedStoreError,
    HashEmbedder,
    InvalidInputError,
    MemoryRetriever,
    MemoryStore,
    PerProcess,
    ShardedMemoryStore,
    StorageError,
    reshard,
    shard_of,
)
from memory_retrievers.shards.admin import ShardedStats

EMBEDDER = HashEmbedder(32)
TENANTS = [f"user-{i}" for i in range(12)]

#: Pinned: changing the hash would send every tenant of every deployed store to another shard.
KNOWN = {
    ("alice", 4): 1,
    ("bob", 4): 1,
    ("carol", 4): 3,
    ("dave", 4): 2,
    ("", 4): 2,
    ("émile", 4): 0,
    ("用户", 4): 0,
    ("alice", 3): 1,
    ("carol", 3): 2,
    ("carol", 2): 1,
    ("dave", 2): 0,
    ("x", 1): 0,
}


def _open(tmp_path: Path, n: int, **kwargs: object) -> ShardedMemoryStore:
    return ShardedMemoryStore([tmp_path / f"shard-{i}" for i in range(n)], embedder=EMBEDDER, **kwargs)  # type: ignore[arg-type]


def _tables(tmp_path: Path, n: int) -> list[set[str]]:
    """The namespaces stored in each shard's table, read with LanceDB directly."""
    found = []
    for i in range(n):
        table = lancedb.connect(tmp_path / f"shard-{i}").open_table("memories")
        found.append(set(table.to_arrow().column("namespace").to_pylist()))
    return found


def test_the_routing_is_pinned_to_known_values() -> None:
    assert {key: shard_of(*key) for key in KNOWN} == KNOWN


def test_the_routing_is_the_same_in_processes_with_other_hash_seeds() -> None:
    names = [f"tenant-{i}" for i in range(200)] + ["", "émile", "用户"]
    here = [shard_of(n, 7) for n in names]
    code = (
        "import json, sys; from memory_retrievers import shard_of; "
        "print(json.dumps([shard_of(n, 7) for n in json.loads(sys.argv[1])]))"
    )
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(names)], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) == here


def test_growing_by_one_shard_moves_only_namespaces_to_the_new_shard() -> None:
    names = [f"tenant-{i}" for i in range(3000)]
    moved = [n for n in names if shard_of(n, 2) != shard_of(n, 3)]
    assert all(shard_of(n, 3) == 2 for n in moved)
    assert 800 < len(moved) < 1200  # about a third
    assert sorted({shard_of(n, 5) for n in names}) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_a_bad_shard_count_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="shards"):
        shard_of("alice", bad)  # type: ignore[arg-type]


def test_each_namespace_lives_in_its_shard_only_and_reads_never_cross(tmp_path: Path) -> None:
    with _open(tmp_path, 3) as store:
        for ns in TENANTS:
            store.add(f"{ns} likes green tea", namespace=ns)
        store.add_many([{"text": f"{ns} owns a bike", "namespace": ns} for ns in TENANTS])
        for ns in TENANTS:
            assert {m.text for m in store.list(ns)} == {f"{ns} likes green tea", f"{ns} owns a bike"}
            hits = store.fts_search("tea", namespace=ns)
            assert hits and {h.id for h in hits} <= {m.id for m in store.list(ns)}
            assert store.count(ns) == 2
        assert store.namespaces() == sorted(TENANTS)
    stored = _tables(tmp_path, 3)
    for ns in TENANTS:
        assert [ns in names for names in stored] == [i == shard_of(ns, 3) for i in range(3)]


def test_add_many_keeps_the_order_and_validates_everything_first(tmp_path: Path) -> None:
    with _open(tmp_path, 3) as store:
        added = store.add_many([{"text": f"note {i}", "namespace": TENANTS[i % 5]} for i in range(10)])
        assert [store.get(a.id, namespace=TENANTS[i % 5]).text for i, a in enumerate(added)] == [
            f"note {i}" for i in range(10)
        ]
        with pytest.raises(InvalidInputError, match="record 3"):
            store.add_many([{"text": "fine", "namespace": TENANTS[0]}] * 3 + [{"text": "", "namespace": TENANTS[1]}])
        assert store.count(TENANTS[0]) == 2


def test_every_namespace_call_routes(tmp_path: Path) -> None:
    with _open(tmp_path, 2) as store:
        first = store.add("Alice prefers tea", namespace="alice")
        store.update(first.id, namespace="alice", tags=["drinks"])
        newer = store.supersede(first.id, "Alice prefers coffee now", namespace="alice")
        assert store.get(first.id, namespace="alice").superseded_by == newer.id
        assert [h.id for h in store.vector_search("coffee", namespace="alice", k=1)] == [newer.id]
        assert store.recency_search(namespace="alice", k=5)
        store.add_later("Alice flies to Oslo", namespace="alice").result()
        assert store.count("alice") == 2
        assert store.delete(newer.id, namespace="alice") == 1
        assert store.forget("alice") >= 1 and store.count("alice") == 0
        with pytest.raises(TypeError, match="namespace"):
            store.count()  # type: ignore[call-arg]
        with pytest.raises(InvalidInputError):
            store.add("x", namespace="")


def test_columns_and_version_read_each_namespace_on_its_shard(tmp_path: Path) -> None:
    with _open(tmp_path, 2) as store:
        with pytest.raises(InvalidInputError, match="unknown column"):
            store.columns(["alice", "dave"], ["nope"])
        assert store.open_shards == []  # refused before any shard opened
        assert (shard_of("alice", 2), shard_of("dave", 2)) == (1, 0)
        store.add("Alice likes tea", namespace="alice")
        store.add("Dave likes jazz", namespace="dave")
        both = store.columns(["alice", "dave"], ["namespace", "text"])
        assert sorted(both.column("text").to_pylist()) == ["Alice likes tea", "Dave likes jazz"]
        assert store.columns(["alice", "dave"], ["text"], limit=1).num_rows == 1
        dave = store.version("dave")
        store.add("Alice likes coffee too", namespace="alice")
        assert store.version("dave") == dave  # another shard's commit
        store.add("Dave plays the piano", namespace="dave")
        assert store.version("dave") > dave


def test_shards_open_lazily(tmp_path: Path) -> None:
    with _open(tmp_path, 4) as store:
        assert store.open_shards == []
        store.add("Alice likes tea", namespace="alice")
        assert store.open_shards == [shard_of("alice", 4)]
        assert not (tmp_path / f"shard-{(shard_of('alice', 4) + 1) % 4}").exists()
        store.namespaces()  # across namespaces: every shard
        assert store.open_shards == [0, 1, 2, 3]


def test_admin_fans_out(tmp_path: Path) -> None:
    with _open(tmp_path, 3) as store:
        store.add_many([{"text": f"{ns} likes tea", "namespace": ns} for ns in TENANTS])
        stats = store.admin.stats()
        assert isinstance(stats, ShardedStats) and len(stats.shards) == 3
        assert stats.rows == len(TENANTS) == sum(s.rows for s in stats.shards)
        assert [n.namespace for n in stats.namespaces] == sorted(TENANTS)
        assert stats.to_dict()["shards"][0]["table"] == "memories"
        store.admin.optimize()
        store.admin.purge()
        exported = store.admin.export(TENANTS[0])
        assert [r["text"] for r in exported] == [f"{TENANTS[0]} likes tea"]
        store.forget(TENANTS[0])
        result = store.admin.restore(exported + store.admin.export(TENANTS[1]))
        assert (result.added, result.replaced) == (1, 1)
        assert store.count(TENANTS[0]) == 1
        assert store.admin.expire() == 0 and store.admin.expire(TENANTS[0]) == 0
        assert store.admin.flush_access() == 0


def test_a_retriever_recalls_from_the_tenants_shard(tmp_path: Path) -> None:
    with _open(tmp_path, 3) as store:
        for ns in TENANTS[:4]:
            store.add(f"{ns} prefers green tea in the morning", namespace=ns)
        retriever = MemoryRetriever(store)
        for ns in TENANTS[:4]:
            found = retriever.recall("what does the user drink in the morning?", namespace=ns).memories
            assert [m.memory.namespace for m in found] == [ns]


def test_bad_shard_lists_are_refused(tmp_path: Path) -> None:
    for bad in ([], "one-folder", [tmp_path / "a", tmp_path / "a"], [1, 2]):
        with pytest.raises(ConfigError, match="shard"):
            ShardedMemoryStore(bad, embedder=EMBEDDER)  # type: ignore[arg-type]
    with _open(tmp_path, 2) as inner, pytest.raises(ConfigError, match="ShardedMemoryStore"):
        ShardedMemoryStore([inner], embedder=EMBEDDER)
    with (
        MemoryStore(tmp_path / "other", embedder=HashEmbedder(16)) as other,
        pytest.raises(ConfigError, match="embedder"),
    ):
        ShardedMemoryStore([other, tmp_path / "b"], embedder=EMBEDDER)


def test_open_stores_can_be_the_shards(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "a", embedder=EMBEDDER) as a, MemoryStore(tmp_path / "b", embedder=EMBEDDER) as b:
        store = ShardedMemoryStore([a, b])
        assert store.embedder is EMBEDDER and store.open_shards == [0, 1]
        store.add("Alice likes tea", namespace="alice")
        assert [a, b][shard_of("alice", 2)].count("alice") == 1


@pytest.mark.long  # forked and spawned processes
def test_a_sharded_store_is_refused_in_a_forked_child_and_per_process_makes_one(tmp_path: Path) -> None:
    store = _open(tmp_path, 2)
    store.add("Alice likes tea", namespace="alice")
    with pytest.raises(ForkedStoreError):
        import pickle

        pickle.dumps(store)
    pid = os.fork()
    if pid == 0:  # the child: the parent's store refuses, a PerProcess one works (an engine process serves it)
        code = 1
        try:
            try:
                store.count("alice")
            except ForkedStoreError:
                fresh = PerProcess(lambda: _open(tmp_path, 2))
                code = 0 if fresh.get().count("alice") == 1 else 2
                fresh.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.close()


def test_reshard_two_to_three_keeps_every_memory_id_timestamp_link_and_vector(tmp_path: Path) -> None:
    old = _open(tmp_path, 2)
    for ns in TENANTS:
        first = old.add(f"{ns} lives in Paris", namespace=ns)
        old.supersede(first.id, f"{ns} moved to Lyon", namespace=ns)
        old.add(f"{ns} likes tea", namespace=ns)
    before = {ns: old.admin.export(ns) for ns in TENANTS}
    new = _open(tmp_path, 3)
    result = reshard(old, new)
    assert set(result.moved) == {ns for ns in TENANTS if shard_of(ns, 3) == 2}
    assert set(result.stayed) == set(TENANTS) - set(result.moved) and result.memories == 3 * len(result.moved)
    for ns in TENANTS:
        after = new.admin.export(ns)
        key = lambda r: r["id"]  # noqa: E731
        for a, b in zip(sorted(before[ns], key=key), sorted(after, key=key), strict=True):
            assert np.allclose(a.pop("vector"), b.pop("vector"))
            assert {k: v for k, v in a.items() if k not in ("access_count", "last_accessed_at")} == {
                k: v for k, v in b.items() if k not in ("access_count", "last_accessed_at")
            }
    stored = _tables(tmp_path, 3)
    for ns in TENANTS:
        assert [ns in names for names in stored] == [i == shard_of(ns, 3) for i in range(3)]
    assert reshard(old, new).moved == ()  # run again (as after a crash): nothing left to move
    old.close()
    new.close()


def test_reshard_resumes_after_a_crash_between_copy_and_forget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _open(tmp_path, 2)
    for ns in TENANTS:
        old.add(f"{ns} likes tea", namespace=ns)
    new = _open(tmp_path, 3)
    calls = []

    async def crash(self: MemoryStore, namespace: str) -> int:
        calls.append(namespace)
        raise RuntimeError("killed")

    monkeypatch.setattr(MemoryStore, "aforget", crash)
    with pytest.raises(RuntimeError, match="killed"):
        reshard(old, new)
    monkeypatch.undo()
    (copied,) = calls
    assert old.count(copied) == 1 and new.count(copied) == 1  # the old copy kept until the new one is written
    result = reshard(old, new)
    assert copied in result.moved and new.count(copied) == 1
    assert all(new.count(ns) == 1 for ns in TENANTS)
    old.close()
    new.close()


WORKER = """
from memory_retrievers import HashEmbedder, PerProcess, ShardedMemoryStore

STORES = None


def count(args):
    global STORES
    folders, namespace = args
    if STORES is None:
        STORES = PerProcess(lambda: ShardedMemoryStore(folders, embedder=HashEmbedder(32)))
    store = STORES.get()
    store.add(f"{namespace} wrote this from a worker", namespace=namespace)
    return store.count(namespace), store.open_shards
"""


@pytest.mark.long  # spawned worker processes
def test_spawned_workers_find_each_tenant_in_the_same_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    (tmp_path / "shard_worker.py").write_text(WORKER)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawn children get this process's sys.path
    folders = [str(tmp_path / f"shard-{i}") for i in range(3)]
    with ShardedMemoryStore(folders, embedder=EMBEDDER) as store:
        for ns in TENANTS[:6]:
            store.add(f"{ns} wrote this first", namespace=ns)
    import shard_worker  # type: ignore[import-not-found]

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(shard_worker.count, [(folders, ns) for ns in TENANTS[:6]])
    for ns, (count, opened) in zip(TENANTS[:6], results, strict=True):
        assert count == 2 and shard_of(ns, 3) in opened
    assert _tables(tmp_path, 3) == [{ns for ns in TENANTS[:6] if shard_of(ns, 3) == i} for i in range(3)]


def test_threads_opening_one_shard_at_once_share_one_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import memory_retrievers.shards.sharded_store as shards

    made: list[str] = []

    class Counted(MemoryStore):
        def __init__(self, uri: str, **kwargs: object) -> None:
            made.append(uri)
            super().__init__(uri, **kwargs)  # type: ignore[arg-type]

    with _open(tmp_path, 2) as store:
        monkeypatch.setattr(shards, "MemoryStore", Counted)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: store.add(f"note {i}", namespace=TENANTS[i % 4]), range(32)))
        assert sum(store.count(ns) for ns in TENANTS[:4]) == 32
        assert sorted(made) == sorted({store.locations[shard_of(ns, 2)] for ns in TENANTS[:4]})  # one store each


async def test_the_async_api_routes_on_the_callers_loop(tmp_path: Path) -> None:
    store = _open(tmp_path, 3)
    added = await store.aadd("Alice prefers tea", namespace="alice")
    assert (await store.aget(added.id, namespace="alice")).text == "Alice prefers tea"
    assert await store.acount("alice") == 1 and await store.anamespaces() == ["alice"]
    hits = await store.afts_search("tea", namespace="alice")
    assert [h.id for h in hits] == [added.id]
    assert (await store.admin.astats()).rows == 1
    await store.aclose()


async def test_the_one_table_constructors_are_refused_with_the_way_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"construct it"):
        await ShardedMemoryStore.aopen([tmp_path / "a"])
    with pytest.raises(ConfigError, match=r"MemoryStore\.from_table"):
        ShardedMemoryStore.from_table(object())


def test_a_shard_that_failed_to_open_is_opened_again_by_the_next_call(tmp_path: Path) -> None:
    store = _open(tmp_path, 2)
    index = shard_of("alice", 2)
    blocker = tmp_path / f"shard-{index}"
    blocker.write_text("a file where the shard's folder goes")
    with pytest.raises(StorageError):
        store.add("Alice likes tea", namespace="alice")
    assert store.open_shards == []
    blocker.unlink()
    store.add("Alice likes tea", namespace="alice")
    assert store.count("alice") == 1 and store.open_shards == [index]
    store.close()


# ---------------------------------------------------------------------- red team (issue 29)


def test_cluster_runs_on_every_shard_and_sums_their_results(tmp_path: Path) -> None:
    # Regression: ShardedAdmin did not override cluster(), so the base ran on the sharded store
    # itself and failed with AttributeError ('_maintainer'), as did `memory-retrievers cluster`.
    from memory_retrievers.shards.admin import ShardedClusterResult

    with _open(tmp_path, 3) as store:
        for round_ in range(2):  # two commits per shard, tenants interleaved: something to move
            store.add_many([{"text": f"{ns} note {round_}", "namespace": ns} for ns in TENANTS])
        before = {ns: sorted(m.id for m in store.list(ns)) for ns in TENANTS}
        result = store.admin.cluster()
        assert isinstance(result, ShardedClusterResult) and len(result.shards) == 3
        assert result.moved == sum(s.moved for s in result.shards) and result.moved > 0
        assert result.skipped == sum(s.skipped for s in result.shards)
        assert result.to_dict()["shards"][0]["moved"] == result.shards[0].moved
        assert {ns: sorted(m.id for m in store.list(ns)) for ns in TENANTS} == before
        assert store.open_shards == [0, 1, 2]


def test_reshard_run_again_after_a_crash_does_not_bring_back_a_memory_deleted_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 29 red team): a move cut short after its copy left the namespace in the
    # target shard; a memory deleted in the source before the next run stayed in that copy (the
    # next run restored the source's memories over it, replacing by id, and deleted nothing).
    old = _open(tmp_path, 2)
    for ns in TENANTS:
        old.add(f"{ns} likes tea", namespace=ns)
        old.add(f"{ns} lives in Paris", namespace=ns)
    new = _open(tmp_path, 3)
    calls = []

    async def crash(self: MemoryStore, namespace: str) -> int:
        calls.append(namespace)
        raise RuntimeError("killed")

    monkeypatch.setattr(MemoryStore, "aforget", crash)
    with pytest.raises(RuntimeError, match="killed"):
        reshard(old, new)
    monkeypatch.undo()
    (copied,) = calls
    gone = next(m for m in old.list(copied) if "Paris" in m.text)
    old.delete(gone.id, namespace=copied)  # e.g. the user asked for it between the crash and the next run
    assert reshard(old, new).moved.count(copied) == 1
    assert [m.text for m in new.list(copied)] == [f"{copied} likes tea"]
    assert gone.id not in {r["id"] for r in new.admin.export(copied)}
    old.close()
    new.close()


def test_a_serialised_sharded_store_reopens_the_shards_own_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 29 red team): open stores on another table than "memories" given as the
    # shards were recorded as table "memories", so a deserialised adapter (another process) reopened
    # new empty tables beside them: every memory missing, new ones written where nobody looks.
    import weakref

    import memory_retrievers.integration.handles as handles

    a = MemoryStore(tmp_path / "a", table_name="notes", embedder=EMBEDDER)
    b = MemoryStore(tmp_path / "b", table_name="notes", embedder=EMBEDDER)
    with ShardedMemoryStore([a, b]) as store:
        assert store.table_name == "notes" and store.tables == ("notes", "notes")
        store.add_many([{"text": f"{ns} likes tea", "namespace": ns} for ns in TENANTS])
        spec = handles.store_spec(store, "RecallRetriever")
    monkeypatch.setattr(handles, "_LIVE", weakref.WeakValueDictionary())  # as in another process
    with handles.open_store(json.loads(json.dumps(spec))) as reopened:
        assert all(reopened.count(ns) == 1 for ns in TENANTS)
    c = MemoryStore(tmp_path / "c", table_name="t0", embedder=EMBEDDER)
    d = MemoryStore(tmp_path / "c", table_name="t1", embedder=EMBEDDER)
    with ShardedMemoryStore([c, d]) as mixed, pytest.raises(ConfigError, match="table"):
        handles.store_spec(mixed, "RecallRetriever")  # refused, not reopened on the wrong tables


@pytest.mark.parametrize("cloud", [{"api_key": "sk_live_secret"}, {"region": 5}, {"api_key": ""}])
def test_cloud_settings_a_sharded_store_cannot_use_are_refused_at_construction(tmp_path: Path, cloud: dict) -> None:
    # Regression (issue 29 red team): checked only when a shard first opened, so a bad setting
    # surfaced in the middle of serving (and for each shard's first tenant), not where it was given.
    (name,) = cloud
    with pytest.raises(ConfigError, match=name) as refused:
        ShardedMemoryStore([tmp_path / "a", tmp_path / "b"], embedder=EMBEDDER, **cloud)
    assert "sk_live_secret" not in str(refused.value)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_cloud_settings_reach_the_db_shards_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    real = lancedb.connect_async

    async def recording(uri: str, **kwargs: object) -> object:
        calls.append({"uri": str(uri), **kwargs})
        local = {k: v for k, v in kwargs.items() if k in ("read_consistency_interval", "session")}
        return await real(tmp_path / "cloud" if str(uri).startswith("db://") else uri, **local)

    monkeypatch.setattr(lancedb, "connect_async", recording)
    with ShardedMemoryStore(["db://tenants", tmp_path / "local"], embedder=EMBEDDER, api_key="sk_live_secret") as store:
        for ns in TENANTS:
            store.add(f"{ns} likes tea", namespace=ns)
        assert all(store.count(ns) == 1 for ns in TENANTS)
    keys = {call["uri"]: call.get("api_key") for call in calls}
    assert keys == {"db://tenants": "sk_live_secret", str(tmp_path / "local"): None}


def test_shard_of_agrees_with_the_store_on_every_spelling_of_a_namespace(tmp_path: Path) -> None:
    # Regression (issue 29 red team): the store routes a namespace's canonical (NFC) form, while
    # shard_of hashed the bytes given: an app's router or a bulk job using shard_of sent the
    # decomposed spelling of "émile" to another shard than the one holding her memories.
    decomposed, composed = "e\u0301mile", "\u00e9mile"
    assert [shard_of(decomposed, n) for n in range(1, 9)] == [shard_of(composed, n) for n in range(1, 9)]
    with _open(tmp_path, 4) as store:
        store.add("Émile likes tea", namespace=decomposed)
        assert store.shard_index(decomposed) == shard_of(decomposed, 4)
        assert store.open_shards == [shard_of(decomposed, 4)] and store.count(composed) == 1


def test_reshard_onto_the_same_tables_spelled_differently_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 29 red team): reshard told "the same table" by comparing the location
    # strings, so a target naming a source shard with a trailing slash (or a relative path) copied
    # each namespace onto itself and then forgot it there: every memory of those tenants deleted.
    monkeypatch.chdir(tmp_path)
    old = _open(tmp_path, 2)
    for ns in TENANTS:
        old.add(f"{ns} likes tea", namespace=ns)
    new = ShardedMemoryStore([f"{tmp_path / 'shard-0'}/", "shard-1", tmp_path / "shard-2"], embedder=EMBEDDER)
    result = reshard(old, new)
    assert [new.count(ns) for ns in TENANTS] == [1] * len(TENANTS)
    assert set(result.moved) == {ns for ns in TENANTS if shard_of(ns, 3) == 2}
    with pytest.raises(ConfigError, match="shard"):
        ShardedMemoryStore([tmp_path / "shard-0", f"{tmp_path / 'shard-0'}/"], embedder=EMBEDDER)
    old.close()
    new.close()


async def test_a_caller_cancelled_while_its_shard_opens_does_not_cancel_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 29 red team): callers of a shard still opening all awaited one shared
    # opening; a caller cancelled meanwhile (a request's timeout) cancelled that opening, and every
    # other caller's call failed with CancelledError although nobody cancelled it.
    import asyncio

    from memory_retrievers.storage.table import MemoryTable

    real_open = MemoryTable.open

    async def slow_open(self: MemoryTable) -> None:
        await asyncio.sleep(0.5)
        await real_open(self)

    monkeypatch.setattr(MemoryTable, "open", slow_open)
    store = _open(tmp_path, 1)
    impatient = asyncio.ensure_future(asyncio.wait_for(store.aadd("Alice likes tea", namespace="alice"), 0.1))
    patient = asyncio.ensure_future(store.aadd("Bob likes coffee", namespace="bob"))
    with pytest.raises(asyncio.TimeoutError):
        await impatient
    assert (await patient).text == "Bob likes coffee"
    assert await store.acount("bob") == 1
    await store.aclose()


def test_a_bad_purge_argument_is_refused_before_any_shard_is_created(tmp_path: Path) -> None:
    # Regression (issue 29 red team): purge opened (and so created) every shard's table before the
    # argument was checked: bad input left N new tables behind.
    store = _open(tmp_path, 3)
    with pytest.raises(InvalidInputError, match="remove_uncommitted"):
        store.admin.purge(remove_uncommitted="yes")  # type: ignore[arg-type]
    assert store.open_shards == [] and list(tmp_path.iterdir()) == []
    store.close()


async def test_embedding_a_query_opens_no_shard(tmp_path: Path) -> None:
    # Regression (issue 29 red team): with no shard open yet, embedding a query opened (and
    # created) shard 0, whatever tenants the process serves: on object storage, a cold opening
    # of a table nobody asked for.
    store = _open(tmp_path, 3)
    one = await store.aembed_query("what does Alice drink?")
    many = await store.aembed_queries(["what does Alice drink?", "tea"])
    assert one.shape == (32,) and many.shape == (2, 32) and np.allclose(many[0], one)
    assert store.open_shards == [] and list(tmp_path.iterdir()) == []
    await store.aclose()


async def test_close_waits_for_a_shard_still_opening_and_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 29 red team): close() closed the shards open at that moment; one still
    # opening finished afterwards and stayed open (its table handle, its write queue), and the
    # write waiting for it landed after close() had returned.
    import asyncio

    from memory_retrievers.storage.table import MemoryTable

    real_open = MemoryTable.open

    async def slow_open(self: MemoryTable) -> None:
        await asyncio.sleep(0.5)
        await real_open(self)

    monkeypatch.setattr(MemoryTable, "open", slow_open)
    store = _open(tmp_path, 1)
    writing = asyncio.ensure_future(store.aadd("Alice likes tea", namespace="alice"))
    await asyncio.sleep(0.1)  # the shard is opening
    await store.aclose()
    with pytest.raises(StorageError):
        await writing  # it raced close(): refused, not written behind the caller's back
    monkeypatch.undo()
    with MemoryStore(tmp_path / "shard-0", embedder=EMBEDDER) as raw:
        assert raw.count("alice") == 0


def test_reshard_run_again_after_the_cutover_leaves_new_tenants_alone(tmp_path: Path) -> None:
    # A rerun after the app moved to the target (shrinking 3 -> 2 shards on the same tables): a
    # tenant created since lives in the target's shard but not where the source routes it; it has
    # nothing to move, and the target's copy must not be taken for a leftover and forgotten.
    old = _open(tmp_path, 3)
    for ns in TENANTS:
        old.add(f"{ns} likes tea", namespace=ns)
    new = _open(tmp_path, 2)
    reshard(old, new)
    late = next(f"late-{i}" for i in range(100) if shard_of(f"late-{i}", 3) == 2)
    new.add("a tenant who arrived after the cutover", namespace=late)
    result = reshard(old, new)
    assert result.moved == () and late in result.stayed
    assert new.count(late) == 1 and all(new.count(ns) == 1 for ns in TENANTS)
    old.close()
    new.close()


def test_every_admin_operation_is_the_sharded_ones_own() -> None:
    # An admin method added to StoreAdmin but not to ShardedAdmin would run the one-table code on
    # the sharded facade, which has no table of its own (cluster() once did): each is overridden.
    from memory_retrievers.shards.admin import ShardedAdmin
    from memory_retrievers.store.admin import StoreAdmin

    public = {name for name, value in vars(StoreAdmin).items() if not name.startswith("_") and callable(value)}
    assert public >= {"cluster", "acluster", "optimize", "aoptimize", "purge", "apurge"}
    assert sorted(name for name in public if name not in vars(ShardedAdmin)) == []
