"""The block an agent is handed, on the chat traffic of issue 26, with the real model and calibration.

Each scenario is one a new user ran into through the README's patterns: copies of "thanks" filling
the block, an off-topic question answered with filler, an earlier question outranking its answer,
a pasted log crashing recall, the question just asked echoed back.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_retrievers import MemoryRetriever, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.recall.calibration import MINILM_CALIBRATION
from memory_retrievers.testing import ManualClock
from memory_retrievers.text.lines import line_key

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def chatty(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> Iterator[MemoryStore]:
    """30 sessions of thanks and you're-welcomes, one fact, and two questions asked before."""
    clock = ManualClock(START)
    store = MemoryStore(tmp_path / "db", embedder=minilm, clock=clock)
    records = []
    for s in range(30):
        when = START + timedelta(days=s)
        records += [
            {"text": "user: thanks, that's helpful!", "kind": "message", "session_id": f"s{s}", "created_at": when},
            {
                "text": "assistant: You're welcome! Anything else?",
                "kind": "message",
                "session_id": f"s{s}",
                "created_at": when + timedelta(seconds=5),
            },
        ]
    store.add_many(records, namespace="u")
    store.add("user: Where does my sister live?", namespace="u", kind="message", session_id="s3")
    store.add("My sister Carla lives in Lisbon.", namespace="u")
    store.add("user: What is my secret code?", namespace="u", kind="message", session_id="s4")
    store.add("My secret code is 4471.", namespace="u")
    store.add("my daughter Mia starts school in September", namespace="u")
    clock.advance(days=31)
    yield store
    store.close()


def texts(store: MemoryStore, query: str, **kw: object) -> list[str]:
    return [m.text for m in MemoryRetriever(store, namespace="u").recall(query, **kw).memories]


def test_copies_take_one_line_and_chatter_never_outranks_the_fact(chatty: MemoryStore) -> None:
    result = MemoryRetriever(chatty, namespace="u").recall("when does Mia start school?", explain=True)
    lines = [m.text for m in result.memories]
    assert lines[0] == "my daughter Mia starts school in September"
    assert len({line_key(t) for t in lines}) == len(lines)  # no line twice
    assert lines.count("assistant: You're welcome! Anything else?") <= 1
    # The copies are still stored, and the explanation says where each went.
    assert chatter_stored(chatty) == 60
    assert {c.reason.value for c in result.cut} & {"copy", "below_score"}


def chatter_stored(store: MemoryStore) -> int:
    return sum(1 for m in store.list("u", limit=1000) if "thanks" in m.text or "welcome" in m.text)


@pytest.mark.parametrize("question", ["What is the boiling point of tungsten?", "How many moons does Neptune have?"])
def test_an_off_topic_question_gets_an_empty_block(chatty: MemoryStore, question: str) -> None:
    result = MemoryRetriever(chatty, namespace="u").recall(question)
    assert result.memories == () and result.to_context() == ""
    assert any("abstained" in note for note in result.plan["notes"])


@pytest.mark.parametrize(
    ("question", "answer", "asked"),
    [
        ("where does my sibling live?", "My sister Carla lives in Lisbon.", "user: Where does my sister live?"),
        ("What is my secret code?", "My secret code is 4471.", "user: What is my secret code?"),
    ],
)
def test_an_earlier_question_never_outranks_its_answer(
    chatty: MemoryStore, question: str, answer: str, asked: str
) -> None:
    lines = texts(chatty, question)
    assert lines[0] == answer
    assert asked not in lines[:1]


def test_the_question_just_asked_is_not_echoed(chatty: MemoryStore) -> None:
    lines = texts(chatty, "What is my secret code?", exclude_texts=["user: what is my secret code?"])
    assert "user: What is my secret code?" not in lines and lines[0] == "My secret code is 4471."


def test_a_pasted_log_is_recalled_for_not_refused(chatty: MemoryStore) -> None:
    log = "\n".join(f"2026-03-0{i % 9 + 1} ERROR worker-{i} connection reset by peer" for i in range(120))
    question = f"{log}\nAlso, when does my daughter start school?"
    assert len(question) > 5_000
    result = MemoryRetriever(chatty, namespace="u").recall(question)
    assert result.memories[0].text == "my daughter Mia starts school in September"
    assert any("long query" in note for note in result.plan["notes"])


def test_scores_are_calibrated_monotone_and_comparable(chatty: MemoryStore) -> None:
    retriever = MemoryRetriever(chatty, namespace="u")
    exact = retriever.recall("What is my secret code?", config={"relevance": {"min_score": 0.0}}).memories
    assert exact[0].explanation.calibrated_by == MINILM_CALIBRATION.name
    scores = [m.score for m in exact]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    by_text = {m.text: m.score for m in exact}
    # The answer scores above the question asked before, and far above the chatter.
    assert by_text["My secret code is 4471."] > by_text.get("user: What is my secret code?", 0.0)
    assert by_text["My secret code is 4471."] > 10 * by_text.get("user: thanks, that's helpful!", 0.0)


def test_an_exact_answer_clears_a_similarity_cutoff_of_0_3(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    with MemoryStore(tmp_path / "plain", embedder=minilm) as store:
        store.add_many(
            [{"text": t} for t in ("My secret code is 4471.", "Alice likes green tea.", "Alice moved to Berlin.")],
            namespace="u",
        )
        (top, *_) = MemoryRetriever(store, namespace="u").recall("What is my secret code?").memories
        assert top.text == "My secret code is 4471." and top.score >= 0.3
