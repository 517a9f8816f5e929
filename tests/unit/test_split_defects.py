"""Regression tests for the defects found while splitting the store and the recall pipeline.

Each test is named after the defect it pins; each failed on the code before the fix.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import lancedb
import numpy as np
import pytest

from memory_retrievers import (
    ConfigError,
    CutReason,
    DimensionMismatchError,
    EmbedderMismatchError,
    EmbeddingError,
    HashEmbedder,
    InvalidInputError,
    MemoryRetriever,
    MemoryStore,
    SchemaMismatchError,
    StorageError,
    TiktokenCounter,
    WriteAction,
)
from memory_retrievers.validation import MAX_QUERY_CHARS

QUIET = {"scoring": {"decay": "none"}, "selection": {"mmr": False}, "record_access": False}


def version(store: MemoryStore) -> int:
    return int(lancedb.connect(store.uri).open_table(store.table_name).version)


# ---------------------------------------------------------------- dedup_policy="update" in one batch
def test_update_policy_with_two_duplicates_of_a_stored_memory_in_one_batch(make_store) -> None:
    store = make_store(config={"dedup_policy": "update"})
    first = store.add("Alice likes the dark theme", namespace="u")
    out = store.add_many(
        [{"text": "Alice likes the dark  theme"}, {"text": "Alice likes the dark theme!"}], namespace="u"
    )
    assert [r.action for r in out] == [WriteAction.UPDATED, WriteAction.UPDATED]
    assert [r.id for r in out] == [first.id, first.id]
    assert [r.duplicate_of for r in out] == [first.id, first.id]
    assert store.count("u") == 1
    assert store.get(first.id, namespace="u").text == "Alice likes the dark theme!"  # the last record wins


def test_update_policy_with_a_duplicate_inside_the_batch_after_an_earlier_batch(make_store) -> None:
    store = make_store(config={"dedup_policy": "update"})
    out = store.add_many(
        [
            {"text": "a note about tea"},
            {"text": "a note about coffee"},
            {"text": "plans for Friday"},
            {"text": "plans for Friday."},
        ],
        namespace="u",
        batch_size=2,
    )
    assert [r.action for r in out] == [WriteAction.ADDED, WriteAction.ADDED, WriteAction.ADDED, WriteAction.UPDATED]
    assert out[2].id == out[3].id and out[3].duplicate_of == out[2].id
    assert out[2].text == out[3].text == "plans for Friday."  # both report the memory as it was stored
    assert store.count("u") == 3


# ---------------------------------------------------------------- caller vectors that are not unit length
def test_caller_vectors_longer_than_one_do_not_swallow_distinct_memories(make_store) -> None:
    store = make_store()
    rng = np.random.default_rng(7)
    directions = rng.standard_normal((100, 32))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    out = store.add_many([{"text": f"record {i}", "vector": 3 * d} for i, d in enumerate(directions)], namespace="u")
    assert all(r.action is WriteAction.ADDED for r in out) and store.count("u") == 100
    uniform = rng.uniform(0.0, 1.0, (40, 32))  # all positive: dot products far above 0.95 unnormalised
    out = store.add_many([{"text": f"uniform {i}", "vector": v} for i, v in enumerate(uniform)], namespace="w")
    assert all(r.action is WriteAction.ADDED for r in out) and store.count("w") == 40
    stored = store.get(out[0].id, namespace="w", include_vector=True)
    assert np.linalg.norm(stored.vector) == pytest.approx(1.0, abs=1e-5)
    # A true near duplicate is still found, whatever its length.
    again = store.add("uniform 0.", namespace="w", vector=5 * uniform[0])  # same words, same direction
    assert again.action is WriteAction.SKIPPED and again.duplicate_of == out[0].id


def test_caller_vectors_rank_the_same_with_and_without_the_namespace_view(make_store, tmp_path: Path) -> None:
    store = make_store()
    rng = np.random.default_rng(3)
    vectors = rng.uniform(0.1, 1.0, (30, 32)) * rng.uniform(0.5, 4.0, (30, 1))  # varied lengths
    store.add_many([{"text": f"item {i}", "vector": v} for i, v in enumerate(vectors)], namespace="u", dedup=False)
    flat = MemoryStore(Path(store.uri), embedder=store.embedder, config={"recall_view_max_rows": 0})
    config = {**QUIET, "mode": "vector"}
    query = rng.uniform(0.1, 1.0, 32) * 7
    with_view = MemoryRetriever(store, namespace="u", config=config).recall("item", query_vector=query, k=10)
    without = MemoryRetriever(flat, namespace="u", config=config).recall("item", query_vector=query, k=10)
    assert [m.id for m in with_view.memories] == [m.id for m in without.memories]
    scaled, plain = store.vector_search(query, namespace="u", k=5), store.vector_search(query / 7, namespace="u", k=5)
    assert [h.id for h in scaled] == [h.id for h in plain]
    assert [h.score for h in scaled] == pytest.approx([h.score for h in plain], abs=1e-6)
    flat.close()


def test_an_all_zero_caller_vector_is_refused_naming_the_record(make_store) -> None:
    store = make_store()
    before = version(store)
    with pytest.raises(InvalidInputError, match=r"record 3.*all zeros"):
        store.add_many(
            [{"text": f"t {i}", "vector": [0.0] * 32 if i == 3 else [1.0] * 32} for i in range(5)],
            namespace="u",
            dedup=False,
        )
    assert version(store) == before and store.count("u") == 0


# ---------------------------------------------------------------- supersede, then delete the successor
def test_deleting_the_successor_makes_the_superseded_memory_live_again(store: MemoryStore) -> None:
    old = store.add("Alice lives in Paris", namespace="u")
    new = store.supersede(old.id, "Alice lives in Berlin", namespace="u")
    assert store.get(old.id, namespace="u").superseded_by == new.id
    before = version(store)
    assert store.delete(new.id, namespace="u") == 1
    assert version(store) == before + 1  # restored and deleted in one commit
    assert store.get(old.id, namespace="u").superseded_by is None
    assert [h.id for h in store.fts_search("Alice lives", namespace="u")] == [old.id]
    assert [
        m.id for m in MemoryRetriever(store, namespace="u", config=QUIET).recall("where does Alice live").memories
    ] == [old.id]


def test_deleting_both_ends_of_a_supersession_restores_nothing(store: MemoryStore) -> None:
    old = store.add("the meeting is on Monday", namespace="u")
    new = store.supersede(old.id, "the meeting moved to Tuesday", namespace="u")
    store.add("an unrelated memory", namespace="u")
    assert store.delete([old.id, new.id], namespace="u") == 2
    assert store.count("u", filter={"include_superseded": True}) == 1


# ---------------------------------------------------------------- per-call token_encoding
def test_per_call_token_encoding_counts_with_that_encoding(store: MemoryStore) -> None:
    store.add("東京の天気は晴れです。明日は雨が降るでしょう。", namespace="u")
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    default = r.recall("天気")
    other = r.recall("天気", config={"selection": {"token_encoding": "o200k_base"}})
    cl100k, o200k = TiktokenCounter("cl100k_base"), TiktokenCounter("o200k_base")
    assert cl100k.count(default.to_context()) != o200k.count(default.to_context())  # the test can tell them apart
    assert default.tokens_used == cl100k.count(default.to_context())
    assert other.tokens_used == o200k.count(other.to_context())


def test_per_call_token_encoding_with_a_given_counter_is_an_error(store: MemoryStore) -> None:
    store.add("a memory", namespace="u")
    r = MemoryRetriever(store, namespace="u", token_counter=TiktokenCounter("cl100k_base"))
    with pytest.raises(ConfigError, match="token_counter"):
        r.recall("memory", config={"selection": {"token_encoding": "o200k_base"}})


# ---------------------------------------------------------------- per-call config overrides
def test_per_call_weight_override_keeps_the_retrievers_other_weights(store: MemoryStore) -> None:
    store.add("the kettle is in the kitchen", namespace="u")
    r = MemoryRetriever(store, namespace="u", config={**QUIET, "weights": {"context": 0.0, "vector": 2.0}})
    res = r.recall("kettle", config={"weights": {"bm25": 1.5}})
    assert "context" not in res.plan["channels"]  # the retriever's 0 stays
    (m,) = res.memories
    weights = {c.label: c.weight for c in m.explanation.channels}
    assert weights["vector"] == 2.0 * 2.0 and weights["bm25"] == 1.5 * 2.0  # x original_query_weight


def test_per_call_kind_boost_override_keeps_the_other_kinds(store: MemoryStore) -> None:
    store.add("raw log line about kettles", namespace="u", kind="raw")
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    (m,) = r.recall("kettles", config={"scoring": {"kind_boosts": {"insight": 2.0}}}).memories
    assert m.explanation.multipliers["kind"] == 0.5  # raw's default boost survives the override


# ---------------------------------------------------------------- wrong embedder at open
@pytest.mark.parametrize("other", [HashEmbedder(64), HashEmbedder(32, name="another-model")])
def test_a_wrong_embedder_at_open_raises_one_error_type(store: MemoryStore, other: HashEmbedder) -> None:
    store.add("x", namespace="u")
    with pytest.raises(EmbedderMismatchError, match="pass the original embedder") as info:
        MemoryStore(Path(store.uri), embedder=other)
    assert isinstance(info.value, SchemaMismatchError) and isinstance(info.value, DimensionMismatchError)


# ---------------------------------------------------------------- use after close
def test_record_access_after_close_raises(make_store) -> None:
    store = make_store()
    mem = store.add("x", namespace="u")
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.record_access([mem.id], namespace="u")


# ---------------------------------------------------------------- dead configuration and enum members
def test_embed_batch_size_sets_the_texts_per_embedder_call(make_store) -> None:
    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(32)
            self.calls: list[int] = []

        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            self.calls.append(len(texts))
            return self.embed_documents(texts)

    embedder = Counting()
    store = make_store(embedder=embedder, config={"embed_batch_size": 2})
    store.add_many([{"text": f"distinct text number {i}"} for i in range(5)], namespace="u", dedup=False)
    assert embedder.calls == [2, 2, 1]


def test_every_cut_reason_is_produced(store: MemoryStore) -> None:
    store.add_many([{"text": f"apples and pears, note {i} " + "x " * (40 * i)} for i in range(6)], namespace="u")
    store.add_many([{"text": "user: Apples and pears, note 0!", "kind": "message"}], namespace="u")  # a copy

    def reasons(k: int, budget: int | None, floor: float, least: float = 0.0, **more: object) -> set[CutReason]:
        cfg = {**QUIET, "relevance": {"relevance_floor": floor, "min_relevance": least, **more}}
        r = MemoryRetriever(store, namespace="u", config=cfg)
        return {c.reason for c in r.recall("apples pears note 5", k=k, token_budget=budget, explain=True).cut}

    assert CutReason.K_CAP in reasons(1, None, 0.0)
    assert CutReason.OVER_BUDGET in reasons(10, 60, 0.0)
    assert CutReason.BELOW_FLOOR in reasons(10, None, 0.99)
    assert CutReason.BELOW_RELEVANCE in reasons(10, None, 0.0, 0.99)
    assert CutReason.BELOW_SCORE in reasons(10, None, 0.0, min_score=0.999)
    assert CutReason.ABSTAINED in reasons(10, None, 0.0, abstain_below=0.999)
    store.add("apples and pears, note 0", namespace="u", kind="message", dedup=False)
    assert CutReason.COPY in reasons(10, None, 0.0)
    assert set(CutReason) == {
        CutReason.K_CAP,
        CutReason.OVER_BUDGET,
        CutReason.BELOW_FLOOR,
        CutReason.BELOW_RELEVANCE,
        CutReason.BELOW_SCORE,
        CutReason.ABSTAINED,
        CutReason.COPY,
    }


# ---------------------------------------------------------------- query-length limits
def test_one_query_length_limit_for_every_search_primitive(filled_store_for_limits: MemoryStore) -> None:
    store = filled_store_for_limits
    ok, too_long = "tea " * (MAX_QUERY_CHARS // 4), "tea " * (MAX_QUERY_CHARS // 4) + "x"
    assert len(ok) == MAX_QUERY_CHARS
    for call in (lambda q: store.fts_search(q, namespace="u"), lambda q: store.vector_search(q, namespace="u")):
        call(ok)
        with pytest.raises(InvalidInputError, match="query"):
            call(too_long)


def test_recall_takes_a_long_query_and_its_cap_is_a_setting_the_error_names(
    filled_store_for_limits: MemoryStore,
) -> None:
    r = MemoryRetriever(filled_store_for_limits, namespace="u", config=QUIET)
    pasted = "Here is my log: " + "worker timeout " * 400 + "Do I drink green tea?"
    assert len(pasted) > MAX_QUERY_CHARS
    result = r.recall(pasted)
    assert [m.text for m in result.memories] == ["green tea every morning"]
    assert result.query == pasted and any("long query" in note for note in result.plan["notes"])
    with pytest.raises(InvalidInputError, match=r"over RecallConfig.query.max_query_chars \(1,000\)"):
        r.recall(pasted, config={"query": {"max_query_chars": 1_000}})


@pytest.fixture
def filled_store_for_limits(store: MemoryStore) -> MemoryStore:
    store.add("green tea every morning", namespace="u")
    return store


# ---------------------------------------------------------------- cancellation
async def test_a_failed_recall_cancels_its_llm_calls(tmp_path: Path) -> None:
    class BrokenQueries(HashEmbedder):
        async def aembed_query(self, text):  # type: ignore[no-untyped-def]
            await asyncio.sleep(0.05)
            raise RuntimeError("embedding service down")

    state = {"started": 0, "cancelled": 0}

    class HangingLLM:
        def complete(self, prompt: str) -> str:  # pragma: no cover - async path only
            raise AssertionError

        async def acomplete(self, prompt: str) -> str:
            state["started"] += 1
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                state["cancelled"] += 1
                raise
            return ""

    store = await MemoryStore.aopen(tmp_path / "db", embedder=BrokenQueries(32))
    await store.aadd("a memory", namespace="u")
    r = MemoryRetriever(store, namespace="u", llm=HangingLLM())
    with pytest.raises(EmbeddingError, match="embedding service down"):
        await r.arecall("what about the memory?")
    assert state == {"started": 2, "cancelled": 2}  # expansion and HyDE, both stopped with the recall
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    await store.aclose()


@pytest.mark.long
def test_ctrl_c_during_a_sync_write_stops_the_write(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal, threading, time
        from memory_retrievers import HashEmbedder, MemoryStore

        class Slow(HashEmbedder):
            async def aembed_documents(self, texts):
                await asyncio.sleep(1.0)
                return self.embed_documents(texts)

        store = MemoryStore({str(tmp_path / "db")!r}, embedder=Slow(32))
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C
        try:
            store.add("a write the user interrupted", namespace="u")
        except KeyboardInterrupt:
            print("interrupted")
        time.sleep(1.5)
        print(store.count("u"))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["interrupted", "0"]
