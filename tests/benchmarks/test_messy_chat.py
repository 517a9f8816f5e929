"""The messy-chat benchmark (benchmarks/messy_chat.py): its data is well formed, its metrics count
what they say, and it runs end to end on one persona (hash embedder, so no model and a few seconds).
Also the long-turn chats' generator (benchmarks/_long_turn_script.py): seeded and well formed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def messy() -> Iterator[Any]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import messy_chat  # type: ignore[import-not-found]

        yield messy_chat
    finally:
        sys.path.remove(str(BENCHMARKS))
        for name in ("messy_chat", "_messy_script", "_messy_chat_pastes", "_long_turn_script"):
            sys.modules.pop(name, None)


def test_the_script_is_well_formed(messy: Any) -> None:
    import _messy_script as script  # type: ignore[import-not-found]

    personas = script.PERSONAS
    assert script.problems() == []  # indices exist, superseded messages come first, answers are in the evidence
    assert len(personas) >= 3
    assert sum(p.facts for p in personas) >= 100
    assert sum(len(p.questions) for p in personas) >= 60
    assert {q.category for p in personas for q in p.questions} == set(script.CATEGORIES)
    for p in personas:
        assert len({m.session for m in p.messages}) >= 4
        assert len({m.created_at.date() for m in p.messages}) >= 4  # sessions on different days
        for q in p.questions:
            assert all(0 <= i < len(p.messages) for i in (*q.evidence, *q.supersedes))
            for old in q.supersedes:
                assert all(p.messages[old].created_at < p.messages[e].created_at for e in q.evidence)
        trace = p.messages[p.trace]
        assert trace.kind == "paste" and 100 <= len(trace.text.splitlines()) <= 250
        assert len(p.of_kind("paste")) >= 3  # the trace, code, a config or log
        assert p.of_kind("hedge") and p.of_kind("reaction")
        assert any(q.category == "correction" for q in p.questions)


def test_a_problem_in_the_script_is_reported(messy: Any) -> None:
    import dataclasses

    import _messy_script as script  # type: ignore[import-not-found]

    p = script.PERSONAS[0]
    q = next(q for q in p.questions if q.supersedes)
    swapped = dataclasses.replace(q, evidence=q.supersedes, supersedes=q.evidence)  # the newer one "superseded"
    broken = dataclasses.replace(p, questions=(swapped,))
    assert any("does not precede" in s for s in script.problems([broken]))


def test_judge_and_summarize_on_a_hand_made_example(messy: Any) -> None:
    from _messy_script import Question  # type: ignore[import-not-found]

    moved = Question("where do I live now?", "correction", evidence=(3,), supersedes=(1,), answer=("Berlin|Pankow",))
    two = Question("brother's job and city?", "multi_hop", evidence=(4, 6), answer=("teacher", "Braga"))
    off = Question("capital of Mongolia?", "off_topic", evidence=())
    common = {"trace": 7, "pastes": frozenset({7, 8}), "hedges": frozenset({5})}

    # The old home above the new one, the trace and a hedge in the block: a lost correction.
    a = messy.judge(
        moved, [frozenset({1}), frozenset({3}), frozenset({7}), frozenset({5})], "Lisbon ... BERLIN", **common
    )
    assert a["recall"] == 1.0 and a["answer"] is True
    assert a["correction_win"] is False and a["superseded_in_block"] is True
    assert a["trace_leak"] is True and a["paste_leak"] is True and a["hedge_lines"] == 1
    # Only the new home: a win.
    b = messy.judge(moved, [frozenset({3})], "pankow", **common)
    assert b["correction_win"] is True and b["superseded_in_block"] is False and b["trace_leak"] is False
    # Multi-hop: one of two messages; the answer needs both parts. Only the first k lines count.
    c = messy.judge(two, [frozenset({9})] * 10 + [frozenset({6})], "teacher", **common)
    assert c["recall"] == 0.0 and c["answer"] is False
    d = messy.judge(two, [frozenset({6}), frozenset({0, 2})], "a teacher in Braga", **common)
    assert d["recall"] == 0.5 and d["answer"] is True
    # Neither message: no win. The trace asked for is not a leak.
    e = messy.judge(moved, [frozenset({1})], "", **common)
    assert e["correction_win"] is False
    traced = Question("the trace?", "current_fact", evidence=(7,), answer=("Error",))
    assert messy.judge(traced, [frozenset({7})], "IntegrityError", **common)["trace_leak"] is False
    # Off topic: only emptiness counts.
    f = messy.judge(off, [], "", **common)
    g = messy.judge(off, [frozenset({2})], "x", **common)
    assert f["recall"] is None and f["empty"] and not g["empty"]

    s = messy.summarize([a, b, c, d, e, f, g])
    # recall over answerable: (1 + 1 + 0 + 0.5 + 0) / 5; answers: a, b, d of five
    assert s["evidence recall@10"] == 0.5
    assert s["answer in block"] == 0.6
    assert s["correction-order wins"] == "1/3"
    assert s["superseded message in block"] == 2
    assert s["trace leaked into an unrelated block"] == 1
    assert s["off-topic empty-block rate"] == 0.5
    assert s["blocks with an assistant hedge"] == 1
    assert s["by category"]["multi_hop"] == {"n": 2, "recall@10": 0.25, "answer in block": 0.5}


def test_the_runner_on_one_persona_with_the_hash_embedder(messy: Any, tmp_path: Path) -> None:
    persona = next(p for p in messy.PERSONAS if p.namespace == "wei")
    results = messy.run([persona], ["core", "lancedb-bm25"], HashEmbedder(32), tmp_path, batch=True)
    assert set(results["systems"]) == {"core", "lancedb-bm25"}
    assert len(results["questions"]) == len(persona.questions)
    for name, summary in results["systems"].items():
        assert summary["questions"] == len(persona.questions)
        assert 0.0 <= summary["evidence recall@10"] <= 1.0, name
    # BM25 finds the Chinese question's own words nowhere (no spaces to split on) but answers the
    # lexical ones: the confirmation code is in its block.
    row = next(r for r in results["questions"] if "ryokan" in r["question"])
    assert row["systems"]["lancedb-bm25"]["answer"] is True
    assert "table" not in results  # the printed table is built separately
    assert "core" in messy.table(results)


def test_the_long_turn_chats_are_seeded_and_well_formed(messy: Any) -> None:
    import _long_turn_script as long  # type: ignore[import-not-found]

    data, again = long.chats(), long.chats()
    assert long.problems(data) == []
    assert [t.text for c in data for t in c.turns] == [t.text for c in again for t in c.turns]
    assert [t.text for c in long.chats(seed=7) for t in c.turns] != [t.text for c in data for t in c.turns]
    answers = [len(t.text) for c in data for t in c.turns if t.role == "assistant"]
    assert min(answers) >= 2_000 and max(answers) <= 80_000 and sum(n > 32_000 for n in answers) >= 4
    assert max(len(t.text) for c in data for t in c.turns if t.role == "user") < 200
    buckets = {long.depth_bucket(q) for c in data for q in c.questions}
    assert buckets == set(long.QUOTA)
    for c in data:
        assert len({t.session for t in c.turns}) == 24
        for q in c.questions:
            turn = c.turns[q.evidence]
            assert turn.session == q.session and turn.role == q.role
            assert q.answer in turn.text[q.depth : q.depth + 400]
