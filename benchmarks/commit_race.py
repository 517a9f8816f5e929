"""Does an object store keep every acknowledged write when several processes write at once?

Several processes ('spawn') add memories to one store as fast as they can; then every
acknowledged memory is looked up. LanceDB needs the store to honour ``If-None-Match: *`` on PUT
(each commit creates the next manifest only if nobody else did); a store that ignores it silently
replaces one writer's commit with another's.

By default this runs on a SeaweedFS server it starts on loopback, twice: directly, and through a
proxy that removes ``If-None-Match`` (a store without conditional PUT). Pass ``--uri s3://...``
to check your own store instead (credentials and endpoint from the ``AWS_*`` variables; it
writes a scratch table under that prefix and leaves it there).

    python benchmarks/commit_race.py [--uri s3://bucket/scratch] [--procs 4] [--writes 25]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's root: testing/ (the test servers)

from memory_retrievers import HashEmbedder, MemoryStore
from testing.local_s3 import LocalS3Server
from testing.race_proxy import RaceProxy


def writer(uri: str, options: dict[str, str] | None, worker: int, writes: int, barrier: Any, out: Any) -> None:
    store = MemoryStore(uri, storage_options=options, embedder=HashEmbedder(32))
    barrier.wait(120)  # every process writes at once
    acked, errors = [], []
    for i in range(writes):
        try:
            acked.append(store.add(f"writer {worker} memory {i}", namespace="race", id=f"{worker}-{i}", dedup=False).id)
        except Exception as exc:  # an error is honest: the caller knows that write failed
            errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
    store.close()
    out.put((acked, errors))


def race(uri: str, options: dict[str, str] | None, procs: int, writes: int) -> dict[str, Any]:
    with MemoryStore(uri, storage_options=options, embedder=HashEmbedder(32)) as store:
        store.add("seed", namespace="race", id="seed")  # table and indexes exist before the race
    ctx = mp.get_context("spawn")
    out, barrier = ctx.Queue(), ctx.Barrier(procs)
    workers = [ctx.Process(target=writer, args=(uri, options, w, writes, barrier, out)) for w in range(procs)]
    t0 = time.perf_counter()
    for p in workers:
        p.start()
    results = [out.get(timeout=600) for _ in workers]
    for p in workers:
        p.join(60)
    took = time.perf_counter() - t0
    acked = {i for a, _ in results for i in a}
    errors = [e for _, es in results for e in es]
    with MemoryStore(uri, storage_options=options, embedder=HashEmbedder(32)) as store:
        found = {m.id for m in store.list("race", limit=100_000)} - {"seed"}
    return {
        "attempted": procs * writes,
        "acknowledged": len(acked),
        "errors": len(errors),
        "found": len(found & acked),
        "lost": len(acked - found),
        "seconds": round(took, 1),
        "first_error": errors[0] if errors else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uri", help="an s3:// prefix to check (AWS_* variables); default: SeaweedFS on loopback")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--writes", type=int, default=25, help="add() calls per process")
    args = ap.parse_args()
    run = uuid.uuid4().hex[:8]
    rows: list[tuple[str, dict[str, Any]]] = []
    if args.uri:
        rows.append((args.uri, race(f"{args.uri.rstrip('/')}/commit-race-{run}", None, args.procs, args.writes)))
    else:
        with LocalS3Server(anonymous=True) as s3:
            rows.append(
                (
                    "SeaweedFS (If-None-Match honoured)",
                    race(s3.uri(f"direct-{run}"), s3.storage_options, args.procs, args.writes),
                )
            )
            proxy = RaceProxy(s3.port, drop_if_none_match=True)
            try:
                rows.append(
                    (
                        "same server, If-None-Match removed",
                        race(s3.uri(f"dropped-{run}"), proxy.storage_options, args.procs, args.writes),
                    )
                )
            finally:
                proxy.close()
    print(f"\n{args.procs} processes x {args.writes} add() each, at once")
    print(f"{'store':38} {'acked':>6} {'errors':>6} {'found':>6} {'lost':>6} {'s':>6}")
    for name, r in rows:
        print(f"{name:38} {r['acknowledged']:6} {r['errors']:6} {r['found']:6} {r['lost']:6} {r['seconds']:6}")
        if r["first_error"]:
            print(f"  first error: {r['first_error']}")


if __name__ == "__main__":
    main()
