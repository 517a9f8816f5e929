"""The arithmetic that scales measured per-operation figures to 10 million users (docs/DEPLOYMENT.md).

Pure functions of their arguments: every default is an assumption named here, every input that is
a measurement comes from benchmarks/results/capacity.json.
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
