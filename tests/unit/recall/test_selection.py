import copy

import numpy as np
import pytest

from memory_retrievers.recall.selection import (
    Candidate,
    CutReason,
    SelectionParams,
    maximal_marginal_relevance,
    select,
)


def unit(*v: float) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_budget_greedy_skips_too_large_and_keeps_trying_smaller() -> None:
    cands = [Candidate("a", 1.0, 50), Candidate("big", 0.9, 500), Candidate("c", 0.8, 30), Candidate("d", 0.7, 30)]
    chosen, rejected = select(cands, SelectionParams(k=10, token_budget=100, mmr_lambda=None, mmr_similarity_floor=0.0))
    assert [s.id for s in chosen] == ["a", "c"]  # 50 + 30 = 80; d (30) would make 110
    assert {r.id: r.reason for r in rejected} == {"big": CutReason.OVER_BUDGET, "d": CutReason.OVER_BUDGET}


def test_k_cap_and_zero_budget() -> None:
    cands = [Candidate(str(i), 1.0 - i / 10, 1) for i in range(5)]
    chosen, rejected = select(cands, SelectionParams(k=2, token_budget=None, mmr_lambda=None, mmr_similarity_floor=0.0))
    assert [s.id for s in chosen] == ["0", "1"]
    assert all(r.reason is CutReason.K_CAP for r in rejected)
    chosen, rejected = select(cands, SelectionParams(k=5, token_budget=0, mmr_lambda=None, mmr_similarity_floor=0.0))
    assert chosen == [] and all(r.reason is CutReason.OVER_BUDGET for r in rejected)


def test_mmr_demotes_near_duplicates_by_hand() -> None:
    # a and a2 identical direction, b orthogonal. lambda = 0.6.
    cands = [
        Candidate("a", 1.0, 1, unit(1, 0)),
        Candidate("a2", 0.95, 1, unit(1, 0)),
        Candidate("b", 0.7, 1, unit(0, 1)),
    ]
    chosen, _ = select(
        cands, SelectionParams(k=2, token_budget=None, mmr_lambda=0.6, pinned_first=False, mmr_similarity_floor=0.0)
    )
    # after a: a2 -> 0.6*0.95 - 0.4*1.0 = 0.17 ; b -> 0.6*0.7 - 0.4*0.0 = 0.42
    assert [s.id for s in chosen] == ["a", "b"]
    assert chosen[1].mmr_penalty == pytest.approx(0.0)
    chosen, _ = select(
        cands, SelectionParams(k=3, token_budget=None, mmr_lambda=0.6, pinned_first=False, mmr_similarity_floor=0.0)
    )
    assert chosen[2].id == "a2" and chosen[2].mmr_penalty == pytest.approx(0.4)


def test_pinned_first_within_budget() -> None:
    cands = [
        Candidate("top", 1.0, 10),
        Candidate("pin", 0.1, 10, pinned=True),
        Candidate("pin-big", 0.05, 99, pinned=True),
    ]
    chosen, rejected = select(cands, SelectionParams(k=2, token_budget=25, mmr_lambda=None, mmr_similarity_floor=0.0))
    assert [(s.id, s.phase) for s in chosen] == [("pin", "pinned"), ("top", "score")]
    assert {r.id: r.reason for r in rejected} == {"pin-big": CutReason.OVER_BUDGET}


def test_session_diverse_two_phase() -> None:
    cands = [
        Candidate("s1-a", 1.0, 1, session="s1"),
        Candidate("s1-b", 0.9, 1, session="s1"),
        Candidate("s1-c", 0.8, 1, session="s1"),
        Candidate("s2-a", 0.5, 1, session="s2"),
        Candidate("s3-a", 0.4, 1, session="s3"),
    ]
    plain, _ = select(cands, SelectionParams(k=3, token_budget=None, mmr_lambda=None, mmr_similarity_floor=0.0))
    assert [s.id for s in plain] == ["s1-a", "s1-b", "s1-c"]
    diverse, _ = select(
        cands, SelectionParams(k=3, token_budget=None, mmr_lambda=None, session_diverse=True, mmr_similarity_floor=0.0)
    )
    # phase 1 takes the best of each session up to ceil(3/2) = 2, phase 2 fills by score
    assert [(s.id, s.phase) for s in diverse] == [("s1-a", "session"), ("s2-a", "session"), ("s1-b", "score")]


def test_invariants_inputs_unmodified_no_duplicates() -> None:
    rng = np.random.default_rng(0)
    cands = [
        Candidate(f"m{i}", float(1 - i / 50), int(rng.integers(1, 40)), unit(*rng.standard_normal(4)))
        for i in range(40)
    ]
    frozen = copy.deepcopy(cands)
    chosen, rejected = select(
        cands, SelectionParams(k=12, token_budget=200, mmr_lambda=0.6, session_diverse=False, mmr_similarity_floor=0.0)
    )
    assert [c.id for c in cands] == [c.id for c in frozen]
    assert all(np.array_equal(a.vector, b.vector) for a, b in zip(cands, frozen, strict=True))
    ids = [s.id for s in chosen]
    assert len(ids) == len(set(ids)) <= 12
    assert sum(next(c.tokens for c in cands if c.id == i) for i in ids) <= 200
    assert set(ids) | {r.id for r in rejected} == {c.id for c in cands}


def test_maximal_marginal_relevance_order() -> None:
    vecs = np.stack([unit(1, 0), unit(1, 0.01), unit(0, 1)])
    assert maximal_marginal_relevance([1.0, 0.99, 0.5], vecs, lambda_mult=0.5, k=2) == [0, 2]
    assert maximal_marginal_relevance([1.0, 0.99, 0.5], vecs, lambda_mult=1.0, k=2) == [0, 1]
