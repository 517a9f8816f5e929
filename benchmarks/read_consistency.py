"""Read-consistency benchmark: what checking for other processes' commits costs per read.

Why: ``StoreConfig.read_consistency_interval`` defaults to ``timedelta(0)`` (every read checks the
table's latest version) so that app workers sharing a store see each other's writes. This
measures that check against ``None`` (never check) and a 1 s interval, on the same table, per read
kind, as a ratio of medians: machine noise hits the configurations alike because rounds
alternate. The hash embedder keeps the model out of the figures (with the real model a recall
spends most of its time embedding the query, and the ratio is smaller).

    python benchmarks/read_consistency.py [--rows 2000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore

CONFIGS: dict[str, timedelta | None] = {"none": None, "interval_0": timedelta(0), "interval_1s": timedelta(seconds=1)}


def reads(store: MemoryStore, ids: list[str]) -> dict[str, Callable[[], Any]]:
    retriever = MemoryRetriever(store, namespace="bench")
    return {
        "get": lambda: store.get(ids[len(ids) // 2], namespace="bench"),
        "count": lambda: store.count(namespace="bench"),
        "list_20": lambda: store.list("bench", limit=20),
        "fts_search": lambda: store.fts_search("note about topic 7", namespace="bench", k=10),
        "vector_search": lambda: store.vector_search("note about topic 7", namespace="bench", k=10),
        "recall": lambda: retriever.recall("note about topic 7", k=5),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "read_consistency.json")
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="mr-bench-")
    embedder = HashEmbedder(384)
    with MemoryStore(folder, embedder=embedder) as writer:
        records = [{"text": f"note {i} about topic {i % 50}", "id": f"m{i}"} for i in range(args.rows)]
        writer.add_many(records, namespace="bench", dedup=False, progress=False)
        writer.admin.optimize()
    stores = {
        name: MemoryStore(folder, embedder=embedder, config={"read_consistency_interval": rci})
        for name, rci in CONFIGS.items()
    }
    ids = [f"m{i}" for i in range(args.rows)]
    calls = {name: reads(store, ids) for name, store in stores.items()}
    samples: dict[str, dict[str, list[float]]] = {name: {op: [] for op in calls[name]} for name in stores}
    for name in stores:  # warm up: views loaded, indexes opened
        for fn in calls[name].values():
            fn()
    names = list(stores)
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]  # who goes first rotates: no position bias
        for op in calls["none"]:
            for name in order:
                start = time.perf_counter()
                calls[name][op]()
                samples[name][op].append(time.perf_counter() - start)
    medians = {name: {op: statistics.median(v) * 1000 for op, v in ops.items()} for name, ops in samples.items()}
    result = {
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
        "rows": args.rows,
        "rounds": args.rounds,
        "median_ms": {name: {op: round(v, 3) for op, v in ops.items()} for name, ops in medians.items()},
        "ratio_vs_none": {
            name: {op: round(medians[name][op] / medians["none"][op], 2) for op in medians[name]}
            for name in stores
            if name != "none"
        },
        "extra_ms_per_read_interval_0": {
            op: round(medians["interval_0"][op] - medians["none"][op], 3) for op in medians["none"]
        },
    }
    for store in stores.values():
        store.close()
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
