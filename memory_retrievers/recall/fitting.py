"""Fitting a :class:`~memory_retrievers.recall.calibration.Calibration` on labelled recalls (pure functions).

``benchmarks/agent_context.py --fit`` fits the shipped models this way; fit your own for another
embedder, or on your own traffic, and pass it as ``RecallConfig(relevance={"calibration": ...})``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_retrievers.recall.calibration import COSINE_FEATURES, FEATURES, Calibration

__all__ = ["fit_calibration"]


def fit_calibration(
    features: np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    *,
    name: str,
    embedder: str | None,
    use: Sequence[str] | None = None,
    l2: float = 1.0,
    floor: float = 0.0,
    abstain: float = 0.0,
    abstain_relevance: float = 1.0,
) -> Calibration:
    """Fit a :class:`Calibration` by L2-regularised logistic regression (Newton's method).

    Args:
        features: Rows of :func:`feature_matrix`, candidates of many recalls stacked.
        labels: Whether each candidate is evidence for its query.
        name: What it is fitted on.
        embedder: The embedder whose cosines the rows hold, or ``None`` to fit without the cosine
            features (:data:`COSINE_FEATURES`).
        use: The features to weigh (default: all, less the cosine ones when ``embedder`` is None).
        l2: Ridge penalty on the weights (not the intercept).
        floor: Stored as the calibration's default per-memory floor.
        abstain: Stored as the calibration's default abstention threshold.
        abstain_relevance: Stored as the relevance that keeps recall from abstaining.

    Its :attr:`~Calibration.limits` are the largest value of each weighed feature in ``features``.

    Raises:
        ValueError: Shapes disagree, or the labels are all one class.
    """
    x_all = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x_all.ndim != 2 or x_all.shape[1] != len(FEATURES) or len(y) != len(x_all):
        raise ValueError(f"features must be an (n, {len(FEATURES)}) matrix with one label per row")
    if y.min() == y.max():
        raise ValueError("labels must hold both evidence and non-evidence candidates")
    chosen = [f for f in (use or FEATURES) if embedder is not None or f not in COSINE_FEATURES]
    cols = [FEATURES.index(f) for f in chosen]
    beta = _newton(np.hstack([np.ones((len(x_all), 1)), x_all[:, cols]]), y, l2)
    return Calibration(
        name=name,
        embedder=embedder,
        intercept=round(float(beta[0]), 6),
        weights={f: round(float(b), 6) for f, b in zip(chosen, beta[1:], strict=True)},
        floor=floor,
        abstain=abstain,
        abstain_relevance=abstain_relevance,
        limits={f: round(float(x_all[:, FEATURES.index(f)].max()), 6) for f in chosen},
    )


def _newton(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """The L2-regularised logistic regression's coefficients (the first column is the intercept, not penalised)."""
    beta = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -40.0, 40.0)))
        grad = x.T @ (p - y) + penalty * beta
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return beta
