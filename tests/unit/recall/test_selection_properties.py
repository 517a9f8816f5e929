"""Invariants of :func:`select` over random candidate lists, and the steps of a selection.

Whatever the candidates and parameters: every candidate is selected or rejected exactly once, at
most ``k`` are selected, what is selected fits the budget (section titles included), the phases
come in order (pinned, session, then score/MMR), and the inputs are left as they were.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_retrievers.recall.selection import (
    Candidate,
    CutReason,
    SelectionParams,
    _fits,
    _held_for_others,
    _State,
    _take,
    select,
)

SECTIONS = [None, "pinned", "facts", "conversation"]
PHASES = {"pinned": 0, "session": 1, "mmr": 2, "score": 2}


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(0, 20))
    out = []
    for i in range(n):
        raw = draw(st.none() | st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3))
        vector = None
        if raw is not None and np.linalg.norm(raw) > 1e-3:
            vector = np.asarray(raw, dtype=np.float32) / np.float32(np.linalg.norm(raw))
        out.append(
            Candidate(
                f"m{i}",
                draw(st.floats(0, 1, allow_nan=False)),
                draw(st.integers(0, 40)),
                vector,
                draw(st.booleans()),
                draw(st.sampled_from(["a", "b", "c", None])),
                draw(st.sampled_from(SECTIONS)),
            )
        )
    return sorted(out, key=lambda c: -c.score)  # select takes them best first


params = st.builds(
    SelectionParams,
    k=st.integers(1, 10),
    token_budget=st.none() | st.integers(0, 200),
    mmr_similarity_floor=st.sampled_from([0.0, 0.5, 0.9]),
    mmr_lambda=st.none() | st.floats(0, 1),
    pinned_first=st.booleans(),
    session_diverse=st.booleans(),
    section_reserve=st.none() | st.dictionaries(st.sampled_from(SECTIONS[1:]), st.integers(0, 80), max_size=3),
    section_opening=st.none() | st.fixed_dictionaries({s: st.integers(0, 5) for s in SECTIONS[1:]}),
)


def paid(chosen: list[Candidate], opening: dict[str, int] | None) -> int:
    """What a selection costs: its candidates, and every section's title once it holds two sections."""
    sections = {c.section for c in chosen if c.section is not None}
    titles = sum((opening or {}).get(s, 0) for s in sections) if len(sections) >= 2 else 0
    return sum(c.tokens for c in chosen) + titles


@settings(max_examples=200, deadline=None)
@given(cands=candidates(), p=params)
def test_every_candidate_is_accounted_for_once_within_k_and_budget(cands: list[Candidate], p: SelectionParams) -> None:
    frozen = copy.deepcopy(cands)
    chosen, rejected = select(cands, p)
    ids = [s.id for s in chosen] + [r.id for r in rejected]
    assert sorted(ids) == sorted(c.id for c in cands) and len(set(ids)) == len(ids)  # no duplicates
    assert len(chosen) <= p.k
    by_id = {c.id: c for c in cands}
    if p.token_budget is not None:
        assert paid([by_id[s.id] for s in chosen], dict(p.section_opening or {})) <= p.token_budget
    if any(r.reason is CutReason.K_CAP for r in rejected):
        assert len(chosen) == p.k  # k_cap is only ever the reason when k were chosen
    assert [PHASES[s.phase] for s in chosen] == sorted(PHASES[s.phase] for s in chosen)  # phases in order
    assert all(s.mmr_penalty >= 0 for s in chosen)
    assert [c.id for c in cands] == [c.id for c in frozen]  # inputs unchanged
    assert all(
        (a.vector is None and b.vector is None) or np.array_equal(a.vector, b.vector)  # type: ignore[arg-type]
        for a, b in zip(cands, frozen, strict=True)
    )


@settings(max_examples=200, deadline=None)
@given(cands=candidates(), k=st.integers(1, 10), budget=st.integers(0, 200))
def test_pinned_come_first_and_a_candidate_over_budget_never_fit(cands: list[Candidate], k: int, budget: int) -> None:
    plain = [Candidate(c.id, c.score, c.tokens, c.vector, c.pinned, c.session) for c in cands]  # no sections
    chosen, rejected = select(plain, SelectionParams(k=k, token_budget=budget, mmr_similarity_floor=0.0))
    by_id = {c.id: c for c in plain}
    flags = [by_id[s.id].pinned for s in chosen]
    assert flags == sorted(flags, reverse=True)  # every pinned one before every other
    assert all((s.phase == "pinned") == by_id[s.id].pinned for s in chosen)
    left = budget - sum(by_id[s.id].tokens for s in chosen)
    # Greedy fill: a candidate rejected over the budget does not fit even in what is left at the end.
    assert all(by_id[r.id].tokens > left for r in rejected if r.reason is CutReason.OVER_BUDGET)


def test_selection_params_are_frozen() -> None:
    p = SelectionParams(k=1, token_budget=None, mmr_similarity_floor=0.0)
    with pytest.raises(AttributeError):
        p.k = 3  # type: ignore[misc]


def test_a_reservation_holds_only_while_its_section_has_candidates() -> None:
    cands = [Candidate("f1", 1.0, 60, section="facts"), Candidate("c1", 0.5, 30, section="conversation")]
    p = SelectionParams(k=5, token_budget=100, mmr_similarity_floor=0.0, section_reserve={"conversation": 50})
    state = _State.start(cands, p)
    assert _held_for_others(state, "facts") == 50
    assert not _fits(state, 0) and 0 not in state.rejected  # over the reservation: waits, not rejected
    assert _fits(state, 1)
    _take(state, 1, "mmr", 0.0)
    assert state.used == 30 and state.spent == {"conversation": 30} and state.open_in["conversation"] == 0
    assert _held_for_others(state, "facts") == 0  # conversation has nothing left: its share is released
    assert _fits(state, 0)
    _take(state, 0, "mmr", 0.0)
    assert state.used == 90 and math.isclose(state.budget, 100)
    chosen, rejected = state.finish()
    assert [s.id for s in chosen] == ["c1", "f1"] and rejected == []


def test_the_memory_opening_a_second_section_pays_both_titles() -> None:
    cands = [Candidate("f1", 1.0, 10, section="facts"), Candidate("c1", 0.9, 10, section="conversation")]
    opening = {"facts": 3, "conversation": 4}
    p = SelectionParams(k=5, token_budget=26, mmr_similarity_floor=0.0, section_opening=opening)
    chosen, rejected = select(cands, p)  # 10, then 10 + 3 + 4 = 27 > 26 - 10
    assert [s.id for s in chosen] == ["f1"] and [r.reason for r in rejected] == [CutReason.OVER_BUDGET]
    chosen, _ = select(cands, SelectionParams(k=5, token_budget=27, mmr_similarity_floor=0.0, section_opening=opening))
    assert [s.id for s in chosen] == ["f1", "c1"]
