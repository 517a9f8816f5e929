"""Recall in one worker while another worker writes: a refreshed view vs a full reload.

Why: app servers run several worker processes on one store. Every commit of another worker (to
any namespace: table versions are global) makes this worker's namespace views stale. Before, a
stale view was reloaded whole (every row and vector of the namespace; on object storage about one
request per memory). Now a signature check (ids, revisions, access counts) finds what changed and
re-reads only those rows. This measures recall latency right after the other worker's write, both
ways, on the same tables, rounds alternating so machine noise hits both alike. Two stores on one
folder stand for the two workers (each has its own LanceDB handle and sees the other's commits
only through ``read_consistency_interval``, as across processes). The hash embedder keeps the model
out of the figures (with the real model each recall also embeds its query, ~5-10 ms).

    python benchmarks/foreign_writes.py [--sizes 600,5000,20000] [--rounds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from memory_retrievers.storage import views

OUT = Path(__file__).parent / "results" / "foreign_writes.json"
TOPICS = ["kettle", "garden", "piano", "berlin", "coffee", "train", "dog", "theme", "report", "hiking"]


def text(i: int) -> str:
    return f"note {i} about the {TOPICS[i % 10]} and the {TOPICS[(i * 7) % 10]}, item {i * 31 % 997}"


def run(size: int, rounds: int) -> dict[str, Any]:
    embedder = HashEmbedder(64)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db"
        reader = MemoryStore(path, embedder=embedder)
        writer = MemoryStore(path, embedder=embedder)
        for start in range(0, size, 2000):
            batch = [{"text": text(i)} for i in range(start, min(size, start + 2000))]
            writer.add_many(batch, namespace="u", dedup=False)
        writer.admin.optimize()
        retriever = MemoryRetriever(reader, namespace="u", config={"record_access": False})
        retriever.recall("kettle garden")  # the view is built
        original = views.NamespaceView.changed_since

        def unknown(self: views.NamespaceView, signature: Any) -> set[str]:
            return set(self.ids)  # "everything changed": what a stale view cost before, a full reload

        timings: dict[str, list[float]] = {"static": [], "refresh": [], "reload": []}
        counter = size
        try:
            for r in range(rounds):
                for mode in ("refresh", "reload") if r % 2 else ("reload", "refresh"):
                    views.NamespaceView.changed_since = original if mode == "refresh" else unknown  # type: ignore[method-assign]
                    counter += 1
                    target = "u" if counter % 2 else "other"  # into this namespace, or any other one
                    writer.add(text(counter), namespace=target, dedup=False)
                    started = time.perf_counter()
                    retriever.recall(TOPICS[r % 10])
                    timings[mode].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                retriever.recall(TOPICS[(r + 3) % 10])
                timings["static"].append((time.perf_counter() - started) * 1000)
        finally:
            views.NamespaceView.changed_since = original  # type: ignore[method-assign]
        counts = {"reloads": reader._views.reloads, "refreshes": reader._views.refreshes}
        reader.close()
        writer.close()
    med = {mode: round(statistics.median(t), 2) for mode, t in timings.items()}
    p95 = {mode: round(sorted(t)[int(0.95 * (len(t) - 1))], 2) for mode, t in timings.items()}
    return {
        "rows": size,
        "median_ms": med,
        "p95_ms": p95,
        "refresh_vs_reload": round(med["refresh"] / med["reload"], 2),
        "refresh_vs_static": round(med["refresh"] / med["static"], 2),
        "view_counts": counts,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="600,5000,20000", help="namespace sizes, comma-separated")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    results = [run(int(s), args.rounds) for s in args.sizes.split(",")]
    load = os.getloadavg()[0]
    report = {"machine": f"{os.cpu_count()} cores, load average {load:.1f} at the end", "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for r in results:
        print(
            f"{r['rows']:>6} rows: after another worker's write, refresh {r['median_ms']['refresh']} ms vs "
            f"reload {r['median_ms']['reload']} ms ({r['refresh_vs_reload']}x); static {r['median_ms']['static']} ms"
        )


if __name__ == "__main__":
    main()
