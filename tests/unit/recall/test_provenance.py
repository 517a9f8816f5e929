"""Provenance folding: facts vote for their source turns and are folded into them."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from memory_retrievers.recall.fusion import FusedHit
from memory_retrievers.recall.provenance import fold_into_sources

NS = "u"
QUIET = {"query_expansion": {"expansion": False, "hyde": False}, "scoring": {"decay": "none"}, "record_access": False}


def hit(id_: str, score: float) -> FusedHit:
    return FusedHit(id_, score, 0.0, ())


def test_a_fact_is_folded_only_into_a_source_that_is_a_candidate() -> None:
    fused = [hit("f1", 0.9), hit("t1", 0.8), hit("f2", 0.7), hit("t9", 0.1)]
    kept, folded = fold_into_sources(fused, {"f1": ("t1", "t2"), "f2": ("t3",)})
    assert [h.id for h in kept] == ["t1", "f2", "t9"]  # f2's source is not a candidate: it stays
    assert folded == {"t1": ("f1",)}


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "db", embedder=HashEmbedder(64))
    turns = s.add_many(
        [
            {"text": "Bo: how was the weekend?", "kind": "message", "session_id": "s"},
            {"text": "Ana: we finally adopted the puppy from the shelter!", "kind": "message", "session_id": "s"},
            {"text": "Bo: so cute, what breed?", "kind": "message", "session_id": "s"},
        ],
        namespace=NS,
    )
    s.add("Ana adopted a dog named Rex.", namespace=NS, kind="fact", links=[turns[1].id])
    s.add("Ana owns a dog.", namespace=NS, kind="fact", links=["gone"])  # its source no longer exists
    return s


def test_recall_returns_the_source_turn_with_the_fact_named_on_it(store: MemoryStore) -> None:
    res = MemoryRetriever(store, namespace=NS, config=QUIET).recall("Does Ana have a dog named Rex?", k=10)
    texts = [m.text for m in res.memories]
    fact = next(m for m in store.list(NS) if m.text.startswith("Ana adopted"))
    turn = next(s for s in res.memories if s.text.startswith("Ana: we finally"))
    assert fact.text not in texts and turn.explanation.folded == (fact.id,)
    assert any(c.channel == "sources" for c in turn.explanation.channels)
    assert "Ana owns a dog." in texts  # no live source: it competes on its own
    assert any("folded" in note for note in res.plan["notes"])


def test_folding_off_lets_facts_and_turns_compete(store: MemoryStore) -> None:
    cfg = {**QUIET, "channels": {"fact_source_weight": 0.0}}
    res = MemoryRetriever(store, namespace=NS, config=cfg).recall("Does Ana have a dog named Rex?", k=10)
    assert "Ana adopted a dog named Rex." in [m.text for m in res.memories]
    assert all(s.explanation.folded == () for s in res.memories)


def test_a_filter_that_hides_the_source_keeps_the_fact(store: MemoryStore) -> None:
    res = MemoryRetriever(store, namespace=NS, config=QUIET).recall("Ana dog Rex", k=10, kinds=["fact"])
    assert "Ana adopted a dog named Rex." in [m.text for m in res.memories]


def test_the_block_shows_the_folded_fact_under_its_source_turn(store: MemoryStore) -> None:
    res = MemoryRetriever(store, namespace=NS, config=QUIET).recall("Does Ana have a dog named Rex?", k=10)
    turn = next(s for s in res.memories if s.text.startswith("Ana: we finally"))
    assert turn.note == 'fact: "Ana adopted a dog named Rex."'
    block = res.to_context()
    assert '] Ana: we finally adopted the puppy from the shelter!\n  (fact: "Ana adopted a dog named Rex.")' in block


def test_contradictions_are_shown_on_both_memories_and_paid_for(tmp_path: Path) -> None:
    from memory_retrievers import EstimateCounter

    with MemoryStore(tmp_path / "c", embedder=HashEmbedder(64)) as s:
        old = s.add("Ana likes jazz", namespace=NS, kind="fact")
        s.add("Ana does not like jazz", namespace=NS, kind="fact", metadata={"contradicts": [old.id, "deleted-id"]})
        retriever = MemoryRetriever(s, namespace=NS, config=QUIET)
        res = retriever.recall("Does Ana like jazz?", k=10)
        notes = {m.text: m.note for m in res.memories}
        assert notes == {
            "Ana likes jazz": 'contradicted by a later memory: "Ana does not like jazz"',
            "Ana does not like jazz": 'contradicts an earlier memory: "Ana likes jazz"',
        }
        assert res.tokens_used == retriever.token_counter.count(res.to_context())
        counter = EstimateCounter()
        # The notes cost tokens: a budget that fits both lines without notes no longer does.
        plain = counter.count("Relevant memories (most relevant first):\n- [2026-01-01] Ana likes jazz")
        tight = MemoryRetriever(s, namespace=NS, config=QUIET, token_counter=counter).recall(
            "Does Ana like jazz?", k=10, token_budget=plain + 25
        )
        assert tight.tokens_used <= plain + 25 and len(tight.memories) < 2
        # Once the earlier memory is deleted, the later one has nothing to be weighed against.
        s.delete(old.id, namespace=NS)
        (only,) = retriever.recall("Does Ana like jazz?", k=10).memories
        assert only.note is None
