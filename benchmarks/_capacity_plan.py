"""The arithmetic that scales measured per-operation figures to 10 million users (docs/how-to/deploy.md).

Pure functions of their arguments: every default is an assumption named here, every input that is
a measurement comes from a results file of benchmarks/results/ (capacity.json, the per-operation
requests; capacity_cold_tenant.json, a tenant's first recall after ``cluster()``; bulk_ray.json, the
bulk import's rates). Run as a script, it reads those files and writes the plan:

    python benchmarks/_capacity_plan.py        # -> benchmarks/results/capacity_plan.json
"""

from __future__ import annotations

import math
from typing import Any

#: Amazon S3's documented floor per partitioned prefix (it partitions busier prefixes further).
S3_GETS_PER_S_PER_PREFIX = 5_500
S3_PUTS_PER_S_PER_PREFIX = 3_500


def plan(
    *,
    bytes_per_row: float,
    warm_recall_requests: float,
    single_add_ms: float,
    cold_recall_requests: float | None = None,
    users: int = 10_000_000,
    memories_per_user: int = 1_000,
    rows_per_table: int = 10_000_000,
    recalls_per_user_per_day: float = 20,
    adds_per_user_per_day: float = 20,
    peak_over_mean: float = 3,
) -> dict[str, Any]:
    """Totals and per-table rates for a deployment, from measured per-row and per-operation figures.

    Args:
        bytes_per_row: Stored bytes per memory, indexes included (measured).
        warm_recall_requests: Object-store requests of one recall on a warm handle (measured).
        single_add_ms: Wall time of one blocking ``add`` at the target latency (measured): a
            writer that waits for each commit makes at most ``1000 / single_add_ms`` per second.
        cold_recall_requests: Object-store requests of a tenant's first recall on a worker that
            holds no view of it (measured on a clustered table); the plan then also gives the
            request rate if every recall were such a first recall (no sticky routing at all).
        users: Namespaces.
        memories_per_user: Rows per namespace.
        rows_per_table: Shard size: namespaces are hashed onto tables of about this many rows.
        recalls_per_user_per_day: Average recalls per user per day.
        adds_per_user_per_day: Average single adds (one commit each) per user per day.
        peak_over_mean: Peak traffic over the daily mean.

    Returns:
        Rows, storage, table count, and peak recalls, requests and adds per second overall and
        per table, with one blocking writer's rate and S3's per-prefix request floor to compare.
    """
    rows = users * memories_per_user
    tables = math.ceil(rows / rows_per_table)
    day_s = 86_400
    peak_recalls = users * recalls_per_user_per_day / day_s * peak_over_mean
    peak_adds = users * adds_per_user_per_day / day_s * peak_over_mean
    cold = {}
    if cold_recall_requests is not None:
        cold = {
            "peak_cold_recall_requests_per_s_per_table": round(peak_recalls * cold_recall_requests / tables, 1),
        }
    return {
        "rows": rows,
        "storage_tb": round(rows * bytes_per_row / 1e12, 2),
        "tables": tables,
        "users_per_table": rows_per_table // memories_per_user,
        "peak_recalls_per_s": round(peak_recalls),
        "peak_recall_requests_per_s": round(peak_recalls * warm_recall_requests),
        "peak_recall_requests_per_s_per_table": round(peak_recalls * warm_recall_requests / tables, 1),
        "peak_adds_per_s_per_table": round(peak_adds / tables, 1),
        "blocking_adds_per_s_per_writer": round(1000 / single_add_ms, 1),
        **cold,
        "s3_gets_per_s_per_prefix": S3_GETS_PER_S_PER_PREFIX,
        "s3_puts_per_s_per_prefix": S3_PUTS_PER_S_PER_PREFIX,
        "assumptions": {
            "users": users,
            "memories_per_user": memories_per_user,
            "rows_per_table": rows_per_table,
            "recalls_per_user_per_day": recalls_per_user_per_day,
            "adds_per_user_per_day": adds_per_user_per_day,
            "peak_over_mean": peak_over_mean,
        },
    }


def bulk_import_days(
    *,
    rows: int,
    workers: int,
    per_worker_rows_per_s: float,
    writer_rows_per_s: float,
    tables: int,
) -> dict[str, Any]:
    """How long a bulk import of ``rows`` takes on a cluster, from measured per-worker rates.

    The embedding spreads over ``workers``; each table has one writer (its commits are serial), so
    the rate is the smaller of the workers' embedding rate and the tables' combined write rate.

    Args:
        rows: Memories to import.
        workers: Ray workers embedding (one model each).
        per_worker_rows_per_s: One worker's embedding rate (measured, after start-up).
        writer_rows_per_s: One table's writer rate with precomputed vectors (measured).
        tables: Shards written in parallel, one writer each.

    Returns:
        The rate, which side bounds it, and the days it takes.
    """
    embedding = workers * per_worker_rows_per_s
    writing = tables * writer_rows_per_s
    rate = min(embedding, writing)
    return {
        "workers": workers,
        "tables": tables,
        "rows_per_s": round(rate),
        "bound": "embedding" if embedding <= writing else "writers",
        "days": round(rows / rate / 86_400, 2),
    }


def main() -> dict[str, Any]:
    """Read the measured figures from benchmarks/results/ and write the plan beside them."""
    import json
    from pathlib import Path

    results = Path(__file__).resolve().parent / "results"
    capacity = json.loads((results / "capacity.json").read_text())
    cold = json.loads((results / "capacity_cold_tenant.json").read_text())
    bulk = json.loads((results / "bulk_ray.json").read_text())
    biggest = capacity["tables"][-1]
    slowest = biggest["rounds"][f"{capacity['latencies_ms'][-1]:g}ms"]
    cold_after = cold["tables"][-1]["after"]
    cold_requests = cold_after[sorted(cold_after)[-1]]["open_first_recall"]["total_requests"]
    users_plan = plan(
        bytes_per_row=biggest["build"]["data_bytes_per_row"],
        warm_recall_requests=slowest["warm_recall"]["total_requests"],
        single_add_ms=slowest["single_add"]["ms"],
        cold_recall_requests=cold_requests,
    )
    per_worker = bulk["ray_import"]["per_worker_turns_per_s"]
    writer = bulk["writer_ceiling"]["turns_per_s"]
    imports = [
        bulk_import_days(
            rows=users_plan["rows"],
            workers=workers,
            per_worker_rows_per_s=per_worker,
            writer_rows_per_s=writer,
            tables=users_plan["tables"],
        )
        for workers in (8, 100, 1_000, 10_000)
    ]
    out = {"plan_10m_users": users_plan, "bulk_import_10b_rows": imports}
    (results / "capacity_plan.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
