"""The agent-context benchmark runs end to end (``--quick``) through every adapter, and the blocks
it records hold what the issue asked for: no copies, no echoes, the evidence found.

Not a quality gate on the numbers (those are in docs/explanation/agent-context.md, from full runs); this proves
the one documented command works on a fresh clone and that each adapter's path is really exercised.
It runs ``--quick`` on two of its four sessions and a smaller overhead sample (the long tier's budget);
the code paths are the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testing.paths import ROOT

SYSTEMS = (
    "core",
    "lancedb-hybrid",
    "core-clean",
    "langchain-middleware",
    "langchain-history",
    "llamaindex-memory",
    "llamaindex-chat-engine",
)


@pytest.mark.heavy
def test_the_quick_run_records_a_block_for_every_question_through_every_adapter(tmp_path: Path) -> None:
    out = tmp_path / "agent_context.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "agent_context.py"),
            "--quick",
            # The first two of --quick's four sessions: 60 questions (every LoCoMo category and both
            # off-topic sets) over 74 messages instead of 90 over 182, about half the run; the
            # copies and echoes every system but lancedb-hybrid must leave out are there (asserted).
            *("--sessions", "2"),
            # The per-turn overhead over the last 10 user turns, not 30: both timing modes (settled,
            # and two blocks of five back to back) and every leg still run; only the sample is smaller.
            *("--overhead-turns", "10"),
            "--systems",
            ",".join(SYSTEMS),
            "--out",
            str(out),
        ],
        check=True,
        timeout=1500,
        capture_output=True,
    )
    report = json.loads(out.read_text())
    assert list(report["systems"]) == list(SYSTEMS)
    blocks = {s["blocks"] for s in report["systems"].values()}
    assert len(blocks) == 1 and blocks.pop() > 50  # the same questions, asked of each
    for name in SYSTEMS:
        summary = report["systems"][name]
        assert summary["evidence recall@10"] > 0.4, name
        if name == "lancedb-hybrid":
            # The plain peer: copies and echoes are what it is measured for. It pastes some, so the
            # replayed chat holds what the zeros below say the other systems leave out.
            assert summary["exact-duplicate lines"] > 0 and summary["window lines"] > 0, name
            continue
        assert summary["exact-duplicate lines"] == 0 and summary["window lines"] == 0, name
    for name in ("langchain-middleware", "llamaindex-memory"):
        for pace, overhead in report["systems"][name]["per-turn overhead"].items():  # settled, back to back
            assert overhead["turn p50 ms, with memory"] > 0 and overhead["turn p50 ms, without"] > 0, pace
            assert overhead["bare recall p50 ms"] > 0 and "overhead / bare recall" in overhead, pace
    ratio = report["latency, interleaved"]["ratio"]
    assert 0 < ratio < 10
    tables = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "agent_context.py"), "--tables", "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    header, rule, *rows = tables.splitlines()
    assert header == "| | " + " | ".join(f"`{n}`" for n in SYSTEMS) + " |" and rule.startswith("|---")
    assert rows[0].startswith("| evidence recall@10 | ") and len(rows[0].split("|")) == len(SYSTEMS) + 3


@pytest.mark.heavy
def test_fit_refits_the_calibration_leaving_each_conversation_out(tmp_path: Path) -> None:
    out = tmp_path / "fit.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "agent_context.py"),
            *("--systems", "core,core-clean", "--conversations", "2", "--sessions", "3", "--fit", "--out", str(out)),
        ],
        check=True,
        timeout=1500,
        capture_output=True,
        text=True,
    )
    assert "MINILM_CALIBRATION = Calibration(" in run.stdout and "RANK_CALIBRATION = Calibration(" in run.stdout
    report = json.loads(out.read_text())["calibration"]
    cosine, rank_only = report["cosine"], report["rank only"]
    assert 0 <= cosine["loco reliability, as shipped"]["ece"] <= 1
    assert cosine["shipped"]["embedder"] and rank_only["shipped"]["embedder"] is None
    assert rank_only["abstain"] == 0 and rank_only["floor"] == 0  # without the cosine it never abstains
    assert report["cosine"]["loco, never abstaining, fused order"]["recall@10 core-clean"] > 0
