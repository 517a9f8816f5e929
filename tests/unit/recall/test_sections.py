"""Sections of the context block (pinned / facts and preferences / conversation) and their budgets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_retrievers import ConfigError, ContextSection, MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.recall.sections import SECTION_TITLES
from memory_retrievers.recall.selection import Candidate, CutReason, SelectionParams, select

QUIET = {
    "weights": {"entity": 0, "recency": 0, "links": 0, "hyde": 0, "context": 0},
    "query_expansion": {"expansion": False},
    "scoring": {"decay": "none"},
    "selection": {"mmr": False},
    "record_access": False,
}


def ids(chosen: list) -> list[str]:
    return [s.id for s in chosen]


# --- selection: reservations, by hand -------------------------------------------------------------


def test_a_section_keeps_its_reservation_against_better_scored_memories() -> None:
    # Budget 100: conversation reserves 30, knowledge 40. Five chat turns outscore the one fact.
    turns = [Candidate(f"t{i}", 1.0 - i / 100, 20, section="conversation") for i in range(5)]
    fact = Candidate("fact", 0.5, 20, section="knowledge")
    plain, _ = select(
        [*turns, fact], SelectionParams(k=10, token_budget=100, mmr_lambda=None, mmr_similarity_floor=0.0)
    )
    assert ids(plain) == ["t0", "t1", "t2", "t3", "t4"]  # without reservations the fact is crowded out
    reserved, rejected = select(
        [*turns, fact],
        SelectionParams(
            k=10,
            token_budget=100,
            mmr_lambda=None,
            mmr_similarity_floor=0.0,
            section_reserve={"conversation": 30, "knowledge": 40},
        ),
    )
    # t0 (20) + t1 (20) + t2 (20): 60 + the fact's outstanding 40 = 100; t3 would need 120. Then
    # the fact (score order), then nothing fits: the reservation is spent, 80 + 20 = 100 for t3.
    assert ids(reserved) == ["t0", "t1", "t2", "fact", "t3"]
    assert {r.id: r.reason for r in rejected} == {"t4": CutReason.OVER_BUDGET}


def test_a_section_without_candidates_reserves_nothing() -> None:
    turns = [Candidate(f"t{i}", 1.0 - i / 100, 20, section="conversation") for i in range(5)]
    chosen, _ = select(
        turns,
        SelectionParams(
            k=10,
            token_budget=100,
            mmr_lambda=None,
            mmr_similarity_floor=0.0,
            section_reserve={"pinned": 20, "knowledge": 40, "conversation": 30},
        ),
    )
    assert ids(chosen) == ["t0", "t1", "t2", "t3", "t4"]


def test_a_released_reservation_goes_to_the_best_left() -> None:
    # The single fact is too big for the budget left: once it is rejected, its reservation is free.
    turns = [Candidate(f"t{i}", 1.0 - i / 100, 20, section="conversation") for i in range(5)]
    fact = Candidate("fact", 0.99, 120, section="knowledge")
    chosen, rejected = select(
        [fact, *turns],
        SelectionParams(
            k=10,
            token_budget=100,
            mmr_lambda=None,
            mmr_similarity_floor=0.0,
            section_reserve={"knowledge": 40, "conversation": 30},
        ),
    )
    assert ids(chosen) == ["t0", "t1", "t2", "t3", "t4"]
    assert {r.id: r.reason for r in rejected} == {"fact": CutReason.OVER_BUDGET}


def test_when_nothing_fits_under_the_reservations_the_rest_is_not_wasted() -> None:
    # Budget 110, each side reserves 55. After a (45), b (15) would leave 110 - 60 = 50 < B's 55,
    # and B's only candidate (60) would leave 5 < A's outstanding 10: a deadlock that must not
    # waste the budget. Dropping the reservations, the best that fits is taken.
    a = Candidate("a", 1.0, 45, section="pinned")
    b = Candidate("b", 0.9, 15, section="pinned")
    big = Candidate("big", 0.8, 60, section="knowledge")
    chosen, _ = select(
        [a, b, big],
        SelectionParams(
            k=10,
            token_budget=110,
            mmr_lambda=None,
            pinned_first=False,
            mmr_similarity_floor=0.0,
            section_reserve={"pinned": 55, "knowledge": 55},
        ),
    )
    assert ids(chosen) == ["a", "b"]


def test_pinned_memories_get_their_share_not_the_whole_budget() -> None:
    pinned = [Candidate(f"p{i}", 0.5, 20, pinned=True, section="pinned") for i in range(5)]
    fact = Candidate("fact", 1.0, 20, section="knowledge")
    old, _ = select([fact, *pinned], SelectionParams(k=10, token_budget=100, mmr_lambda=None, mmr_similarity_floor=0.0))
    assert ids(old) == ["p0", "p1", "p2", "p3", "p4"]  # pinned-first alone: the best fact is lost
    new, _ = select(
        [fact, *pinned],
        SelectionParams(
            k=10,
            token_budget=100,
            mmr_lambda=None,
            mmr_similarity_floor=0.0,
            section_reserve={"pinned": 20, "knowledge": 40},
        ),
    )
    # Pinned first, as far as the budget not reserved for facts allows (100 - 40 = 60), then the
    # fact, then pinned memories again in what is left.
    assert ids(new) == ["p0", "p1", "p2", "fact", "p3"]


def test_titles_are_paid_once_a_second_section_opens() -> None:
    turn = Candidate("turn", 1.0, 20, section="conversation")
    fact = Candidate("fact", 0.9, 20, section="knowledge")
    opening = {"conversation": 3, "knowledge": 4}
    # 20 + (20 + 4 + 3) = 47 > 46: the fact does not fit once both titles are counted.
    chosen, _ = select(
        [turn, fact],
        SelectionParams(k=10, token_budget=46, mmr_lambda=None, mmr_similarity_floor=0.0, section_opening=opening),
    )
    assert ids(chosen) == ["turn"]
    chosen, _ = select(
        [turn, fact],
        SelectionParams(k=10, token_budget=47, mmr_lambda=None, mmr_similarity_floor=0.0, section_opening=opening),
    )
    assert ids(chosen) == ["turn", "fact"]


@settings(max_examples=200, deadline=None)
@given(
    costs=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=25),
    budget=st.integers(min_value=0, max_value=400),
    k=st.integers(min_value=1, max_value=30),
)
def test_one_section_selects_exactly_as_without_sections(costs: list[int], budget: int, k: int) -> None:
    plain = [Candidate(str(i), 1.0 - i / 100, c) for i, c in enumerate(costs)]
    one = [Candidate(str(i), 1.0 - i / 100, c, section="conversation") for i, c in enumerate(costs)]
    expected = select(plain, SelectionParams(k=k, token_budget=budget, mmr_lambda=None, mmr_similarity_floor=0.0))
    got = select(
        one,
        SelectionParams(
            k=k,
            token_budget=budget,
            mmr_lambda=None,
            mmr_similarity_floor=0.0,
            section_reserve={"pinned": budget // 5, "knowledge": budget * 2 // 5, "conversation": budget * 3 // 10},
            section_opening={"conversation": 3, "knowledge": 4, "pinned": 2},
        ),
    )
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.integers(1, 60), st.sampled_from(["pinned", "knowledge", "conversation"])), min_size=1, max_size=25
    ),
    budget=st.integers(min_value=0, max_value=400),
    shares=st.tuples(st.integers(0, 40), st.integers(0, 30), st.integers(0, 30)),
)
def test_reservations_never_break_the_budget_nor_lose_a_candidate(
    items: list[tuple[int, str]], budget: int, shares: tuple[int, int, int]
) -> None:
    cands = [Candidate(str(i), 1.0 - i / 100, c, section=s) for i, (c, s) in enumerate(items)]
    reserve = dict(zip(["pinned", "knowledge", "conversation"], (budget * s // 100 for s in shares), strict=True))
    chosen, rejected = select(
        cands,
        SelectionParams(k=100, token_budget=budget, mmr_lambda=None, mmr_similarity_floor=0.0, section_reserve=reserve),
    )
    cost = {c.id: c.tokens for c in cands}
    used = sum(cost[s.id] for s in chosen)
    assert used <= budget
    assert sorted([*ids(chosen), *(r.id for r in rejected)], key=int) == [c.id for c in cands]
    # Nothing wasted: every candidate left out is one that did not fit in what was left.
    assert all(r.reason is CutReason.OVER_BUDGET and cost[r.id] > budget - used for r in rejected)


# --- the context block ----------------------------------------------------------------------------


@pytest.fixture
def mixed(store: MemoryStore) -> MemoryStore:
    store.add_many(
        [
            {"text": "Always answer Alice in British English", "pinned": True},
            {"text": "Alice prefers the dark theme in her editor", "kind": "preference"},
            {"text": "Alice is allergic to peanuts", "kind": "fact"},
            {"text": "user: can you switch my editor theme to dark?", "kind": "message", "session_id": "s1"},
        ],
        namespace="alice",
    )
    return store


def test_the_block_groups_memories_under_section_titles(mixed: MemoryStore) -> None:
    result = MemoryRetriever(mixed, namespace="alice", config=QUIET).recall("Alice editor theme dark", k=10)
    assert len(result.memories) == 4
    block = result.to_context()
    lines = block.splitlines()
    assert lines[0] == "Relevant memories (most relevant first):"
    titles = [line for line in lines if line in SECTION_TITLES.values()]
    assert titles == ["Pinned:", "Facts and preferences:", "Conversation:"]

    def under(title: str) -> list[str]:
        start = lines.index(title) + 1
        rest = lines[start:]
        end = next((i for i, line in enumerate(rest) if not line.startswith("- [")), len(rest))
        return [line.split("] ", 1)[1] for line in rest[:end]]

    assert under("Pinned:") == ["Always answer Alice in British English"]
    assert sorted(under("Facts and preferences:")) == [
        "Alice is allergic to peanuts",
        "Alice prefers the dark theme in her editor",
    ]
    assert under("Conversation:") == ["user: can you switch my editor theme to dark?"]
    # Within a section, output order (best first).
    facts = [m.text for m in result.memories if not m.memory.pinned and m.memory.kind.value in ("fact", "preference")]
    assert under("Facts and preferences:") == facts
    assert result.tokens_used == MemoryRetriever(mixed, namespace="alice").token_counter.count(block)


def test_the_flat_block_and_a_one_section_block_have_no_titles(mixed: MemoryStore) -> None:
    retriever = MemoryRetriever(mixed, namespace="alice", config=QUIET)
    result = retriever.recall("Alice editor theme dark", k=10)
    flat = result.to_context(sections=False).splitlines()
    assert not set(flat) & set(SECTION_TITLES.values())
    assert flat[1:] == [f"- [{m.memory.created_at.date().isoformat()}] {m.text}" for m in result.memories]
    turns = retriever.recall("editor theme", k=10, kinds=["message"])
    assert len(turns.memories) == 1 and "Conversation:" not in turns.to_context()


def test_section_shares_reserve_room_for_facts_in_a_chatty_store(store: MemoryStore) -> None:
    # Twelve long chat turns about the editor outrank the one short fact in score.
    turns = [
        {
            "text": f"user: the editor theme question again, number {i}, dark theme editor settings please",
            "kind": "message",
            "session_id": "s",
        }
        for i in range(12)
    ]
    store.add_many([*turns, {"text": "Alice uses a dark editor theme", "kind": "fact"}], namespace="alice")
    query = "editor theme dark settings question"
    retriever = MemoryRetriever(
        store, namespace="alice", config={**QUIET, "selection": {**QUIET["selection"], "section_shares": {}}}
    )
    crowded = retriever.recall(query, k=10, token_budget=120)
    assert crowded.trimmed
    assert "Alice uses a dark editor theme" not in [m.text for m in crowded.memories]
    shared = MemoryRetriever(store, namespace="alice", config=QUIET).recall(query, k=10, token_budget=120)
    assert "Alice uses a dark editor theme" in [m.text for m in shared.memories]
    assert "Facts and preferences:" in shared.to_context()
    assert shared.tokens_used <= 120


@pytest.mark.parametrize(
    ("shares", "fragment"),
    [
        ({"facts": 0.3}, "'facts' is not a section"),
        ({"pinned": 1.5}, "section_shares['pinned'] must be a number in [0, 1]"),
        ({"pinned": True}, "must be a number"),
        ({"pinned": 0.6, "knowledge": 0.6}, "must sum to at most 1"),
    ],
)
def test_bad_section_shares_are_typed_errors_naming_the_field(shares: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match="section_shares") as err:
        RecallConfig(selection={"section_shares": shares})
    assert fragment in str(err.value)


def test_section_shares_accept_enum_keys_and_default_to_documented_values() -> None:
    cfg = RecallConfig(selection={"section_shares": {ContextSection.PINNED: 0.5}})
    assert cfg.selection.section_shares == {ContextSection.PINNED: 0.5}
    assert RecallConfig().selection.section_shares == {
        ContextSection.PINNED: 0.2,
        ContextSection.KNOWLEDGE: 0.4,
        ContextSection.CONVERSATION: 0.3,
    }
