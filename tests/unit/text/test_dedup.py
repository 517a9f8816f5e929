import numpy as np

from memory_retrievers.text.context import NEIGHBOUR_CHARS, window_contexts
from memory_retrievers.text.dedup import first_duplicate_in_batch

SCOPE = ("fact", None, None)


def same(n: int) -> dict:
    """Texts with the same words and one scope for ``n`` rows: the vectors decide."""
    return {"texts": ["same words"] * n, "scopes": [SCOPE] * n}


def _unit(*rows: list[float]) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_exact_duplicates_point_at_first_occurrence() -> None:
    vecs = _unit([1, 0], [0, 1], [1, 0], [1, 0])
    out = first_duplicate_in_batch(["h1", "h2", "h1", "h1"], vecs, [True] * 4, None, **same(4))
    assert out == [None, None, (0, 1.0), (0, 1.0)]


def test_near_duplicates_use_cosine_threshold() -> None:
    # cos([1,0],[0.96,0.28]) = 0.96 / 1.0 = 0.96 >= 0.95 ; cos([1,0],[0.8,0.6]) = 0.8 < 0.95
    vecs = _unit([1, 0], [0.96, 0.28], [0.8, 0.6])
    out = first_duplicate_in_batch(["a", "b", "c"], vecs, [True] * 3, 0.95, **same(3))
    assert out[0] is None and out[2] is None
    assert out[1] is not None and out[1][0] == 0 and abs(out[1][1] - 0.96) < 1e-6


def test_non_candidates_neither_match_nor_serve_as_originals() -> None:
    vecs = _unit([1, 0], [1, 0], [1, 0])
    out = first_duplicate_in_batch(["h", "h", "h"], vecs, [False, True, True], 0.9, **same(3))
    assert out == [None, None, (1, 1.0)]


def test_duplicate_is_never_an_original() -> None:
    # b duplicates a (0.96); c is 0.96 from b but only 0.85 from a: c is new, not b's duplicate.
    vecs = _unit([1, 0], [0.96, 0.28], [0.85, 0.5268])
    out = first_duplicate_in_batch(["a", "b", "c"], vecs, [True] * 3, 0.95, **same(3))
    assert out[1] is not None and out[1][0] == 0
    assert out[2] is None


def test_near_duplicates_need_the_same_words_and_scope() -> None:
    vecs = _unit([1, 0], [1, 0], [1, 0])
    texts = ["the meeting is at 3pm", "the meeting is at 2pm", "the meeting is at 3pm"]
    out = first_duplicate_in_batch(["a", "b", "c"], vecs, [True] * 3, 0.5, texts=texts, scopes=[SCOPE] * 3)
    assert out == [None, None, (0, 1.0)]  # same vector, other words: not a duplicate
    scopes = [SCOPE, SCOPE, ("preference", None, None)]
    out = first_duplicate_in_batch(["h", "h", "h"], vecs, [True] * 3, 0.5, texts=["x"] * 3, scopes=scopes)
    assert out == [None, (0, 1.0), None]  # another kind: not a duplicate, even of the same text


def test_window_contexts() -> None:
    turns = ["t0", "t1", "t2", "t3"]
    assert window_contexts(turns, 1) == {0: "t1", 1: "t0\nt2", 2: "t1\nt3", 3: "t2"}
    assert window_contexts(turns, 2, only=range(1, 2)) == {1: "t0\nt2\nt3"}
    assert window_contexts(turns, 0) == {0: "", 1: "", 2: "", 3: ""}


def test_a_long_neighbour_lends_a_turn_only_its_nearest_part() -> None:
    reply = "start of the reply " + "x" * 70_000 + " end of the reply"
    contexts = window_contexts(["earlier question", reply, "yes, the blue one"], 1)
    assert contexts[2] == reply[-NEIGHBOUR_CHARS:] and contexts[2].endswith("end of the reply")  # its end
    assert contexts[0] == reply[:NEIGHBOUR_CHARS] and contexts[0].startswith("start of the reply")  # its start
    assert contexts[1] == "earlier question\nyes, the blue one"  # short turns lend all they say
