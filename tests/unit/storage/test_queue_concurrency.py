"""Writes under concurrency: nothing deleted comes back, nothing acknowledged is lost, nothing stalls.

Threads share one store (its write queue serialises them); two ``MemoryStore`` objects on one folder
stand in for two processes (each has its own queue, only LanceDB's conditional commits between them),
with the race forced at a chosen point so the test is deterministic.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_retrievers import (
    HashEmbedder,
    InvalidInputError,
    LLMFallbackWarning,
    MemoryRetriever,
    MemoryStore,
    NotFoundError,
)

Make = Callable[..., MemoryStore]
TURNS = ["I adopted a cat named Whiskers", "She is three years old", "Whiskers likes tuna", "We live in Lisbon"]


def chat(store: MemoryStore, ns: str = "u", session: str = "s") -> list[str]:
    return [
        m.id
        for m in store.add_many([{"text": t, "kind": "message", "session_id": session} for t in TURNS], namespace=ns)
    ]


def every_text(store: MemoryStore, ns: str) -> str:
    """Every stored word of a namespace: texts and contexts, superseded memories included."""
    memories = store.list(ns, filter={"include_superseded": True}, limit=10_000)
    return " ".join(f"{m.text} {m.context or ''}" for m in memories)


# ---------------------------------------------------------------- a chat turn racing a deletion
@pytest.mark.parametrize("deletion", ["forget", "delete"])
def test_a_chat_turn_racing_a_deletion_never_brings_the_turns_back(make_store: Make, deletion: str) -> None:
    store = make_store()
    for trial in range(20):
        ns = f"u{trial}"
        ids = chat(store, ns)
        barrier = threading.Barrier(2)

        def add_turn(ns: str = ns, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            store.add("Also, she hates the vet", namespace=ns, kind="message", session_id="s")

        def remove(ns: str = ns, ids: list[str] = ids, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            if deletion == "forget":
                store.forget(ns)
            else:
                store.delete(ids, namespace=ns)

        with ThreadPoolExecutor(2) as pool:
            for f in [pool.submit(add_turn), pool.submit(remove)]:
                f.result()
        left = store.list(ns, filter={"include_superseded": True}, limit=100)
        assert not {m.id for m in left} & set(ids), f"trial {trial}: forgotten turns came back"
        assert "Whiskers" not in every_text(store, ns), f"trial {trial}: forgotten words live on in a context"
        assert not store.fts_search("Whiskers tuna Lisbon", namespace=ns, field="context")


def test_another_process_deleting_turns_mid_write_keeps_them_deleted(tmp_path: Path) -> None:
    a = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    b = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    chat(a)
    fill = a._writer._context.fill

    async def fill_then_other_process_forgets(rows: Any, **options: Any) -> Any:
        read = await fill(rows, **options)  # the new turn's context is made from the stored turns...
        await b.aforget("u")  # ...which another process forgets before this commit
        return read

    a._writer._context.fill = fill_then_other_process_forgets  # type: ignore[method-assign]
    new = a.add("Also, she hates the vet", namespace="u", kind="message", session_id="s")
    fresh = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    assert [m.id for m in fresh.list("u", filter={"include_superseded": True})] == [new.id]
    assert "Whiskers" not in every_text(fresh, "u") and fresh.get(new.id, namespace="u").context is None
    for s in (a, b, fresh):
        s.close()


def test_a_turn_deleted_by_another_process_before_its_neighbours_learn_of_it(tmp_path: Path) -> None:
    """The new turn commits; another process deletes it (and finds nothing to sweep yet); then the
    writer extends the earlier turns' context with it. Its words must not stay there."""
    a = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    b = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    chat(a)
    extend = a._writer._context.refresh

    async def other_process_deletes_then_extend(rows: Any) -> None:
        new_ids = {r["id"] for r in await _rows_with(a, "hates the vet")}
        await b.adelete(list(new_ids), namespace="u")  # committed, swept: the neighbours don't have it yet
        await extend(rows)  # ...and now they get its words

    a._writer._context.refresh = other_process_deletes_then_extend  # type: ignore[method-assign]
    a.add("Also, she hates the vet", namespace="u", kind="message", session_id="s")
    fresh = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    assert "vet" not in every_text(fresh, "u")
    assert not fresh.fts_search("hates the vet", namespace="u", field="context")
    for s in (a, b, fresh):
        s.close()


async def _rows_with(store: MemoryStore, words: str) -> list[dict[str, Any]]:
    return [{"id": m.id} for m in await store.alist("u", limit=100) if words in m.text]


def test_a_reworded_turn_deleted_by_another_process_mid_update(tmp_path: Path) -> None:
    """An update commits, then another process deletes the turn (rewriting its neighbours' context)
    before the update rewrites them with the new words: that stale rewrite must not land."""
    a = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    b = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    ids = chat(a)
    rewrite = a._table.rewrite
    calls = 0

    async def delete_between_the_two_rewrites(data: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the neighbours' rewrite: the updated turn is deleted just before it
            await b.adelete([ids[2]], namespace="u")
        return await rewrite(data)

    a._table.rewrite = delete_between_the_two_rewrites  # type: ignore[method-assign]
    a.update(ids[2], namespace="u", text="Whiskers likes salmon")
    assert calls >= 2
    fresh = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    assert "salmon" not in every_text(fresh, "u") and "tuna" not in every_text(fresh, "u")
    for s in (a, b, fresh):
        s.close()


def test_deleting_a_neighbour_of_a_superseded_turn_takes_its_words_out(store: MemoryStore) -> None:
    ids = chat(store)
    newer = store.supersede(ids[1], "She is four years old", namespace="u")
    assert newer.context and newer.context in every_text(store, "u")  # a turn of its session, with its context
    store.delete(ids[0], namespace="u")  # "I adopted a cat named Whiskers"
    assert "adopted" not in every_text(store, "u")
    assert not store.fts_search("adopted cat", namespace="u", field="context")


def test_turns_written_before_context_auto_existed_are_still_swept(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    ids = chat(store)
    mine = store.add("And a dog", namespace="u", kind="message", session_id="s", context="I adopted a cat")
    store.close()

    async def drop() -> None:  # the table as an older release left it
        import lancedb

        db = await lancedb.connect_async(str(tmp_path / "db"))
        await (await db.open_table("memories")).drop_columns(["context_auto"])

    asyncio.run(drop())
    old = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    old.delete(ids[2], namespace="u")  # "Whiskers likes tuna": judged store-filled by its content
    assert "tuna" not in every_text(old, "u")
    assert old.get(mine.id, namespace="u").context == "I adopted a cat"
    old.close()


def test_a_caller_context_is_never_rewritten_by_a_neighbours_deletion(store: MemoryStore) -> None:
    ids = chat(store)
    mine = store.add("And a dog", namespace="u", kind="message", session_id="s", context="I adopted a cat")
    store.update(ids[1], namespace="u", context="my own words")
    store.delete(ids[0], namespace="u")
    assert store.get(mine.id, namespace="u").context == "I adopted a cat"  # the caller's, kept as given
    assert store.get(ids[1], namespace="u").context == "my own words"


def test_deleting_a_turn_takes_its_words_out_of_its_neighbours_context(store: MemoryStore) -> None:
    ids = chat(store)
    assert "tuna" in (store.get(ids[1], namespace="u").context or "")
    store.delete(ids[2], namespace="u")  # "Whiskers likes tuna"
    assert "tuna" not in every_text(store, "u")
    assert not store.fts_search("tuna", namespace="u", field="context")
    # the remaining turns' context closes the gap
    assert store.get(ids[1], namespace="u").context == f"{TURNS[0]}\n{TURNS[3]}"


def test_rewording_a_turn_rewords_it_in_its_neighbours_context(store: MemoryStore) -> None:
    ids = chat(store)
    store.update(ids[2], namespace="u", text="Whiskers likes salmon")
    assert "tuna" not in every_text(store, "u")
    assert "salmon" in (store.get(ids[1], namespace="u").context or "")


def test_a_caller_given_context_is_never_rewritten(store: MemoryStore) -> None:
    ids = chat(store)
    own = store.add("my own turn", namespace="u", kind="message", session_id="s", context="set by me")
    store.delete(ids[3], namespace="u")
    assert store.get(own.id, namespace="u").context == "set by me"


# ---------------------------------------------------------------- update and supersede races
def test_an_update_racing_another_process_delete_does_not_resurrect(tmp_path: Path) -> None:
    a = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    b = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    mem = a.add("the secret is 42", namespace="u")
    rewrite = a._table.rewrite

    async def delete_first(data: Any) -> Any:
        await b.adelete(mem.id, namespace="u")  # lands between a's read and a's commit
        return await rewrite(data)

    a._table.rewrite = delete_first  # type: ignore[method-assign]
    with pytest.raises(NotFoundError):
        a.update(mem.id, namespace="u", priority=3.0)
    assert MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)).count("u", filter={"include_superseded": True}) == 0
    a.close()
    b.close()


def test_concurrent_supersedes_leave_one_live_successor(make_store: Make) -> None:
    store = make_store()
    for trial in range(10):
        old = store.add(f"the meeting is on Monday {trial}", namespace="u")
        barrier = threading.Barrier(2)
        outcomes: list[object] = []

        def supersede(
            text: str, old_id: str = old.id, barrier: threading.Barrier = barrier, outcomes: list = outcomes
        ) -> None:
            barrier.wait()
            try:
                outcomes.append(store.supersede(old_id, text, namespace="u"))
            except InvalidInputError as exc:
                outcomes.append(exc)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(supersede, [f"on Tuesday {trial}", f"on Wednesday {trial}"]))
        winners = [o for o in outcomes if not isinstance(o, Exception)]
        assert len(winners) == 1 and "already superseded" in str(next(o for o in outcomes if isinstance(o, Exception)))
        assert store.get(old.id, namespace="u").superseded_by == winners[0].id  # type: ignore[union-attr]


def test_a_supersede_racing_another_process_leaves_one_live_successor(tmp_path: Path) -> None:
    a = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    b = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    old = a.add("the meeting is on Monday", namespace="u")
    upsert = a._table.upsert

    async def other_supersedes_first(data: Any) -> Any:
        await b.asupersede(old.id, "the meeting is on Wednesday", namespace="u")
        a._table.upsert = upsert  # type: ignore[method-assign]
        return await upsert(data)

    a._table.upsert = other_supersedes_first  # type: ignore[method-assign]
    with pytest.raises(InvalidInputError, match="already superseded"):
        a.supersede(old.id, "the meeting is on Tuesday", namespace="u")
    live = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)).list("u")
    assert [m.text for m in live] == ["the meeting is on Wednesday"]
    a.close()
    b.close()


def test_an_update_racing_a_supersede_never_undoes_it(make_store: Make) -> None:
    store = make_store()
    for trial in range(10):
        old = store.add(f"Alice works at Acme {trial}", namespace="u")
        barrier = threading.Barrier(2)

        def update(old_id: str = old.id, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            store.update(old_id, namespace="u", priority=5.0)

        def supersede(old_id: str = old.id, trial: int = trial, barrier: threading.Barrier = barrier) -> str:
            barrier.wait()
            return store.supersede(old_id, f"Alice works at Globex {trial}", namespace="u").id

        with ThreadPoolExecutor(2) as pool:
            fu, fs = pool.submit(update), pool.submit(supersede)
            fu.result()
            new_id = fs.result()
        assert store.get(old.id, namespace="u").superseded_by == new_id


# ---------------------------------------------------------------- many writers
async def test_hundreds_of_concurrent_writers_all_land(tmp_path: Path) -> None:
    store = await MemoryStore.aopen(tmp_path / "db", embedder=HashEmbedder(32))
    results = await asyncio.gather(
        *(store.aadd(f"memory number {i} of many", namespace=f"t{i % 7}", dedup=False) for i in range(600))
    )
    assert len({r.id for r in results}) == 600
    assert sum([await store.acount(f"t{i}") for i in range(7)]) == 600
    await store.aclose()


def test_concurrent_writers_share_commits(make_store: Make) -> None:
    store = make_store()
    store.add("warm up", namespace="u")
    import lancedb

    before = int(lancedb.connect(store.uri).open_table(store.table_name).version)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: store.add(f"thread write {i}", namespace="u", dedup=False), range(64)))
    store.flush()
    commits = int(lancedb.connect(store.uri).open_table(store.table_name).version) - before
    assert store.count("u") == 65
    assert commits < 64  # grouped: fewer commits than writes (maintenance commits included)


# ---------------------------------------------------------------- a plug-in that never returns
def test_a_hung_sync_llm_does_not_stall_the_process(make_store: Make) -> None:
    release = threading.Event()

    def never_answers(prompt: str) -> str:
        release.wait()
        return ""

    class ThreadedEmbedder(HashEmbedder):
        """Embeds on asyncio's default executor, as many third-party plug-ins do."""

        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            return await asyncio.to_thread(self.embed_documents, texts)

        async def aembed_query(self, text):  # type: ignore[no-untyped-def]
            return await asyncio.to_thread(self.embed_query, text)

    store = make_store(embedder=ThreadedEmbedder(32))
    store.add("the kettle is in the kitchen", namespace="u")
    slow = MemoryRetriever(store, namespace="u", llm=never_answers, config={"query_expansion": {"llm_timeout_s": 0.3}})
    done = threading.Event()

    def scenario() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMFallbackWarning)
            for _ in range(10):  # 20 LLM calls that never return
                assert slow.recall("where is the kettle?").memories
        store.add("another tenant keeps working", namespace="other")
        assert MemoryRetriever(store, namespace="other").recall("tenant").memories
        done.set()

    worker = threading.Thread(target=scenario, daemon=True)
    started = time.perf_counter()
    worker.start()
    finished = done.wait(60)
    release.set()  # let the hung calls end
    worker.join(10)
    assert finished, "the process stalled behind calls that never returned"
    assert time.perf_counter() - started < 60


# ---------------------------------------------------------------- add_many checks everything first
def test_a_bad_caller_vector_in_a_later_batch_stops_the_first_batch_too(make_store: Make) -> None:
    store = make_store()
    records = [{"text": f"memory {i}", "vector": [1.0] * 32} for i in range(700)]
    records[600]["vector"] = [float("nan")] * 32
    with pytest.raises(Exception, match="record 600"):
        store.add_many(records, namespace="u", batch_size=512, dedup=False)
    assert store.count("u") == 0


def test_add_many_embeds_the_next_batch_while_this_one_commits(make_store: Make) -> None:
    events: list[str] = []

    class Slow(HashEmbedder):
        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            events.append(f"embed {texts[0]}")
            await asyncio.sleep(0.05)  # a model takes time: the batch before is committed meanwhile
            return self.embed_documents(texts)

    embedder = Slow(32)
    store = make_store(embedder=embedder, config={"embed_batch_size": 100})
    store._table.subscribe(lambda event: events.append("commit"))
    added = store.add_many([{"text": f"memory {i}"} for i in range(300)], namespace="u", batch_size=100, dedup=False)
    assert events[:3] == ["embed memory 0", "embed memory 100", "commit"]  # batch 2 embedded before batch 1 landed
    assert events.count("commit") == 3 and [m.text for m in added] == [f"memory {i}" for i in range(300)]
    # Each record kept its own vector through the hand-over.
    stored = store.get([m.id for m in added], namespace="u", include_vector=True)
    for memory in stored:
        assert memory.vector is not None
        assert np.allclose(memory.vector, embedder.embed_query(memory.text), atol=1e-6)


def test_an_embedder_failing_in_a_later_batch_says_what_was_stored(make_store: Make) -> None:
    class FailsSecondCall(HashEmbedder):
        calls = 0

        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            FailsSecondCall.calls += 1
            if FailsSecondCall.calls == 2:
                raise RuntimeError("model server went away")
            return self.embed_documents(texts)

    store = make_store(embedder=FailsSecondCall(32), config={"embed_batch_size": 100})
    with pytest.raises(Exception, match="records 0-99 were stored") as info:
        store.add_many([{"text": f"memory {i}"} for i in range(250)], namespace="u", batch_size=100, dedup=False)
    assert [m.text for m in info.value.written] == [f"memory {i}" for i in range(100)]  # type: ignore[attr-defined]
    assert store.count("u") == 100
