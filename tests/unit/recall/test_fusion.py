"""Weighted RRF against arithmetic written out by hand (ranks from 1, k = 60)."""

import copy

import pytest

from memory_retrievers.recall.fusion import RankedList, tied_ranks, weighted_rrf


def test_fusion_arithmetic_by_hand() -> None:
    vector = RankedList("vector", ("a", "b", "c"), weight=2.0, channel="vector")
    bm25 = RankedList("bm25", ("b", "d"), weight=1.0, channel="bm25")
    hits = weighted_rrf([vector, bm25], k_rrf=60, rank1_bonus=0.05, top3_bonus=0.02)
    scores = {h.id: h.score for h in hits}
    # a: 2/(60+1)            + bonus(rank 1) 0.05 = 0.0327869 + 0.05 = 0.0827869
    # b: 2/(60+2) + 1/(60+1) + bonus(rank 1) 0.05 = 0.0322581 + 0.0163934 + 0.05 = 0.0986515
    # c: 2/(60+3)            + bonus(rank 3) 0.02 = 0.0317460 + 0.02 = 0.0517460
    # d: 1/(60+2)            + bonus(rank 2) 0.02 = 0.0161290 + 0.02 = 0.0361290
    assert scores["a"] == pytest.approx(2 / 61 + 0.05)
    assert scores["b"] == pytest.approx(2 / 62 + 1 / 61 + 0.05)
    assert scores["c"] == pytest.approx(2 / 63 + 0.02)
    assert scores["d"] == pytest.approx(1 / 62 + 0.02)
    assert [h.id for h in hits] == ["b", "a", "c", "d"]
    b = next(h for h in hits if h.id == "b")
    assert [(c.label, c.rank, c.weight) for c in b.contributions] == [("vector", 2, 2.0), ("bm25", 1, 1.0)]
    assert b.bonus == 0.05 and b.best_rank == 1


def test_bonus_given_once_from_best_rank() -> None:
    hits = weighted_rrf([RankedList("x", ("a",)), RankedList("y", ("a",))], k_rrf=60)
    assert hits[0].score == pytest.approx(2 / 61 + 0.05)  # not 2 * 0.05


def test_zero_weight_list_explains_but_does_not_count() -> None:
    hits = weighted_rrf([RankedList("on", ("a", "b")), RankedList("off", ("b",), weight=0.0)], k_rrf=60)
    b = next(h for h in hits if h.id == "b")
    assert b.score == pytest.approx(1 / 62 + 0.02)
    assert [c.label for c in b.contributions] == ["on", "off"]


def test_invariants() -> None:
    lists = [RankedList("x", ("a", "b", "a", "c")), RankedList("y", ("c", "e", "b"), weight=0.5)]
    frozen = copy.deepcopy(lists)
    hits = weighted_rrf(lists)
    assert lists == frozen  # inputs unmodified
    ids = [h.id for h in hits]
    assert len(ids) == len(set(ids)) == 4  # duplicates counted once, by id
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    c = next(h for h in hits if h.id == "c")
    assert [c_.rank for c_ in c.contributions] == [3, 1]  # the repeated "a" does not take a rank


def test_k_rrf_changes_the_spread() -> None:
    lists = [RankedList("x", ("a", "b"))]
    near = weighted_rrf(lists, k_rrf=1, rank1_bonus=0, top3_bonus=0)
    far = weighted_rrf(lists, k_rrf=1000, rank1_bonus=0, top3_bonus=0)
    assert near[0].score / near[1].score == pytest.approx((1 / 2) / (1 / 3))
    assert far[0].score / far[1].score == pytest.approx((1 / 1001) / (1 / 1002))


@pytest.mark.parametrize("kwargs", [{"k_rrf": 0}, {"rank1_bonus": -1}])
def test_invalid_parameters(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        weighted_rrf([RankedList("x", ("a",))], **kwargs)


def test_negative_weight_rejected() -> None:
    with pytest.raises(ValueError, match="negative weight"):
        weighted_rrf([RankedList("x", ("a",), weight=-1)])


def test_empty() -> None:
    assert weighted_rrf([]) == [] and weighted_rrf([RankedList("x", ())]) == []


def test_tied_ranks_are_competition_ranks() -> None:
    assert tied_ranks([]) == ()
    assert tied_ranks([5.0]) == (1,)
    assert tied_ranks([9.0, 7.5, 7.5, 3.0, 3.0, 3.0, 1.0]) == (1, 2, 2, 4, 4, 4, 7)


def test_tied_ids_share_a_contribution() -> None:
    # bm25 cannot tell a, b, c apart (ranks 1, 1, 1); the vector list can (a, b, c).
    bm25 = RankedList("bm25", ("c", "a", "b"), 1.0, "bm25", ranks=(1, 1, 1))
    vector = RankedList("vector", ("b", "a", "c"), 1.0, "vector")
    hits = weighted_rrf([bm25, vector], rank1_bonus=0.0, top3_bonus=0.0)
    # each gets 1/61 from bm25; the vector list alone decides the order: b (1/61), a (1/62), c (1/63)
    assert [h.id for h in hits] == ["b", "a", "c"]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 61)
    assert hits[2].score == pytest.approx(1 / 61 + 1 / 63)


def test_ranks_must_match_ids() -> None:
    with pytest.raises(ValueError, match="2 ids but 1 ranks"):
        weighted_rrf([RankedList("x", ("a", "b"), ranks=(1,))])
