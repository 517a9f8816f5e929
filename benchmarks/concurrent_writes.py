"""Single ``add`` latency and throughput: one writer thread, eight writer threads, and both again with
``optimize()`` running in the background, against a peer doing the same writes straight into LanceDB.

Why: a chat app writes one turn at a time, from many request threads at once. Each writer waits
for its own ``add`` (real model, one namespace, a store already holding --n memories). The peer is
the least a memory write can cost: embed the text, then ``table.add`` one row into a LanceDB table
with the same vector and full-text indexes, one lock around it (LanceDB has no writer queue); the
ratios compare both in the same process, on the same texts and machine.

    python benchmarks/concurrent_writes.py [--data ../shared/data/locomo/locomo_dev.json] [--n 5000]

Issue targets: one writer p99 <= 100 ms; eight writers >= 5x one writer's throughput, p99 <= 250 ms;
the same with ``optimize()`` running.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, load_turns

from memory_retrievers import MemoryStore, SentenceTransformerEmbedder

NAMESPACE = "bench"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_writers(write: Callable[[str], None], texts: list[str], threads: int, background: Callable[[], None] | None):
    """``threads`` writers share ``texts``; returns per-call latencies (ms) and adds per second."""
    latencies: list[float] = []
    lock = threading.Lock()
    todo = iter(texts)
    stop = threading.Event()

    def writer() -> None:
        while True:
            with lock:
                text = next(todo, None)
            if text is None:
                return
            t0 = time.perf_counter()
            write(text)
            ms = (time.perf_counter() - t0) * 1000
            with lock:
                latencies.append(ms)

    def maintain() -> None:
        while not stop.is_set() and background is not None:
            background()

    bg = threading.Thread(target=maintain, daemon=True)
    if background is not None:
        bg.start()
    workers = [threading.Thread(target=writer) for _ in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    stop.set()
    if background is not None:
        bg.join()
    return latencies, len(latencies) / elapsed


def summary(latencies: list[float], per_s: float) -> dict[str, float]:
    return {
        "adds_per_s": round(per_s, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(max(latencies), 1),
    }


class Ours:
    def __init__(self, folder: Path, emb: SentenceTransformerEmbedder, seed: list[dict[str, Any]]) -> None:
        self.store = MemoryStore(folder / "ours", embedder=emb)
        self.store.add_many(seed, batch_size=512)
        self.store.flush()

    def write(self, text: str) -> None:
        self.store.add(text, namespace=NAMESPACE, kind="fact", dedup=False)

    def optimize(self) -> None:
        self.store.admin.optimize()

    def close(self) -> None:
        self.store.close()


class RawLanceDB:
    """The peer: embed, then one ``table.add`` per write, serialised by a lock."""

    def __init__(self, folder: Path, emb: SentenceTransformerEmbedder, seed: list[dict[str, Any]]) -> None:
        self.emb = emb
        db = lancedb.connect(str(folder / "raw"))
        texts = [r["text"] for r in seed]
        vectors = emb.embed_documents(texts)
        self.table = db.create_table(
            "memories",
            data=pa.table({"namespace": [NAMESPACE] * len(texts), "text": texts, "vector": list(vectors)}),
        )
        self.table.create_fts_index("text")
        self.table.create_scalar_index("namespace")
        self.lock = threading.Lock()

    def write(self, text: str) -> None:
        vector = self.emb.embed_documents([text])[0]
        with self.lock:
            self.table.add([{"namespace": NAMESPACE, "text": text, "vector": vector}])

    def optimize(self) -> None:
        with self.lock:
            self.table.optimize()

    def close(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--n", type=int, default=5_000, help="memories stored before the timed writes")
    ap.add_argument("--writes", type=int, default=400, help="timed adds per configuration")
    ap.add_argument("--systems", default="ours,lancedb-raw")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "concurrent_writes.json")
    args = ap.parse_args()

    turns = load_turns(args.data)
    seed = [{"text": turns[i % len(turns)].text, "namespace": NAMESPACE, "kind": "fact"} for i in range(args.n)]
    emb = SentenceTransformerEmbedder()
    emb.embed_documents(["warm up"] * 64)
    makers = {"ours": Ours, "lancedb-raw": RawLanceDB}
    result: dict[str, Any] = {"n": args.n, "writes": args.writes}
    for name in args.systems.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            system = makers[name](Path(tmp), emb, seed)
            figures: dict[str, Any] = {}
            for label, threads, background in (
                ("one_writer", 1, None),
                ("eight_writers", 8, None),
                ("one_writer_optimizing", 1, system.optimize),
                ("eight_writers_optimizing", 8, system.optimize),
            ):
                texts = [f"{label} {i}: {turns[(i * 37) % len(turns)].text}" for i in range(args.writes)]
                figures[label] = summary(*run_writers(system.write, texts, threads, background))
                print(name, label, figures[label], flush=True)
            for base in ("", "_optimizing"):
                one, eight = figures[f"one_writer{base}"], figures[f"eight_writers{base}"]
                figures[f"eight_vs_one{base}"] = round(eight["adds_per_s"] / one["adds_per_s"], 2)
            result[name] = figures
            system.close()
    if "ours" in result and "lancedb-raw" in result:
        result["ours_vs_raw_throughput"] = {
            label: round(result["ours"][label]["adds_per_s"] / result["lancedb-raw"][label]["adds_per_s"], 2)
            for label in ("one_writer", "eight_writers", "one_writer_optimizing", "eight_writers_optimizing")
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
