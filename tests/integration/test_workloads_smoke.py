"""The workload benchmark runs end to end (``--quick``) and reports every scenario sanely.

Not a speed test: ratios are measured, not asserted against targets (those are in the README,
from full runs). This proves the one documented command works on a fresh clone.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from testing.paths import ROOT


@pytest.mark.heavy
def test_the_quick_workload_run_reports_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "workloads.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "workloads.py"),
            "--quick",
            # The model alone, and add_many into the full tenants table, timed on 100 texts rather
            # than the whole pool (700 each): the same calls and ratios, about 1,700 fewer embeddings.
            *("--throughput-sample", "100"),
            "--out",
            str(out),
        ],
        check=True,
        timeout=900,
        capture_output=True,
    )
    report = json.loads(out.read_text())
    (chat,) = report["chat"]
    assert chat["memories"] == 600 and chat["vectors"] == "real MiniLM"
    for key in (
        "static_vs_lancedb",
        "after_write_vs_lancedb",
        "static_vs_plain_lancedb",
        "after_write_vs_plain_lancedb",
        "static_vs_floor",
        "after_write_vs_floor",
    ):
        assert math.isfinite(chat[key]) and chat[key] > 0, key
    # The plain LanceDB app searched and wrote its own table: its figures are real timings.
    assert chat["plain_lancedb_static_p50_ms"] > 0 and chat["plain_lancedb_add_p50_ms"] > 0
    assert 0 < chat["plain_lancedb_after_write_p50_ms"] <= chat["plain_lancedb_after_write_p95_ms"]
    assert chat["add_p50_ms"] <= chat["add_p95_ms"] <= chat["add_p99_ms"]
    assert chat["add_many_rows_per_s"] > 0 and chat["add_many_vs_raw_embedding"] > 0
    assert chat["peak_rss_mb"] > 0 and chat["disk_mb"] > 0
    # The framework peers ran on the same memories and were timed.
    assert set(chat["peers"]) == {"langchain-ensemble", "llamaindex-fusion"}
    for peer in chat["peers"].values():
        assert peer["queries"] >= 3 and peer["recall_p50_ms"] > 0 and peer["ours_vs_peer"] > 0
    tenants = report["tenants"]
    assert tenants["rows"] == 1000 and tenants["writes_during_recalls"] > 0
    for key in ("recall_vs_lancedb", "recall_vs_plain_lancedb", "recall_p95_vs_plain_lancedb_p50"):
        assert math.isfinite(tenants[key]) and tenants[key] > 0, key
    assert 0 < tenants["plain_lancedb_p50_ms"] <= tenants["plain_lancedb_p95_ms"]
    needles = report["needles"]
    assert needles["hidden"]["memories"] == 1000 + needles["needles"]
    # By default the hay is dated over the conversation's own span (--needles-dates spread).
    assert needles["dates"] == "spread"
    # Hidden among 1,000 others, the conversation's evidence is still found: a real recall figure.
    assert needles["alone"]["recall@10"] > 0.5 and needles["hidden"]["recall@10"] > 0.5
