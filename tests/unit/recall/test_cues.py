"""The speaker and date cues end to end: real LanceDB tables, the hash embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore

QUIET = {
    "scoring": {"decay": "none"},
    "selection": {"mmr": False},
    "record_access": False,
    "query_expansion": {"expansion": False},
}


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, recording every query it embeds and how (one call, or a batch)."""

    def __init__(self, *, batch: bool) -> None:
        super().__init__(32)
        self.calls: list[tuple[str, ...]] = []
        if batch:
            self.aembed_queries = self._batch  # offered only when asked for, like a third-party embedder

    async def aembed_query(self, text: str) -> np.ndarray:
        self.calls.append((text,))
        return await super().aembed_query(text)

    async def _batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(tuple(texts))
        return self.embed_documents(list(texts))


CHAT = [
    "Caroline: I love pottery classes, they calm me down",
    "Melanie: I love pottery classes too, they calm me down",
    "Caroline: Melanie, pottery sounds great",
]


def _chat(store: MemoryStore) -> None:
    store.add_many([{"text": t, "kind": "message", "session_id": "s1"} for t in CHAT], namespace="u")


@pytest.mark.parametrize("batch", [True, False])
def test_a_query_naming_a_speaker_prefers_that_speakers_turns_and_is_embedded_without_the_name(
    make_store: Callable[..., MemoryStore], batch: bool
) -> None:
    embedder = RecordingEmbedder(batch=batch)
    store = make_store(embedder=embedder)
    _chat(store)
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    embedder.calls.clear()
    result = r.recall("What calms Melanie down?", k=3, explain=True)
    assert result.plan["speakers"] == ["Melanie"]
    assert embedder.calls == [("What calms down?",)]  # the name never reaches the model
    top = result.memories[0]
    assert top.memory.text == CHAT[1] and top.explanation.multipliers["speaker"] == 2.0
    others = [m for m in result.memories if m.memory.text != CHAT[1]]
    assert all("speaker" not in m.explanation.multipliers for m in others)  # Caroline's turns, even naming Melanie
    assert top.relevance == pytest.approx(
        float(np.dot(embedder.embed_query("What calms down?"), embedder.embed_query(CHAT[1]))), abs=1e-5
    )

    # Also embedding the query as asked: one forward pass when the embedder offers a batch call.
    embedder.calls.clear()
    both = r.recall("What calms Melanie down?", k=3, config={"query": {"asked_vector_share": 0.5}})
    expected = (
        [("What calms Melanie down?", "What calms down?")]
        if batch
        else [("What calms Melanie down?",), ("What calms down?",)]
    )
    assert sorted(embedder.calls) == sorted(expected)
    assert "vector:as asked" in both.plan["lists"]

    # Off: the name stays in the query and nobody is boosted.
    embedder.calls.clear()
    off = r.recall(
        "What calms Melanie down?",
        k=3,
        config={"scoring": {"speaker_boost": 1.0}, "query": {"speaker_free_vector": False}},
        explain=True,
    )
    assert embedder.calls == [("What calms Melanie down?",)] and off.plan["speakers"] == []
    assert all("speaker" not in m.explanation.multipliers for m in off.memories)


def test_a_callers_query_vector_is_used_as_given_but_the_speaker_still_counts(
    make_store: Callable[..., MemoryStore],
) -> None:
    embedder = RecordingEmbedder(batch=True)
    store = make_store(embedder=embedder)
    _chat(store)
    embedder.calls.clear()
    result = MemoryRetriever(store, namespace="u", config=QUIET).recall(
        "What calms Melanie down?", k=3, query_vector=embedder.embed_query("pottery calm")
    )
    assert embedder.calls == []
    assert result.memories[0].memory.text == CHAT[1] and result.plan["speakers"] == ["Melanie"]


def test_a_new_speaker_is_recognised_at_once(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    _chat(store)
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    assert r.recall("What does Dana like?").plan["speakers"] == []
    store.add("Dana: I like sailing", namespace="u", kind="message", session_id="s1")
    assert r.recall("What does Dana like?").plan["speakers"] == ["Dana"]  # no wait for the cache to age
    assert "Dana" in asyncio.run(store.aspeakers("u")) and asyncio.run(store.aspeakers("nobody")) == frozenset()


def test_a_query_naming_a_date_boosts_and_searches_that_days_memories(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    days = [datetime(2022, 11, d, 18, tzinfo=timezone.utc) for d in (8, 9, 10)]
    store.add_many(
        [
            {"text": f"Nate: I made coconut ice cream, batch {i}", "kind": "message", "created_at": d}
            for i, d in enumerate(days)
        ],
        namespace="u",
    )
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    result = r.recall("What did Nate make on 9 November, 2022?", k=3, explain=True)
    assert result.plan["dates"] == [["2022-11-09T00:00:00+00:00", "2022-11-10T00:00:00+00:00"]]
    assert "dated" in result.plan["channels"] and "dated" in result.plan["lists"]
    top = result.memories[0]
    assert top.memory.created_at == days[1] and top.explanation.multipliers["date"] == 2.0
    assert [c.label for c in top.explanation.channels if c.channel == "dated"] == ["dated"]
    assert all("date" not in m.explanation.multipliers for m in result.memories[1:])
    plain = r.recall("What did Nate make?", k=3)
    assert "dated" not in plain.plan["channels"] and plain.plan["dates"] == []
    off = r.recall(
        "What did Nate make on 9 November, 2022?", k=3, config={"weights": {"dated": 0}, "scoring": {"date_boost": 1.0}}
    )
    assert "dated" not in off.plan["lists"]


def test_imported_history_names_its_speakers_however_old(
    make_store: Callable[..., MemoryStore], clock, monkeypatch
) -> None:
    # The speakers are read from the messages written last, not created last: a chat imported
    # with its original (old) times into a busy namespace still has speakers (found by the 1M
    # needles benchmark, where the hidden conversation's speakers were never read).
    from memory_retrievers.storage import search

    monkeypatch.setattr(search, "SPEAKER_SAMPLE", 2)
    store = make_store()
    for name in ("Ann", "Ben", "Cat"):
        clock.advance(minutes=1)
        store.add(f"{name}: hello", namespace="u", kind="message", session_id="now")
    clock.advance(minutes=1)
    store.add(
        "Dana: I like sailing", namespace="u", kind="message", created_at=datetime(2020, 1, 1, tzinfo=timezone.utc)
    )
    fresh = make_store()  # another process: nothing learnt from commits, the first read decides
    assert "Dana" in asyncio.run(fresh.aspeakers("u"))
    assert MemoryRetriever(fresh, namespace="u", config=QUIET).recall("What does Dana like?").plan["speakers"] == [
        "Dana"
    ]
