"""The calibrated score (memory_retrievers.recall.calibration): features, fitting, and which model a store gets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_retrievers import ConfigError, MemoryKind, RecallConfig
from memory_retrievers.recall.calibration import (
    COSINE_FEATURES,
    FEATURES,
    MINILM_CALIBRATION,
    RANK_CALIBRATION,
    Calibration,
    Signals,
    calibration_for,
    feature_matrix,
)
from memory_retrievers.recall.fitting import fit_calibration


def signals(**kw: object) -> Signals:
    base: dict[str, object] = {
        "query_terms": (),
        "cosine": 0.5,
        "final_score": 0.1,
        "position": 1,
        "ranks": {"vector": 1},
        "lists": 1,
        "multipliers": {"decay": 1.0},
        "text": "Caroline: I went to the support group.",
        "kind": MemoryKind.MESSAGE,
    }
    return Signals(**{**base, **kw})  # type: ignore[arg-type]


def test_rr_other_reads_only_the_built_in_lists_it_was_fitted_on() -> None:
    # A user's channel ("error_code") is none of them: the shipped models weigh rr_other negatively
    # (recency or link hits were rarely evidence on LoCoMo), which made a plug-in's best hit score
    # lower the more it was found by it. It counts through final_share and agreement instead.
    rows = feature_matrix(
        [
            signals(ranks={"vector": 2, "error_code": 1}, lists=2),
            signals(ranks={"vector": 1, "recency": 4, "error_code": 2}, lists=3),
            signals(ranks={"sources": 2}, lists=1),
        ]
    )
    plug_in, recent, source = (dict(zip(FEATURES, row, strict=True)) for row in rows)
    assert plug_in["rr_other"] == 0.0 and plug_in["agreement"] == pytest.approx(2 / 3)
    assert recent["rr_other"] == 0.25 and source["rr_other"] == 0.5


def test_features_are_computed_as_documented() -> None:
    rows = feature_matrix(
        [
            signals(cosine=0.8, final_score=0.2, position=1, ranks={"vector": 1, "bm25": 4, "context": 2}, lists=3),
            signals(
                cosine=0.3,
                final_score=0.05,
                position=4,
                ranks={"dated": 2, "links": 5},
                lists=2,
                multipliers={"speaker": 2.0, "date": 2.0},
                text="user: Where does my sister live?",
                kind=MemoryKind.FACT,
                query_terms=("sister", "live", "now"),
            ),
        ]
    )
    first, second = (dict(zip(FEATURES, row, strict=True)) for row in rows)
    assert first["cosine"] == 0.8 and first["cosine_gap"] == 0.0 and first["final_share"] == 1.0
    assert (first["rr_vector"], first["rr_bm25"], first["rr_context"], first["rr_other"]) == (1.0, 0.25, 0.5, 0.0)
    assert first["log_position"] == 0.0 and first["agreement"] == 1.0
    assert first["question"] == 0.0 and first["question_cosine"] == 0.0 and first["message"] == 1.0
    assert first["content_words"] == pytest.approx(math.log1p(3))  # went, support, group
    assert second["cosine_gap"] == pytest.approx(-0.5) and second["final_share"] == pytest.approx(0.25)
    assert second["rr_other"] == 0.5 and second["rr_vector"] == 0.0 and second["agreement"] == pytest.approx(2 / 3)
    # Its place counts the statements above it: one.
    assert second["speaker"] == 1.0 and second["date"] == 1.0 and second["log_position"] == pytest.approx(math.log(2))
    assert second["question"] == 1.0 and second["question_cosine"] == pytest.approx(0.3) and second["message"] == 0.0
    # Its keywords are all the query's: the query asked before (with a word more), whatever the cosine.
    assert second["coverage"] == pytest.approx(2 / 3) and second["asked_before"] == 1.0
    assert first["coverage"] == 0.0 and first["asked_before"] == 0.0


def test_an_empty_candidate_list_has_no_rows() -> None:
    assert feature_matrix([]).shape == (0, len(FEATURES))


def test_fitting_recovers_a_known_logistic_model() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20_000, len(FEATURES)))
    true = {"cosine": 2.0, "rr_bm25": -1.0, "question": 0.5}
    z = -1.0 + sum(w * x[:, FEATURES.index(f)] for f, w in true.items())
    y = rng.random(len(x)) < 1 / (1 + np.exp(-z))
    fitted = fit_calibration(x, y, name="synthetic", embedder="e", l2=1e-3)
    assert fitted.intercept == pytest.approx(-1.0, abs=0.1)
    for feature in FEATURES:
        assert fitted.weights[feature] == pytest.approx(true.get(feature, 0.0), abs=0.1), feature
    # And its probabilities are calibrated on the data it saw: the mean score is the base rate.
    assert fitted.probabilities(x).mean() == pytest.approx(y.mean(), abs=0.01)


def test_a_model_without_an_embedder_reads_no_cosine() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2_000, len(FEATURES)))
    y = x[:, 0] > 0
    fitted = fit_calibration(x, y, name="ranks", embedder=None)
    assert not set(fitted.weights) & COSINE_FEATURES
    assert fitted.suits("any-embedder")


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [(np.zeros((3, 2)), [True, False, True], "matrix"), (np.zeros((3, len(FEATURES))), [True] * 3, "both")],
)
def test_fitting_refuses_what_it_cannot_fit(x: np.ndarray, y: list[bool], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fit_calibration(x, y, name="bad", embedder=None)


def test_probabilities_are_a_logistic_of_the_weighted_features() -> None:
    c = Calibration(name="t", intercept=-1.0, weights={"cosine": 2.0})
    row = np.zeros((1, len(FEATURES)))
    row[0, FEATURES.index("cosine")] = 0.5
    assert c.probabilities(row)[0] == pytest.approx(0.5)  # -1 + 2 * 0.5 = 0
    assert c.probabilities(np.full((1, len(FEATURES)), 1e6))[0] == pytest.approx(1.0)  # clipped, no overflow


def test_a_feature_past_its_limit_is_read_at_the_limit() -> None:
    # Issue 39: fitted on chat turns of at most 41 content words, the shipped model read a pasted
    # 1,570-word stack trace (log1p: 7.36) as far likelier evidence than any turn, and the trace
    # went into blocks it had nothing to do with.
    c = Calibration(name="t", intercept=-3.0, weights={"content_words": 1.0}, limits={"content_words": 3.7})
    rows = np.zeros((3, len(FEATURES)))
    rows[:, FEATURES.index("content_words")] = [2.0, 3.7, 7.36]
    p = c.probabilities(rows)
    assert p[0] < p[1] and p[2] == p[1]
    assert c.within_limits(rows)[2, FEATURES.index("content_words")] == 3.7
    assert MINILM_CALIBRATION.limits["content_words"] == pytest.approx(math.log1p(41), abs=1e-5)
    assert RANK_CALIBRATION.limits == MINILM_CALIBRATION.limits
    with pytest.raises(ConfigError, match="unknown feature"):
        Calibration(name="t", intercept=0.0, weights={}, limits={"words": 3.0})
    with pytest.raises(ConfigError, match="finite"):
        Calibration(name="t", intercept=0.0, weights={}, limits={"content_words": float("nan")})


def test_a_fitted_calibration_stops_at_the_largest_value_it_saw() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2_000, len(FEATURES)))
    y = x[:, FEATURES.index("rr_bm25")] > 0
    fitted = fit_calibration(x, y, name="limits", embedder="e")
    assert fitted.limits == {f: pytest.approx(x[:, FEATURES.index(f)].max(), abs=1e-6) for f in FEATURES}


def test_a_calibration_refuses_unknown_features_and_bad_weights() -> None:
    with pytest.raises(ConfigError, match="unknown feature"):
        Calibration(name="t", intercept=0.0, weights={"cosyne": 1.0})
    with pytest.raises(ConfigError, match="finite"):
        Calibration(name="t", intercept=0.0, weights={"cosine": float("nan")})


def test_each_store_gets_the_calibration_of_its_embedder() -> None:
    assert calibration_for("sentence-transformers/all-MiniLM-L6-v2", None) is MINILM_CALIBRATION
    assert calibration_for("hash-32", None) is RANK_CALIBRATION
    mine = Calibration(name="mine", embedder="hash-32", intercept=0.0, weights={"cosine": 1.0})
    assert calibration_for("hash-32", mine) is mine
    with pytest.raises(ConfigError, match="fitted for the embedder 'hash-32'"):
        calibration_for("openai:text-embedding-3-small", mine)


def test_the_shipped_models_are_fitted_and_only_minilm_has_a_floor() -> None:
    # Fitted by benchmarks/agent_context.py --fit; see benchmarks/results/agent_context.json.
    for shipped in (MINILM_CALIBRATION, RANK_CALIBRATION):
        assert shipped.weights and "LoCoMo" in shipped.name
    assert MINILM_CALIBRATION.floor > 0 and RANK_CALIBRATION.floor == 0
    assert "cosine" in MINILM_CALIBRATION.weights and not set(RANK_CALIBRATION.weights) & COSINE_FEATURES


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_calibration_refuses_an_intercept_that_is_not_a_finite_number(bad: float) -> None:
    # Issue 40 item 5: a NaN intercept made every score NaN, so min_score and abstention stopped
    # cutting; inf made every score 1.0.
    with pytest.raises(ConfigError, match="intercept"):
        Calibration(name="t", intercept=bad, weights={"cosine": 1.0})
    with pytest.raises(ConfigError, match="intercept"):
        RecallConfig(relevance={"calibration": {"name": "t", "intercept": bad, "weights": {}}})


def test_a_calibration_refuses_weights_no_fit_would_give() -> None:
    with pytest.raises(ConfigError, match="weights"):
        Calibration(name="t", intercept=0.0, weights={"cosine": 1e300, "cosine_gap": -1e300})


_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    intercept=st.floats(allow_nan=True, allow_infinity=True),
    weights=st.dictionaries(st.sampled_from(FEATURES), st.floats(allow_nan=True, allow_infinity=True), max_size=6),
    rows=st.lists(st.lists(_finite, min_size=len(FEATURES), max_size=len(FEATURES)), min_size=1, max_size=5),
)
def test_every_score_is_finite_and_in_0_1_or_the_calibration_is_refused(
    intercept: float, weights: dict[str, float], rows: list[list[float]]
) -> None:
    try:
        calibration = Calibration(name="t", intercept=intercept, weights=weights)
    except ConfigError:
        return
    scores = calibration.probabilities(np.asarray(rows, dtype=np.float64))
    assert np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()
