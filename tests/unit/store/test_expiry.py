"""Per-memory expiry (``expires_at``): left out of every read at once, deleted by expire/optimize."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory_retrievers import InvalidInputError, MemoryRetriever, MemoryStore
from memory_retrievers.testing import ManualClock

NS = "u"
QUIET = {"query_expansion": {"expansion": False, "hyde": False}, "record_access": False, "scoring": {"decay": "none"}}


@pytest.fixture(params=["view", "lancedb"])
def store(request: pytest.FixtureRequest, make_store: Callable[..., MemoryStore]) -> MemoryStore:
    # Recall reads small namespaces from an in-memory view, large ones from LanceDB: both must agree.
    return make_store(config={"recall_view_max_rows": 10_000 if request.param == "view" else 0})


def _visible(store: MemoryStore, query: str) -> dict[str, set[str]]:
    recalled = MemoryRetriever(store, namespace=NS, config=QUIET).recall(query, k=10, token_budget=None)
    return {
        "recall": {m.text for m in recalled.memories},
        "list": {m.text for m in store.list(NS)},
        "vector": {m.id for m in store.vector_search(query, namespace=NS, k=10)},
        "fts": {m.id for m in store.fts_search("parking", namespace=NS, k=10)},
    }


def test_an_expired_memory_leaves_every_read_at_once(store: MemoryStore, clock: ManualClock) -> None:
    keep = store.add("The parking code is 1234 forever", namespace=NS)
    temp = store.add("The parking code is 9876 this week", namespace=NS, expires_at=clock() + timedelta(days=7))
    assert store.get(temp.id, namespace=NS).expires_at == clock() + timedelta(days=7)
    before = _visible(store, "parking code")
    assert temp.text in before["recall"] and temp.text in before["list"] and temp.id in before["vector"]
    assert store.count(NS) == 2

    clock.advance(days=7)  # expires_at <= now: expired
    after = _visible(store, "parking code")
    assert after["recall"] == after["list"] == {keep.text}
    assert after["vector"] == after["fts"] == {keep.id}
    assert store.count(NS) == 1
    # Asked for explicitly, it is still there until expire() deletes it.
    assert {m.id for m in store.list(NS, filter={"include_expired": True})} == {keep.id, temp.id}
    assert store.get(temp.id, namespace=NS).text == temp.text
    assert store.admin.expire() == 1
    assert store.count(NS, filter={"include_expired": True}) == 1
    assert store.admin.expire() == 0


def test_optimize_deletes_expired_memories_and_only_them(store: MemoryStore, clock: ManualClock) -> None:
    store.add("lasting", namespace=NS)
    store.add("short lived", namespace=NS, expires_at=clock() + timedelta(hours=1))
    store.add("other tenant, short lived", namespace="v", expires_at=clock() + timedelta(hours=1))
    store.add("later", namespace=NS, expires_at=clock() + timedelta(days=30))
    clock.advance(hours=2)
    assert store.admin.expire(namespace="v") == 1
    store.admin.optimize()
    assert sorted(m.text for m in store.list(NS, filter={"include_expired": True})) == ["lasting", "later"]


def test_an_expired_update_brings_back_the_memory_it_superseded(store: MemoryStore, clock: ManualClock) -> None:
    old = store.add("Ana lives in Porto", namespace=NS)
    new = store.supersede(
        old.id, {"text": "Ana is in Lisbon for the summer", "expires_at": clock() + timedelta(days=90)}, namespace=NS
    )
    assert [m.text for m in store.list(NS)] == [new.text]
    clock.advance(days=91)
    assert store.list(NS) == []  # the newer memory has expired; the older one is still superseded...
    store.admin.expire()
    assert [m.text for m in store.list(NS)] == [old.text]  # ...until it is deleted, like any delete


def test_expiry_can_be_cleared_and_must_be_timezone_aware(store: MemoryStore, clock: ManualClock) -> None:
    m = store.add("temporary", namespace=NS, expires_at=clock() + timedelta(minutes=5))
    store.update(m.id, namespace=NS, expires_at=None)
    clock.advance(days=1)
    assert [x.text for x in store.list(NS)] == ["temporary"]
    with pytest.raises(InvalidInputError, match="expires_at"):
        store.add("naive", namespace=NS, expires_at=datetime(2030, 1, 1))
    assert store.count(NS) == 1


def test_a_table_from_before_expiry_is_migrated_and_works(tmp_path: Path, clock: ManualClock) -> None:
    from memory_retrievers import HashEmbedder

    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32), clock=clock) as first:
        first.add("written by an older release", namespace=NS)

    async def drop() -> None:  # the table as a release without expires_at left it
        import lancedb

        db = await lancedb.connect_async(str(tmp_path / "db"))
        await (await db.open_table("memories")).drop_columns(["expires_at"])

    asyncio.run(drop())
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32), clock=clock) as old:
        assert [m.expires_at for m in old.list(NS)] == [None]
        old.add("temporary", namespace=NS, expires_at=clock() + timedelta(minutes=1))
        clock.advance(minutes=2)
        recalled = MemoryRetriever(old, namespace=NS, config=QUIET).recall("written temporary", k=5)
        assert [m.text for m in recalled.memories] == ["written by an older release"]
        assert old.admin.expire() == 1


def test_an_expired_duplicate_never_swallows_a_new_write(store: MemoryStore, clock: ManualClock) -> None:
    old = store.add("Gate code is 1234", namespace=NS, expires_at=clock() + timedelta(days=1))
    assert store.add("Gate code is 1234", namespace=NS).action.name == "SKIPPED"  # still live: a duplicate
    clock.advance(days=2)
    again = store.add("Gate code is 1234", namespace=NS)
    assert again.action.name == "ADDED" and again.id != old.id
    assert [m.id for m in store.list(NS)] == [again.id]


def _write_again_while_expiring(store: MemoryStore, clock: ManualClock, ids: list[str]) -> list[str]:
    """Upsert every id (expiring in a day) in a thread while this one expires in a loop; the ids written."""
    acked: list[str] = []
    done = threading.Event()

    def write_again() -> None:
        try:
            for id_ in ids:
                store.add(f"note {id_} again", namespace=NS, id=id_, expires_at=clock() + timedelta(days=1))
                acked.append(id_)
        finally:
            done.set()

    writer = threading.Thread(target=write_again)
    writer.start()
    sweeps = 0
    while not done.is_set() or not sweeps:
        store.admin.expire()
        sweeps += 1
    writer.join(timeout=120)
    return acked


def test_item7_expire_keeps_memories_written_again(make_store: Callable[..., MemoryStore], clock: ManualClock) -> None:
    # Issue 27 item 7: expire() read the expired ids outside the write queue, then deleted them by
    # id: an upsert that gave a memory a later expires_at in between was deleted all the same.
    store = make_store(config={"recall_view_max_rows": 0})
    ids = [f"m{i}" for i in range(30)]
    lost: list[str] = []
    for _ in range(1):  # one round lost most of its writes before the fix: one is enough to fail
        for id_ in ids:
            store.add(f"note {id_}", namespace=NS, id=id_, expires_at=clock() + timedelta(minutes=1), dedup=False)
        clock.advance(minutes=2)  # all expired, none deleted yet
        acked = _write_again_while_expiring(store, clock, ids)
        assert acked == ids
        store.admin.expire()
        alive = {m.id for m in store.list(NS, limit=1000)}
        lost += [id_ for id_ in acked if id_ not in alive]
    assert lost == [], f"{len(lost)} of {len(ids)} acknowledged writes were deleted by expire()"
