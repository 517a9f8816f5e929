"""Every bad input gets a typed error with a clear message, and the table is left unchanged."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import lancedb
import numpy as np
import pytest

from memory_retrievers import (
    DimensionMismatchError,
    EmbeddingError,
    FilterError,
    HashEmbedder,
    InvalidInputError,
    MemoryRetriever,
    MemoryRetrieversError,
    MemoryStore,
    NotFoundError,
)

HOSTILE = "x' OR '1'='1"


def snapshot(store: MemoryStore) -> tuple[int, list[tuple[str, str, str]]]:
    tbl = lancedb.connect(store.uri).open_table(store.table_name)
    rows = tbl.to_arrow().select(["namespace", "id", "text"]).to_pylist()
    return tbl.version, sorted((r["namespace"], r["id"], r["text"]) for r in rows)


@pytest.fixture
def seeded(store: MemoryStore) -> Iterator[MemoryStore]:
    store.add("alice's secret is the blue door", namespace="alice", id="a1")
    store.add("bob's secret is the red door", namespace=HOSTILE, id="b1")
    yield store


BAD_WRITES: list[tuple[str, Callable[[MemoryStore], object], type[Exception], str]] = [
    ("empty text", lambda s: s.add("", namespace="alice"), InvalidInputError, "empty"),
    ("whitespace text", lambda s: s.add(" \n\t ", namespace="alice"), InvalidInputError, "empty"),
    ("huge text", lambda s: s.add("x" * 1_000_001, namespace="alice"), InvalidInputError, "max_text_chars"),
    ("NUL text", lambda s: s.add("a\x00b", namespace="alice"), InvalidInputError, "NUL"),
    ("surrogate text", lambda s: s.add("a\udc80b", namespace="alice"), InvalidInputError, "surrogate"),
    ("non-str text", lambda s: s.add(123, namespace="alice"), InvalidInputError, "must be a str"),  # type: ignore[arg-type]
    ("list text", lambda s: s.add(["a"], namespace="alice"), InvalidInputError, "must be a str"),  # type: ignore[arg-type]
    ("priority high", lambda s: s.add("x", namespace="alice", priority=10.5), InvalidInputError, "priority"),
    ("priority str", lambda s: s.add("x", namespace="alice", priority="1"), InvalidInputError, "priority"),
    ("unknown field", lambda s: s.add("x", namespace="alice", colour="red"), InvalidInputError, "unknown field"),
    ("empty namespace", lambda s: s.add("x", namespace=""), InvalidInputError, "namespace"),
    ("None namespace", lambda s: s.add("x", namespace=None), InvalidInputError, "namespace"),  # type: ignore[arg-type]
    ("NUL namespace", lambda s: s.add("x", namespace="a\x00"), InvalidInputError, "NUL"),
    ("wrong vector dim", lambda s: s.add("x", namespace="alice", vector=[0.1] * 31), DimensionMismatchError, "31-dim"),
    ("NaN vector", lambda s: s.add("x", namespace="alice", vector=[float("nan")] * 32), EmbeddingError, "NaN"),
    ("inf vector", lambda s: s.add("x", namespace="alice", vector=[float("inf")] * 32), EmbeddingError, "NaN or inf"),
    ("text vector", lambda s: s.add("x", namespace="alice", vector="abc"), EmbeddingError, "numeric"),
    (
        "bad record in batch",
        lambda s: s.add_many([{"text": "ok"}, {"text": None}], namespace="alice"),
        InvalidInputError,
        "record 1",
    ),
    ("bad metadata", lambda s: s.add("x", namespace="alice", metadata={"a": {1, 2}}), InvalidInputError, "JSON"),
    ("update missing", lambda s: s.update("nope", namespace="alice", text="y"), NotFoundError, "nope"),
    ("update other ns", lambda s: s.update("b1", namespace="alice", text="y"), NotFoundError, "b1"),
    ("update bad priority", lambda s: s.update("a1", namespace="alice", priority=-1), InvalidInputError, "priority"),
    ("update empty text", lambda s: s.update("a1", namespace="alice", text=""), InvalidInputError, "empty"),
    ("delete missing", lambda s: s.delete(["a1", "zz"], namespace="alice"), NotFoundError, "nothing was deleted"),
    ("delete other ns", lambda s: s.delete(["b1"], namespace="alice"), NotFoundError, "b1"),
    ("delete empty ids", lambda s: s.delete([], namespace="alice"), InvalidInputError, "empty"),
    ("supersede missing", lambda s: s.supersede("zz", "new", namespace="alice"), NotFoundError, "zz"),
    ("supersede bad text", lambda s: s.supersede("a1", "", namespace="alice"), InvalidInputError, "empty"),
    ("get missing", lambda s: s.get(["zz"], namespace="alice"), NotFoundError, "zz"),
    ("get other ns", lambda s: s.get("b1", namespace="alice"), NotFoundError, "b1"),
    ("get bytes ids", lambda s: s.get(b"a1", namespace="alice"), InvalidInputError, "ids must be"),  # type: ignore[call-overload]
    (
        "malformed filter key",
        lambda s: s.list("alice", filter={"namespace": HOSTILE}),
        FilterError,
        "unknown filter key",
    ),
    ("filter sql string", lambda s: s.count("alice", filter="1=1"), FilterError, "must be a MemoryFilter"),  # type: ignore[arg-type]
    (
        "filter wrong type",
        lambda s: s.fts_search("door", namespace="alice", filter={"kinds": [3]}),
        FilterError,
        "kinds",
    ),
    ("empty query", lambda s: s.fts_search("  ", namespace="alice"), InvalidInputError, "empty"),
    ("huge query", lambda s: s.vector_search("q" * 9000, namespace="alice"), InvalidInputError, "query"),
    ("k zero", lambda s: s.vector_search("door", namespace="alice", k=0), InvalidInputError, "k must be"),
    ("k negative", lambda s: s.fts_search("door", namespace="alice", k=-3), InvalidInputError, "k must be"),
    ("k float", lambda s: s.recency_search(namespace="alice", k=2.5), InvalidInputError, "k must be"),  # type: ignore[arg-type]
    (
        "bad fts field",
        lambda s: s.fts_search("door", namespace="alice", field="text; drop"),
        InvalidInputError,
        "field must be one of text, context, entities",
    ),
    ("query vector dim", lambda s: s.vector_search(np.ones(7), namespace="alice"), DimensionMismatchError, "7-dim"),
    ("list limit 0", lambda s: s.list("alice", limit=0), InvalidInputError, "limit"),
    ("list negative offset", lambda s: s.list("alice", offset=-1), InvalidInputError, "offset"),
]


@pytest.mark.parametrize(("case", "call", "error", "message"), BAD_WRITES, ids=[c[0] for c in BAD_WRITES])
def test_bad_input_raises_typed_error_and_changes_nothing(
    seeded: MemoryStore, case: str, call: Callable[[MemoryStore], object], error: type[Exception], message: str
) -> None:
    before = snapshot(seeded)
    with pytest.raises(error, match=message) as info:
        call(seeded)
    assert isinstance(info.value, MemoryRetrieversError)
    assert snapshot(seeded) == before
    # still readable and searchable afterwards
    assert seeded.fts_search("door", namespace="alice")[0].id == "a1"


class BrokenEmbedder(HashEmbedder):
    def __init__(self, mode: str) -> None:
        super().__init__(32)
        self.mode = mode

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        if self.mode == "raise":
            raise RuntimeError("model crashed")
        if self.mode == "nan":
            return np.full((len(texts), 32), np.nan, dtype=np.float32)
        if self.mode == "short":
            return np.zeros((len(texts) - 1, 32), dtype=np.float32)
        return np.zeros((len(texts), 16), dtype=np.float32)


@pytest.mark.parametrize(
    ("mode", "error", "message"),
    [
        ("raise", EmbeddingError, "model crashed"),
        ("nan", EmbeddingError, "NaN"),
        ("short", EmbeddingError, "shape"),
        ("narrow", DimensionMismatchError, "16-dimensional"),
    ],
)
def test_misbehaving_embedder_is_caught_at_the_boundary(
    make_store, mode: str, error: type[Exception], message: str
) -> None:
    good = make_store()
    good.add("existing memory", namespace="n")
    good.close()
    store = make_store(embedder=BrokenEmbedder(mode))
    before = snapshot(store)
    with pytest.raises(error, match=message):
        store.add_many([{"text": "a"}, {"text": "b"}], namespace="n")
    assert snapshot(store) == before


def test_unicode_text_is_stored_verbatim(store: MemoryStore) -> None:
    texts = ["Zoë's café ☕", "中文记忆", "emoji 🎉👍🏽", "RTL עברית", "quote ' and \" and \\", "x' OR '1'='1"]
    out = store.add_many([{"text": t} for t in texts], namespace="n")
    assert [m.text for m in store.get([m.id for m in out], namespace="n")] == texts
    assert store.fts_search("café", namespace="n")[0].id == out[0].id


@pytest.mark.parametrize("size", [1e30, 3e38, 1e-30, 1e-40])
def test_item15_a_vector_whose_length_overflows_float32_keeps_its_direction(store: MemoryStore, size: float) -> None:
    # Issue 27 item 15: [1e30] * d has a float32 length of inf (and [1e-30] * d of 0), so it was
    # refused as "all zeros" on write and vector_search with it returned [] without a word.
    dim = store.embedder.dimension
    direction = np.zeros(dim, dtype=np.float32)
    direction[:2] = 1.0
    store.add("first memory", namespace="u", vector=direction, dedup=False)
    store.add("second memory", namespace="u", vector=-direction, dedup=False)
    given = direction * np.float32(size)
    assert [h.id for h in store.vector_search(given, namespace="u", k=2)] == [
        h.id for h in store.vector_search(direction, namespace="u", k=2)
    ]
    added = store.add("third memory", namespace="u", vector=given, dedup=False)
    stored = np.asarray(store.get(added.id, namespace="u", include_vector=True).vector)
    assert np.allclose(stored, direction / np.linalg.norm(direction), atol=1e-6)
    recalled = MemoryRetriever(store, namespace="u").recall("memory", k=3, query_vector=given, token_budget=None)
    assert recalled.memories


def test_item15_a_vector_that_is_zero_in_float32_is_refused_as_such(store: MemoryStore) -> None:
    tiny = [1e-46] * store.embedder.dimension  # below float32's smallest subnormal: every value becomes 0
    with pytest.raises(InvalidInputError, match="all zeros"):
        store.vector_search(tiny, namespace="u")
    with pytest.raises(InvalidInputError, match="all zeros"):
        store.add("x", namespace="u", vector=tiny)
