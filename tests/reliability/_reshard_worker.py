"""A resharding process for the reshard races (tests/reliability/test_reshard_runs.py, tests/object_storage).

    python _reshard_worker.py OLD_JSON NEW_JSON OPTIONS_JSON GO_FILE OUT

Opens the sharded stores at the locations ``OLD_JSON`` and ``NEW_JSON`` (JSON lists; ``OPTIONS_JSON``
their storage options), waits until ``GO_FILE`` exists (every run starts together), runs
``reshard(old, new)`` and writes one JSON line to ``OUT``: ``done`` (with what it moved),
``refused`` (another run held the lease) or ``error``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, ReshardInProgressError, ShardedMemoryStore, reshard

WAIT_S = 180


def main(old_json: str, new_json: str, options: str, go: str, out: str) -> None:
    opts = json.loads(options) or None
    old = ShardedMemoryStore(json.loads(old_json), embedder=HashEmbedder(32), storage_options=opts)
    new = ShardedMemoryStore(json.loads(new_json), embedder=HashEmbedder(32), storage_options=opts)
    old.namespaces()  # every shard open before the race starts
    new.namespaces()
    Path(out + ".ready").write_text("ready", encoding="utf-8")
    deadline = time.monotonic() + WAIT_S
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    try:
        result = reshard(old, new)
        line = {"outcome": "done", "moved": list(result.moved), "memories": result.memories}
    except ReshardInProgressError as exc:
        line = {"outcome": "refused", "error": str(exc)}
    except Exception:
        line = {"outcome": "error", "error": traceback.format_exc()}
    Path(out).write_text(json.dumps(line) + "\n", encoding="utf-8")
    old.close()
    new.close()


def race(
    old: list[str], new: list[str], options: dict[str, str] | None, folder: Path, runs: int
) -> list[dict[str, Any]]:
    """Start ``runs`` processes resharding ``old`` into ``new`` at the same moment; each one's outcome."""
    go = folder / "go"
    procs, outs = [], [folder / f"run{r}.json" for r in range(runs)]
    args = [json.dumps(old), json.dumps(new), json.dumps(options or {}), str(go)]
    for r, out in enumerate(outs):
        with open(folder / f"run{r}.log", "ab") as err:
            procs.append(
                subprocess.Popen([sys.executable, __file__, *args, str(out)], stdout=subprocess.DEVNULL, stderr=err)
            )
    try:
        _wait(lambda: all(Path(f"{o}.ready").exists() for o in outs), procs, folder)
        go.write_text("go", encoding="utf-8")
        for p in procs:
            assert p.wait(WAIT_S) == 0, _logs(folder)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return [json.loads(out.read_text(encoding="utf-8")) for out in outs]


def _logs(folder: Path) -> str:
    return "\n".join(f.read_text(errors="replace")[-2000:] for f in sorted(folder.glob("run*.log")))


def _wait(done: Any, procs: list[subprocess.Popen[bytes]], folder: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert all(p.poll() is None for p in procs), f"a run died: {_logs(folder)}"
        assert time.monotonic() < deadline, "the runs did not start"
        time.sleep(0.01)


if __name__ == "__main__":
    main(*sys.argv[1:6])
