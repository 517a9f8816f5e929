"""FakeRecallSource: an in-memory recall source that ranks like the store's and keeps its contract."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_retrievers import ConfigError, FtsField, HashEmbedder, Memory, MemoryKind, MemoryStore
from memory_retrievers.recall import RecallSource
from memory_retrievers.testing import FakeRecallSource
from memory_retrievers.text.dates import DateSpan

TEXTS = [
    "the kettle is in the kitchen",
    "Alice: the kettle kettle whistles",
    "Bob: tea at five in the garden",
    "Alice: my dog Rex sleeps in the kitchen",
]


def test_it_is_a_recall_source() -> None:
    assert isinstance(FakeRecallSource(TEXTS), RecallSource)


async def test_text_search_ranks_by_bm25_and_returns_only_matches() -> None:
    source = FakeRecallSource(TEXTS)
    hits = await source.text_search("kettle", FtsField.TEXT, 10)
    assert hits.ids == ("m1", "m0")  # twice the word in a text of the same length ranks first
    assert hits.scores[0] > hits.scores[1] > 0
    assert (await source.text_search("kettle", FtsField.TEXT, 1)).ids == ("m1",)
    assert (await source.text_search("", FtsField.TEXT, 10)).ids == ()


async def test_words_are_matched_as_the_full_text_index_matches_them() -> None:
    source = FakeRecallSource(["she drinks tea", "he was running late", "Café crème at the station"])
    assert (await source.text_search("drink", FtsField.TEXT, 5)).ids == ("m0",)  # endings stemmed
    assert (await source.text_search("run", FtsField.TEXT, 5)).ids == ("m1",)
    assert (await source.text_search("cafe creme", FtsField.TEXT, 5)).ids == ("m2",)  # accents folded
    assert (await source.text_search("the", FtsField.TEXT, 5)).ids == ()  # a stop word matches nothing


async def test_replaced_and_expired_memories_are_left_out_as_recall_leaves_them_out() -> None:
    past = datetime.now(timezone.utc) - timedelta(days=1)
    source = FakeRecallSource(
        [
            {"text": "I live in Lisbon", "superseded_by": "m1"},
            {"text": "I live in Berlin now"},
            {"text": "the Lisbon flat viewing is today", "expires_at": past},
        ]
    )
    assert (await source.text_search("live lisbon berlin", FtsField.TEXT, 5)).ids == ("m1",)
    assert await source.fetch(["m0", "m1", "m2"]) == ("m1",)


async def test_context_and_entity_fields() -> None:
    source = FakeRecallSource(
        [
            {"text": "the flat has a view", "context": "Lisbon is sunny", "entities": ["Alfama"]},
            {"text": "Lisbon again", "entities": ["Lisbon"]},
        ]
    )
    assert (await source.text_search("lisbon", FtsField.TEXT, 5)).ids == ("m1",)
    assert set((await source.text_search("lisbon", FtsField.CONTEXT, 5)).ids) == {"m0", "m1"}
    assert (await source.text_search("lisbon", FtsField.CONTEXT, 5, with_context_only=True)).ids == ("m0",)
    assert (await source.text_search("alfama", FtsField.ENTITIES, 5)).ids == ("m0",)


async def test_vector_search_is_cosine_within_the_dates_given() -> None:
    embedder = HashEmbedder(64)
    may = datetime(2024, 5, 1, tzinfo=timezone.utc)
    june = datetime(2024, 6, 1, tzinfo=timezone.utc)
    source = FakeRecallSource(
        [{"text": "tea at five", "created_at": may}, {"text": "tea at five today", "created_at": june}],
        embedder=embedder,
    )
    hits = await source.vector_search(embedder.embed_query("tea at five"), 5)
    assert hits.ids == ("m0", "m1") and hits.scores[0] == pytest.approx(1.0, abs=1e-5)
    in_june = await source.vector_search(
        embedder.embed_query("tea at five"), 5, within=[DateSpan(june, june.replace(month=7))]
    )
    assert in_june.ids == ("m1",)


async def test_entity_and_recency_search_break_ties_newest_first() -> None:
    source = FakeRecallSource(
        [
            {"text": "a", "entities": ["Alice"]},
            {"text": "b", "entities": ["alice", "Bob"]},
            {"text": "c", "entities": ["Alice"]},
            {"text": "d"},
        ]
    )
    assert (await source.entity_search(["ALICE", "bob"], 10)).ids == ("m1", "m2", "m0")
    assert (await source.recency_search(2)).ids == ("m3", "m2")


async def test_an_id_is_resolved_only_once_a_search_or_fetch_returned_it() -> None:
    source = FakeRecallSource(TEXTS)
    with pytest.raises(KeyError, match="m3"):
        source.memory("m3")
    with pytest.raises(KeyError):
        source.vector("m3")
    assert await source.fetch(["m3", "nope", "m3"]) == ("m3",)
    assert source.memory("m3").text == TEXTS[3] and source.vector("m3").shape == (64,)
    assert source.handed_out == {"m3"}
    await source.text_search("tea", FtsField.TEXT, 5)
    assert source.handed_out == {"m2", "m3"}
    assert [m.id for m in source.memories_of(["m2", "m3"])] == ["m2", "m3"]


async def test_speakers_entities_and_namespace() -> None:
    messages = [{"text": t, "kind": MemoryKind.MESSAGE} for t in TEXTS]
    source = FakeRecallSource([*messages, Memory(id="x", namespace="elsewhere", text="no speaker here")], namespace="u")
    assert await source.speakers() == {"Alice", "Bob"}  # as the store reads them: messages only
    assert await FakeRecallSource(TEXTS).speakers() == frozenset()
    assert not await source.has_entities()
    assert source.namespace == "u" and (await source.fetch(["x"])) == ("x",) and source.memory("x").namespace == "u"
    assert await FakeRecallSource([{"text": "t", "entities": ["E"]}]).has_entities()


@pytest.mark.parametrize(
    ("memories", "message"),
    [
        ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], "id 'a' is given twice"),
        ([{"text": "x", "colour": "red"}], r"memories\[0\]"),
        ([{"no": "text"}], r"memories\[0\] must be a text"),
        ([42], r"memories\[0\] must be a text"),
    ],
)
def test_bad_memories_are_a_config_error(memories: list[object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FakeRecallSource(memories)  # type: ignore[arg-type]


async def test_its_top_hits_agree_with_a_real_stores_source(store: MemoryStore) -> None:
    # The same texts and embedder in a real store: the best BM25 and vector hit of each query agree.
    added = store.add_many([{"text": t} for t in TEXTS], namespace="u", dedup=False)
    real = await store.arecall_source("u")
    fake = FakeRecallSource(TEXTS, embedder=store.embedder)
    to_fake = {m.id: f"m{i}" for i, m in enumerate(added)}
    for query in ("kettle", "kitchen dog", "tea garden"):
        real_text = await real.text_search(query, FtsField.TEXT, 5)
        fake_text = await fake.text_search(query, FtsField.TEXT, 5)
        assert to_fake[real_text.ids[0]] == fake_text.ids[0], query
        vector = store.embedder.embed_query(query)
        assert to_fake[(await real.vector_search(vector, 5)).ids[0]] == (await fake.vector_search(vector, 5)).ids[0]
