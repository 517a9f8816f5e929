"""``ScoredMemory.relevance`` and ``RecallConfig.relevance.min_relevance`` (hash embedder, real LanceDB).

Relevance is the cosine similarity of the query and the memory, clipped to [0, 1]: unlike the
fused score it is comparable across queries, so a fixed threshold means the same thing for every
question. The real model's figures are in tests/integration/test_relevance_real_model.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memory_retrievers import ConfigError, CutReason, HashEmbedder, MemoryRetriever, MemoryStore

Make = Callable[..., MemoryStore]
FACTS = ["bob likes sushi and ramen", "bob plays cello", "the train leaves at noon"]


@pytest.fixture
def bob(make_store: Make) -> MemoryStore:
    store = make_store()
    for text in FACTS:
        store.add(text, namespace="bob", kind="fact")
    return store


def test_relevance_is_the_clipped_cosine_of_query_and_memory(bob: MemoryStore, embedder: HashEmbedder) -> None:
    result = MemoryRetriever(bob, namespace="bob").recall("sushi ramen", k=3)
    assert result.memories
    query = embedder.embed_query("sushi ramen")
    for m in result.memories:
        vector = bob.get(m.id, namespace="bob", include_vector=True).vector
        assert vector is not None
        assert m.relevance == pytest.approx(min(1.0, max(0.0, float(np.dot(query, vector)))), abs=1e-5)
        assert 0.0 <= m.relevance <= 1.0
    assert result.memories[0].text == "bob likes sushi and ramen"
    assert result.memories[0].relevance > 0.5


def test_min_relevance_cuts_what_does_not_match_and_says_why(bob: MemoryStore) -> None:
    retriever = MemoryRetriever(bob, namespace="bob", config={"relevance": {"min_relevance": 0.3}})
    answered = retriever.recall("sushi ramen", k=3, explain=True)
    assert [m.text for m in answered.memories] == ["bob likes sushi and ramen"]
    assert all(m.relevance >= 0.3 for m in answered.memories)
    assert {c.reason for c in answered.cut} == {CutReason.BELOW_RELEVANCE}
    unrelated = retriever.recall("quantum chromodynamics lecture", k=3, explain=True)
    assert unrelated.memories == ()
    assert unrelated.to_context() == ""
    # Without the threshold the same question gets the least bad memories: the noise it removes.
    assert MemoryRetriever(bob, namespace="bob").recall("quantum chromodynamics lecture", k=3).memories


def test_pinned_memories_stay_whatever_their_relevance(bob: MemoryStore) -> None:
    pinned = bob.add("always answer in French", namespace="bob", kind="preference", pinned=True)
    result = MemoryRetriever(bob, namespace="bob", config={"relevance": {"min_relevance": 0.9}}).recall(
        "quantum chromodynamics"
    )
    assert [m.id for m in result.memories] == [pinned.id]


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high", True])
def test_a_bad_min_relevance_is_a_config_error(bob: MemoryStore, bad: object) -> None:
    with pytest.raises(ConfigError, match="min_relevance"):
        MemoryRetriever(bob, namespace="bob", config={"relevance": {"min_relevance": bad}})
