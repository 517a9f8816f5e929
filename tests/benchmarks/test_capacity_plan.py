"""The arithmetic of benchmarks/_capacity_plan.py, which docs/how-to/deploy.md's capacity plan shows."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from testing.paths import BENCHMARKS


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


def test_cold_recalls_give_the_request_rate_without_sticky_routing(plan: Any) -> None:
    got = plan(bytes_per_row=2_000, warm_recall_requests=10, single_add_ms=500, cold_recall_requests=45)
    # 6,944.4 recalls/s x 45 requests / 1,000 tables
    assert got["peak_cold_recall_requests_per_s_per_table"] == 312.5
    assert "peak_cold_recall_requests_per_s_per_table" not in plan(
        bytes_per_row=2_000, warm_recall_requests=10, single_add_ms=500
    )


def test_a_bulk_import_is_bound_by_the_slower_of_embedding_and_writing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _capacity_plan  # type: ignore[import-not-found]

    days = _capacity_plan.bulk_import_days
    embed = days(rows=86_400_000, workers=10, per_worker_rows_per_s=100, writer_rows_per_s=800, tables=2)
    assert embed == {"workers": 10, "tables": 2, "rows_per_s": 1_000, "bound": "embedding", "days": 1.0}
    write = days(rows=86_400_000, workers=100, per_worker_rows_per_s=100, writer_rows_per_s=500, tables=2)
    assert write["bound"] == "writers" and write["rows_per_s"] == 1_000 and write["days"] == 1.0
    sys.modules.pop("_capacity_plan", None)
