"""A recall call's own arguments (encoding, weights, boosts), its limits, its cut reasons, and its cancellation.

First written as regressions of the defects found while splitting the store and the recall pipeline
(issue 28); each failed on the code before its fix.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memory_retrievers import (
    ConfigError,
    CutReason,
    EmbeddingError,
    HashEmbedder,
    InvalidInputError,
    MemoryRetriever,
    MemoryStore,
    TiktokenCounter,
)
from memory_retrievers.validation import MAX_QUERY_CHARS

QUIET = {"scoring": {"decay": "none"}, "selection": {"mmr": False}, "record_access": False}


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
    store.add("assistant: I don't think you've told me about apples and pears, note 9", namespace="u", kind="message")
    assert CutReason.HEDGE in reasons(10, None, 0.0)
    assert set(CutReason) == {
        CutReason.K_CAP,
        CutReason.OVER_BUDGET,
        CutReason.BELOW_FLOOR,
        CutReason.BELOW_RELEVANCE,
        CutReason.BELOW_SCORE,
        CutReason.ABSTAINED,
        CutReason.COPY,
        CutReason.HEDGE,
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
