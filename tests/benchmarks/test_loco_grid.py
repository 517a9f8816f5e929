"""The leave-one-conversation-out grid (benchmarks/loco_weights.py) stays in step with RecallConfig."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from memory_retrievers import RecallConfig
from testing.paths import BENCHMARKS


@pytest.fixture
def loco(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import loco_weights  # type: ignore[import-not-found]

    yield loco_weights
    for name in ("loco_weights", "locomo_recall", "_data"):
        sys.modules.pop(name, None)


def test_every_grid_point_is_a_valid_config_and_the_defaults_are_on_the_grid(loco: Any) -> None:
    points = list(itertools.product(*loco.GRID.values()))
    configs = [RecallConfig.model_validate(loco.config_of(p)) for p in points]
    assert len({c.model_dump_json() for c in configs}) == len(points)  # each point is a distinct config
    d = RecallConfig()
    assert (d.scoring.speaker_boost, d.scoring.date_boost, d.weights.dated, d.weights.context) in points
    assert loco.config_of((d.scoring.speaker_boost, d.scoring.date_boost, d.weights.dated, d.weights.context)) == {
        "scoring": {"speaker_boost": d.scoring.speaker_boost, "date_boost": d.scoring.date_boost},
        "weights": {"dated": d.weights.dated, "context": d.weights.context},
    }
