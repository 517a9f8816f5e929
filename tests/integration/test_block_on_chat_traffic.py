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


# Issue 39: a chat where the latest statement must win and a pasted trace must stay where it belongs.
CHAT = (
    "user: hey! I'm a backend dev, mostly python + postgres",
    "user: and I use vim for literally everything, 8 yrs now lol",
    "assistant: Nice, vim keeps you fast. What are you working on?",
    "user: ok long day lol",
    "assistant: Rest up!",
    "user: prod is on fire, celery worker keeps dying, pasting the trace",
    "TRACE",
    "user: my cat is called Bolacha, grey tabby",
    "user: oh and I switched from vim to Neovim, my lazy.nvim config is great",
    "assistant: Neovim with lazy.nvim is a great setup!",
)
TRACE = "user: " + "\n".join(
    f"[2026-03-0{i % 9 + 1} 10:31:07,412: ERROR/ForkPoolWorker-{i % 4}] Task falcon.settle[{i:04x}] raised: "
    "OperationalError"
    if i % 5 == 0
    else f'  File "/srv/app/falcon/tasks/step_{i}.py", line {i * 7}, in handle\n    return self.handle(*args)'
    for i in range(150)
)


@pytest.fixture
def chat(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> Iterator[MemoryStore]:
    clock = ManualClock(START)
    store = MemoryStore(tmp_path / "chat", embedder=minilm, clock=clock)
    for day, text in enumerate(CHAT):
        store.add(
            TRACE if text == "TRACE" else text,
            namespace="u",
            kind="message",
            session_id=f"s{day // 4}",
            created_at=START + timedelta(days=day),
        )
    clock.advance(days=30)
    yield store
    store.close()


def test_a_correction_the_floor_cut_is_in_the_block_above_what_it_corrects(chat: MemoryStore) -> None:
    question = "which editor do I use these days?"
    block = MemoryRetriever(chat, namespace="u").recall(question).to_context()
    assert "Neovim" in block and block.index("switched from vim to Neovim") < block.index("I use vim"), block
    assert "(updated by the [2026-03-10] line above)" in block
    # What made it: the switch scores under the floor, and without the step that brings back a
    # line updating a kept one, the block states the old editor alone.
    plain = MemoryRetriever(chat, namespace="u", config={"selection": {"newest_first": False}}).recall(question)
    assert "Neovim" not in plain.to_context() and "I use vim" in plain.to_context()


@pytest.mark.parametrize("question", ["which editor do I use these days?", "what's my cat's name?"])
def test_a_pasted_trace_stays_out_of_blocks_it_has_nothing_to_do_with(chat: MemoryStore, question: str) -> None:
    block = MemoryRetriever(chat, namespace="u").recall(question).to_context()
    assert "ForkPoolWorker" not in block, block
    # The calibration read its 1,500 content words as evidence (fitted on turns of at most 41):
    # without its limits, the trace is in both blocks.
    unlimited = MINILM_CALIBRATION.model_copy(update={"limits": {}})
    loose = MemoryRetriever(chat, namespace="u", config={"relevance": {"calibration": unlimited}}).recall(question)
    assert "ForkPoolWorker" in loose.to_context()
