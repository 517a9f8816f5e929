"""What a write reports when something fails around its commit (issue 27 items 6, 17 and 18).

Whatever fails after a commit landed must neither fail nor redo what landed: a caller told
"failed" retries and stores the memory twice, and the write queue used to re-apply every batch of a
group alone after any error of the group. A storage failure before the commit fails the whole
group at once instead of being waited out once per queued write.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memory_retrievers import MemoryStore, StorageError, WriteAction
from memory_retrievers.storage import landing
from memory_retrievers.storage.events import CommitEvent

Make = Callable[..., MemoryStore]


def texts(store: MemoryStore, ns: str) -> list[str]:
    return sorted(m.text for m in store.list(ns, limit=1000))


class FailingHandle:
    """Stands in for the LanceDB table: ``fail`` says what the next commits do (then every call passes)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.commits = 0
        self.fail_after_commit = 0  # commits that land, then raise
        self.fail_commits = 0  # commits that raise without landing
        self.fail_reads = 0  # reads that raise (the store is down)
        self.down_reads = 0  # reads that raise once a commit has failed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def add(self, data: Any) -> Any:
        return await self._commit(lambda: self.real.add(data))

    async def delete(self, where: str) -> Any:
        return await self._commit(lambda: self.real.delete(where))

    def merge_insert(self, on: Any) -> Any:
        outer = self
        builder = self.real.merge_insert(on)

        class Builder:
            def __getattr__(self, name: str) -> Any:
                attr = getattr(builder, name)
                if name == "execute":
                    return lambda data: outer._commit(lambda: attr(data))
                return lambda *a, **k: (attr(*a, **k), self)[1]

        return Builder()

    def query(self) -> Any:
        return DownQuery(self) if self.fail_reads else self.real.query()

    async def _commit(self, run: Callable[[], Any]) -> Any:
        self.commits += 1
        if self.fail_commits:
            self.fail_commits -= 1
            self.fail_reads = self.down_reads  # the store stops answering from here on
            raise OSError("the store timed out before the manifest PUT")
        result = await run()
        if self.fail_after_commit:
            self.fail_after_commit -= 1
            raise OSError("connection reset after the manifest PUT (LIST failed)")
        return result


class DownQuery:
    """A query on a store that does not answer: built fine, fails when run."""

    def __init__(self, handle: FailingHandle) -> None:
        self.handle = handle

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: self

    async def to_arrow(self) -> Any:
        self.handle.fail_reads -= 1
        raise OSError("connection refused (the store is down)")


def flaky(store: MemoryStore) -> FailingHandle:
    handle = FailingHandle(store._table._table)
    store._table._table = handle
    return handle


# ---------------------------------------------------------------- item 6
def test_item6_a_duplicate_target_deleted_during_a_group_write_neither_fails_nor_doubles_it(make_store: Make) -> None:
    store = make_store(config={"write_linger": timedelta(milliseconds=300)})
    other = make_store()  # another process's store on the same folder
    target = store.add("Whiskers likes tuna", namespace="u")
    armed = {"on": True}

    async def delete_target(event: CommitEvent) -> None:
        if armed["on"] and not event.failed and event.action in ("add", "upsert") and "u" in event.namespaces:
            armed["on"] = False  # the group has committed: the other process deletes the duplicated memory
            await other._table.delete("u", [target.id])

    store._table.subscribe(delete_target)
    dup = store.add_later("Whiskers likes tuna", namespace="u")  # an exact duplicate: skipped
    turn = store.add_later("We live in Lisbon", namespace="u")
    store.flush()
    assert dup.result(10).action is WriteAction.SKIPPED and dup.result(10).duplicate_of == target.id
    assert turn.result(10).action is WriteAction.ADDED
    assert texts(store, "u") == ["We live in Lisbon"]  # stored once, not once more by a redo


def test_item6_add_many_reports_a_committed_batch_whose_duplicate_target_was_deleted(make_store: Make) -> None:
    store = make_store()
    other = make_store()
    target = store.add("Whiskers likes tuna", namespace="u")
    armed = {"on": True}

    async def delete_target(event: CommitEvent) -> None:
        if armed["on"] and not event.failed and "u" in event.namespaces and event.action != "delete":
            armed["on"] = False
            await other._table.delete("u", [target.id])

    store._table.subscribe(delete_target)
    got = store.add_many([{"text": "Whiskers likes tuna"}, {"text": "We live in Lisbon"}], namespace="u")
    assert [r.action for r in got] == [WriteAction.SKIPPED, WriteAction.ADDED]
    assert texts(store, "u") == ["We live in Lisbon"]


# ---------------------------------------------------------------- item 17
def test_item17_a_commit_that_fails_after_it_landed_is_reported_as_stored(make_store: Make) -> None:
    store = make_store()
    store.add("seed", namespace="u")
    handle = flaky(store)
    handle.fail_after_commit = 1
    got = store.add("Ana moved to Porto", namespace="u")
    assert got.action is WriteAction.ADDED
    handle.fail_after_commit = 1
    keyed = store.add("Ana works at the port", namespace="u", id="job")
    assert keyed.action is WriteAction.ADDED
    assert texts(store, "u") == ["Ana moved to Porto", "Ana works at the port", "seed"]


def test_item17_a_group_whose_commit_failed_after_landing_is_stored_once(make_store: Make) -> None:
    store = make_store(config={"write_linger": timedelta(milliseconds=300)})
    store.add("seed", namespace="u")
    handle = flaky(store)
    handle.fail_after_commit = 1
    turns = [f"turn {i} of the chat" for i in range(4)]
    pending = [store.add_later(t, namespace="u", kind="message", session_id="s") for t in turns]
    store.flush()
    assert [p.result(10).action for p in pending] == [WriteAction.ADDED] * 4
    assert texts(store, "u").count("turn 1 of the chat") == 1
    assert sorted(texts(store, "u")) == sorted([*turns, "seed"])


def test_item17_a_failure_of_the_upkeep_after_a_commit_does_not_fail_the_write(
    make_store: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(config={"write_linger": timedelta(milliseconds=300)})
    store.add("seed", namespace="u", kind="message", session_id="s")

    async def down(*args: Any, **kwargs: Any) -> None:
        raise StorageError("LanceDB could not read the table: connection reset")

    monkeypatch.setattr(store._writer._context, "scrub_vanished", down)
    pending = [store.add_later(f"turn {i}", namespace="u", kind="message", session_id="s") for i in range(4)]
    store.flush()
    assert [p.result(10).action for p in pending] == [WriteAction.ADDED] * 4
    assert texts(store, "u") == ["seed", "turn 0", "turn 1", "turn 2", "turn 3"]


def test_item17_a_delete_that_fails_after_it_landed_is_reported_as_done(make_store: Make) -> None:
    store = make_store()
    store.add("keep me", namespace="u", id="keep")
    store.add("delete me", namespace="u", id="del")
    handle = flaky(store)
    handle.fail_after_commit = 1
    assert store.delete(["del"], namespace="u") == 1  # not StorageError, then NotFoundError on the retry
    assert handle.commits == 1
    assert texts(store, "u") == ["keep me"]


def test_item17_a_delete_that_restores_a_predecessor_and_fails_after_landing_is_done(make_store: Make) -> None:
    store = make_store()
    store.add("Ana lives in Lisbon", namespace="u", id="old")
    store.supersede("old", {"text": "Ana lives in Porto", "id": "new"}, namespace="u")
    handle = flaky(store)
    handle.fail_after_commit = 1  # the delete of "new" and the restore of "old" are one commit
    assert store.delete(["new"], namespace="u") == 1
    assert handle.commits == 1
    assert [(m.id, m.superseded_by) for m in store.list("u")] == [("old", None)]


def test_item17_a_delete_whose_reads_after_the_commit_fail_for_a_while_is_done(make_store: Make) -> None:
    store = make_store()
    store.add("turn one", namespace="u", kind="message", session_id="s", id="t1")
    store.add("turn two", namespace="u", kind="message", session_id="s", id="t2")
    handle = flaky(store)

    def store_goes_down(event: CommitEvent) -> None:
        if event.action == "delete" and not event.failed:
            handle.fail_reads = 3  # the delete landed; the reads after it fail until the store is back

    store._table.subscribe(store_goes_down)
    assert store.delete(["t2"], namespace="u") == 1
    assert handle.fail_reads == 0  # the reads were waited out, not given up on
    assert texts(store, "u") == ["turn one"]


def test_item17_a_delete_that_did_not_land_still_fails(make_store: Make) -> None:
    store = make_store()
    store.add("delete me", namespace="u", id="del")
    handle = flaky(store)
    handle.fail_commits = 1
    with pytest.raises(StorageError, match="manifest PUT"):
        store.delete(["del"], namespace="u")
    assert texts(store, "u") == ["delete me"]


def test_item17_a_forget_that_fails_after_it_landed_is_reported_as_done(make_store: Make) -> None:
    store = make_store()
    for i in range(3):
        store.add(f"secret {i}", namespace="u")
    store.add("kept", namespace="v")
    handle = flaky(store)
    handle.fail_after_commit = 1
    assert store.forget("u") == 3
    assert texts(store, "u") == [] and texts(store, "v") == ["kept"]


def test_item17_an_update_that_fails_after_it_landed_is_reported_as_done(make_store: Make) -> None:
    store = make_store()
    store.add("Ana lives in Lisbon", namespace="u", id="addr")
    handle = flaky(store)
    handle.fail_after_commit = 1
    got = store.update("addr", namespace="u", text="Ana lives in Porto")
    assert got.text == "Ana lives in Porto"
    assert handle.commits == 1  # not rewritten again
    assert store.get("addr", namespace="u").text == "Ana lives in Porto"


def test_item17_an_update_that_did_not_land_still_fails(make_store: Make) -> None:
    store = make_store()
    store.add("Ana lives in Lisbon", namespace="u", id="addr")
    handle = flaky(store)
    handle.fail_commits = 1
    with pytest.raises(StorageError, match="manifest PUT"):
        store.update("addr", namespace="u", text="Ana lives in Porto")
    assert store.get("addr", namespace="u").text == "Ana lives in Lisbon"


def test_item17_a_supersede_whose_commits_fail_after_landing_links_both(make_store: Make) -> None:
    store = make_store()
    store.add("Ana lives in Lisbon", namespace="u", id="addr")
    handle = flaky(store)
    handle.fail_after_commit = 2  # the new memory's commit and the link's both raise after landing
    got = store.supersede("addr", "Ana lives in Porto", namespace="u")
    assert got.action is WriteAction.ADDED and got.supersedes == "addr"
    assert handle.commits == 2  # nothing written again, nothing taken back
    assert texts(store, "u") == ["Ana lives in Porto"]
    assert store.get("addr", namespace="u").superseded_by == got.id


def fail_after_first_commit(store: MemoryStore, handle: FailingHandle, commits: int) -> None:
    """Once a commit has landed (supersede's new memory), the next ``commits`` commits fail without landing."""
    armed = {"on": True}

    def arm(event: CommitEvent) -> None:
        if armed["on"] and not event.failed:
            armed["on"] = False
            handle.fail_commits = commits

    store._table.subscribe(arm)


def test_item17_a_supersede_whose_link_failed_after_its_new_memory_landed_completes_the_link(
    make_store: Make,
) -> None:
    store = make_store()
    store.add("Ana lives in Lisbon", namespace="u", id="addr")
    handle = flaky(store)
    fail_after_first_commit(store, handle, 2)  # the network dropped right after the new memory's commit
    got = store.supersede("addr", "Ana lives in Porto", namespace="u")
    assert got.action is WriteAction.ADDED
    assert handle.commits == 4  # the new memory once; the link failed twice, then landed
    assert texts(store, "u") == ["Ana lives in Porto"]
    assert store.get("addr", namespace="u").superseded_by == got.id


def test_item17_a_supersede_whose_link_never_lands_says_what_is_stored(
    make_store: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(landing, "_VERIFY_S", 1.0)
    store = make_store()
    store.add("Ana lives in Lisbon", namespace="u", id="addr")
    handle = flaky(store)
    fail_after_first_commit(store, handle, 1000)
    with pytest.raises(StorageError, match="was stored to supersede 'addr'") as info:
        store.supersede("addr", "Ana lives in Porto", namespace="u")
    assert "Supersede 'addr' again with the same text" in str(info.value)
    handle.fail_commits = 0
    again = store.supersede("addr", "Ana lives in Porto", namespace="u")  # what the message says to do
    assert texts(store, "u") == ["Ana lives in Porto"]
    assert store.get("addr", namespace="u").superseded_by == again.id


# ---------------------------------------------------------------- item 18
def test_item18_a_storage_outage_fails_a_queued_group_at_once(
    make_store: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(landing, "_VERIFY_S", 1.0)  # how long a failed commit is checked for having landed
    store = make_store(config={"write_linger": timedelta(milliseconds=300)})
    store.add("seed", namespace="u")
    handle = flaky(store)
    handle.fail_commits = 100
    handle.down_reads = 10_000  # the commit failed and the store does not answer: nothing landed, nothing known
    started = time.monotonic()
    pending = [store.add_later(f"note {i}", namespace="u") for i in range(6)]
    store.flush()
    errors = []
    for p in pending:
        with pytest.raises(StorageError) as info:
            p.result(60)
        errors.append(info.value)
    assert handle.commits == 1  # one attempt for the group: no batch is redone alone
    assert len({id(e) for e in errors}) == 1  # every caller hears the same failure
    assert time.monotonic() - started < 15
    assert "could not be read back" in str(errors[0])  # the caller is told it may have landed


def test_item18_a_commit_failure_with_nothing_landed_fails_the_group_once(make_store: Make) -> None:
    store = make_store(config={"write_linger": timedelta(milliseconds=300)})
    store.add("seed", namespace="u")
    handle = flaky(store)
    handle.fail_commits = 100  # every commit fails; reads still work, so nothing is seen to have landed
    pending = [store.add_later(f"note {i}", namespace="u") for i in range(6)]
    store.flush()
    for p in pending:
        with pytest.raises(StorageError, match="manifest PUT"):
            p.result(60)
    assert handle.commits == 1
    assert texts(store, "u") == ["seed"]


def test_item18_writes_queued_through_an_outage_fail_with_it_untried(
    make_store: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(landing, "_VERIFY_S", 1.0)
    store = make_store(config={"write_batch_size": 2})  # six writes: three groups
    store.add("seed", namespace="u")
    handle = flaky(store)
    handle.fail_commits = 100
    handle.down_reads = 10_000
    tried: list[int] = []
    write_group = store._queue._write_group

    async def counting(batches: Any, proceed: Any) -> Any:
        tried.append(len(batches))
        return await write_group(batches, proceed)

    monkeypatch.setattr(store._queue, "_write_group", counting)
    gate = store.add_later("first", namespace="u")  # its group goes first; the others queue behind it
    pending = [gate, *(store.add_later(f"note {i}", namespace="u") for i in range(5))]
    store.flush()
    for p in pending:
        with pytest.raises(StorageError):
            p.result(60)
    assert handle.commits == 1
    assert len(tried) == 1, tried  # the groups queued behind the failing one were not tried
    handle.fail_commits = 0
    handle.fail_reads = handle.down_reads = 0
    assert store.add_later("after the outage", namespace="u").result(30).action is WriteAction.ADDED
