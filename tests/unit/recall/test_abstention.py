"""No wrong abstention: a question about the user whose subject the memories hold gets a block (issue 39 item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from memory_retrievers.recall.abstention import asks_about_the_user, held_subject


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where do I live now?", True),
        ("what's our Japan budget?", True),
        ("am I still vegetarian?", True),
        ("How do I rebase a git branch onto main?", False),  # a how-to asks for knowledge
        ("how to boil an egg", False),
        ("What's the capital of Mongolia?", False),
        ("When did Caroline go to the support group?", False),  # third person, as LoCoMo asks
    ],
)
def test_which_questions_are_about_the_user(query: str, expected: bool) -> None:
    assert asks_about_the_user(query) is expected


def test_a_subject_is_held_when_a_short_statement_says_its_word() -> None:
    said = ["user: I live in Lisbon", "user: my team is 5 people", "assistant: " + "log line with car\n" * 40]
    assert held_subject("where do I live now?", said) == "live"
    assert held_subject("how many people are on my team?", said) == "people"
    assert held_subject("what car do I drive?", said) is None  # only a paste says "car"
    assert held_subject("what's my favourite colour?", said) is None
    assert held_subject("what do I do now?", said) is None  # no subject word at all


ALWAYS = {"relevance": {"abstain_below": 1.0, "abstain_relevance": 1.0}}  # abstain whenever allowed


def test_recall_does_not_abstain_on_a_question_about_a_subject_the_user_spoke_of(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(64)) as store:
        store.add("user: I live in Lisbon, near the river", namespace="m", kind="message")
        store.add("user: the cat knocked over the monstera again", namespace="m", kind="message")
        retriever = MemoryRetriever(store, namespace="m", config=ALWAYS)
        held = retriever.recall("where do I live now?")
        assert "Lisbon" in held.to_context()
        assert any("did not abstain" in n and "'live'" in n for n in held.plan["notes"])
        for query in ("What's the capital of Mongolia?", "what's my favourite colour?", "how do I live stream?"):
            empty = retriever.recall(query)
            assert empty.memories == (), query
            assert any(n.startswith("abstained") for n in empty.plan["notes"]), query
