"""Queued writes merged into recall's searches (``storage/pending_text.py``): the placement arithmetic."""

from __future__ import annotations

import math

from memory_retrievers.storage.pending_text import placed


def test_a_queued_record_goes_above_the_first_hit_scoring_lower_locally() -> None:
    # Local BM25 over the three texts, query terms {red, apple} (k1 1.2, b 0.75):
    # "red apple pie" (3 terms), "apple" (1), "red apple" (2); average length 2.
    # df(red) = 2, df(apple) = 3 of n = 3: idf(red) = ln(1 + 1.5/2.5) = 0.470, idf(apple) = ln(1 + 0.5/3.5) = 0.134.
    # "red apple pie": norm = 1.2 * (0.25 + 0.75 * 3/2) = 1.65; each term 2.2/2.65 = 0.830 -> 0.501.
    # "apple": norm = 1.2 * (0.25 + 0.75 * 1/2) = 0.75; 2.2/1.75 = 1.257 -> 0.168.
    # "red apple": norm = 1.2; 2.2/2.2 = 1 -> 0.604: above both hits, so first; its score lies
    # above the best hit's (9.0): 9 + 9 * 1/2.
    hits = placed([("a", 9.0), ("b", 4.0)], ["red apple pie", "apple"], [("q", "red apple")], "red apple", 3)
    assert hits.ids == ("q", "a", "b")
    assert hits.scores[1:] == (9.0, 4.0)  # the stored hits keep their order and scores
    assert math.isclose(hits.scores[0], 13.5)


def test_queued_records_between_hits_take_distinct_scores_between_theirs() -> None:
    # "apple apple pie" and "apple pie" both score locally between "apple" ... and below the first hit.
    base = [("a", 8.0), ("b", 2.0)]
    texts = ["apple apple apple apple", "pear"]
    hits = placed(base, texts, [("q1", "apple pie"), ("q2", "apple tart pie crust"), ("x", "pear")], "apple", 10)
    assert hits.ids == ("a", "q1", "q2", "b")  # "pear" has no query word: not a hit
    assert 8.0 > hits.scores[1] > hits.scores[2] > 2.0


def test_no_hits_keep_the_local_scores_and_k_cuts() -> None:
    hits = placed([], [], [("q1", "green tea"), ("q2", "green tea every morning")], "green tea", 1)
    assert hits.ids == ("q1",) and hits.scores[0] > 0
