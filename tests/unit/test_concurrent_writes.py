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

    async def fill_then_other_process_forgets(rows: Any) -> Any:
        read = await fill(rows)  # the new turn's context is made from the stored turns...
        await b.aforget("u")  # ...which another process forgets before this commit
        return read

    a._writer._context.fill = fill_then_other_process_forgets  # type: ignore[method-assign]
    new = a.add("Also, she hates the vet", namespace="u", kind="message", session_id="s")
    fresh = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    assert [m.id for m in fresh.list("u", filter={"include_superseded": True})] == [new.id]
    assert "Whiskers" not in every_text(fresh, "u") and fresh.get(new.id, namespace="u").context is None
    for s in (a, b, fresh):
        s.close()


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
    slow = MemoryRetriever(store, namespace="u", llm=never_answers, config={"llm_timeout_s": 0.3})
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
