"""The arithmetic of benchmarks/_capacity_plan.py, which docs/DEPLOYMENT.md's capacity plan shows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def plan(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _capacity_plan  # type: ignore[import-not-found]

    yield _capacity_plan.plan
    sys.modules.pop("_capacity_plan", None)


def test_ten_million_users_of_a_thousand_memories(plan: Any) -> None:
    got = plan(bytes_per_row=2_000, warm_recall_requests=10, single_add_ms=500)
    assert got["rows"] == 10_000_000_000
    assert got["storage_tb"] == 20.0  # 1e10 rows x 2 kB
    assert got["tables"] == 1_000 and got["users_per_table"] == 10_000
    # 1e7 users x 20 recalls / 86,400 s x 3 (peak) = 6,944/s; x 10 requests each
    assert got["peak_recalls_per_s"] == 6_944
    assert got["peak_recall_requests_per_s"] == 69_444
    assert got["peak_recall_requests_per_s_per_table"] == 69.4
    assert got["peak_adds_per_s_per_table"] == 6.9
    assert got["blocking_adds_per_s_per_writer"] == 2.0


def test_a_partial_last_table_still_counts(plan: Any) -> None:
    sizes = {"users": 15, "memories_per_user": 1, "rows_per_table": 10}
    got = plan(bytes_per_row=1, warm_recall_requests=1, single_add_ms=1, **sizes)
    assert got["tables"] == 2
