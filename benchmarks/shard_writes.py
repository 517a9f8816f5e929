"""Many tenants written by several processes at once: one table against a sharded store.

Each process ('spawn') adds memories one ``add()`` at a time for its own tenants, all processes
at once; every commit of one table goes through its one manifest, so concurrent writers of one
table race for each version and retry, while shards are independent commit sequences. Reports
writes per second and the add() latency (p50, p95) for one table and for ``--shards`` shards, on
local folders, or on the loopback S3 server (SeaweedFS, no added latency) with ``--s3``.

    python benchmarks/shard_writes.py [--procs 4] [--writes 40] [--shards 4] [--s3] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's root: testing/ (the test servers)

from memory_retrievers import HashEmbedder, MemoryStore, ShardedMemoryStore


def writer(
    locations: list[str], options: dict[str, str] | None, worker: int, writes: int, barrier: Any, out: Any
) -> None:
    embedder = HashEmbedder(32)
    store: MemoryStore = (
        MemoryStore(locations[0], storage_options=options, embedder=embedder)
        if len(locations) == 1
        else ShardedMemoryStore(locations, storage_options=options, embedder=embedder)
    )
    tenants = [f"tenant-{worker}-{t}" for t in range(8)]
    for tenant in tenants:  # open every shard this worker writes before the clock starts
        store.count(tenant)
    barrier.wait(120)
    latencies = []
    for i in range(writes):
        start = time.perf_counter()
        store.add(f"worker {worker} memory {i}", namespace=tenants[i % len(tenants)], dedup=False)
        latencies.append(time.perf_counter() - start)
    store.close()
    out.put(latencies)


def run(locations: list[str], options: dict[str, str] | None, procs: int, writes: int) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(procs + 1), ctx.Queue()
    workers = [ctx.Process(target=writer, args=(locations, options, w, writes, barrier, out)) for w in range(procs)]
    for p in workers:
        p.start()
    barrier.wait(300)
    start = time.perf_counter()
    latencies = [x for _ in workers for x in out.get(timeout=600)]
    elapsed = time.perf_counter() - start
    for p in workers:
        p.join()
    latencies.sort()
    return {
        "writes": len(latencies),
        "writes_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p95_ms": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--writes", type=int, default=40, help="add() calls per process")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--s3", action="store_true", help="on the loopback S3 server (SeaweedFS) instead of folders")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if args.s3:
            from testing.local_s3 import LocalS3Server

            server = LocalS3Server(root=Path(tmp) / "s3").start(timeout_s=120)
        try:
            options = server.storage_options if server is not None else None

            def where(name: str) -> str:
                return server.uri(name) if server is not None else str(Path(tmp) / name)

            results = {
                "procs": args.procs,
                "storage": "loopback S3" if server is not None else "local folders",
                "one_table": run([where("one")], options, args.procs, args.writes),
                f"{args.shards}_shards": run(
                    [where(f"shard-{i}") for i in range(args.shards)], options, args.procs, args.writes
                ),
            }
        finally:
            if server is not None:
                server.stop()
    print(json.dumps(results, indent=2))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
