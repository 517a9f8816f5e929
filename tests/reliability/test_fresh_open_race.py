"""Several processes opening a new store at the same moment all succeed (a regression of issue 27 item 3).

The first opener creates the table and records ``(namespace, id)`` as its primary key (field
metadata); a racing opener that found no table yet then creates it with ``exist_ok=True``, which
LanceDB refused once the schemas differed by that metadata: 1-2 of 4-6 openers failed with
"Provided schema does not match existing table schema".
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore

OPENER = """
import sys, time, pathlib
from memory_retrievers import HashEmbedder, MemoryStore
go = pathlib.Path(sys.argv[2])
pathlib.Path(f"{go}.ready{sys.argv[4]}").touch()  # imported: waits for the start
while not go.exists():
    time.sleep(0.001)
time.sleep(float(sys.argv[3]))
with MemoryStore(sys.argv[1], embedder=HashEmbedder(32)) as store:
    store.add(f"opener {sys.argv[4]} was here", namespace="n")
"""


@pytest.mark.heavy
@pytest.mark.long
def test_item3_six_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    openers, rounds = 6, 4  # each stagger (0, 10, 20, 30 ms apart) once
    failures: list[str] = []
    for trial in range(rounds):
        root = tmp_path / f"round-{trial}"
        root.mkdir()
        go = root / "go"
        # Staggered by 0-30 ms in some rounds: the window is the first opener's key recording.
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(root / "store"), str(go), f"{0.01 * i * (trial % 4):.3f}", str(i)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(openers)
        ]
        deadline = time.monotonic() + 120
        while len(list(root.glob("go.ready*"))) < openers and time.monotonic() < deadline:
            time.sleep(0.05)
        ready = len(list(root.glob("go.ready*")))
        go.write_text("go", encoding="utf-8")  # even when one never got ready: no opener left waiting
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            if proc.returncode:
                failures.append(f"round {trial}: {err.strip().splitlines()[-1] if err.strip() else proc.returncode}")
        assert failures == [], failures
        assert ready == openers, f"round {trial}: {ready} of {openers} openers got ready"
        with MemoryStore(str(root / "store"), embedder=HashEmbedder(32)) as store:
            assert store.count("n") == openers, trial  # every opener wrote into the one table
    print(f"fresh-open race: {openers} openers x {rounds} rounds, {len(failures)} failed")
    assert failures == []
