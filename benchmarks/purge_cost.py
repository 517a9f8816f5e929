"""What ``purge()`` costs: seconds and bytes on disk, by table size, next to a plain ``optimize()``.

Why: ``purge`` is the right to be forgotten made physical (forgotten text removed from every older
version and file). It rewrites the table, so users need to know what it costs before scheduling it.
The store holds --sizes memories with 384-dimension vectors (the default model's width; hash
vectors, so the timing is the table's and not the model's), one namespace per 1,000, then forgets
one namespace and purges. The peer figure is ``optimize()`` on the same table just before.

    python benchmarks/purge_cost.py [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from memory_retrievers import HashEmbedder, MemoryStore


def measure(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "db", embedder=HashEmbedder(384))
        for start in range(0, n, 5_000):
            store.add_many(
                [
                    {"text": f"memory {i}: the user said something about topic {i % 97}", "namespace": f"ns{i // 1000}"}
                    for i in range(start, min(n, start + 5_000))
                ],
                batch_size=5_000,
                dedup=False,
            )
        t0 = time.perf_counter()
        store.admin.optimize()
        optimize_s = time.perf_counter() - t0
        store.forget("ns0")
        before = store.admin.stats().disk_bytes or 0  # the table folder, old versions included
        t0 = time.perf_counter()
        store.admin.purge()
        purge_s = time.perf_counter() - t0
        after = store.admin.stats().disk_bytes or 0
        store.close()
    return {
        "memories": n,
        "optimize_s": round(optimize_s, 2),
        "purge_s": round(purge_s, 2),
        "purge_vs_optimize": round(purge_s / optimize_s, 2),
        "mb_before_purge": round(before / 1e6, 1),
        "mb_after_purge": round(after / 1e6, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "purge_cost.json")
    args = ap.parse_args()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rows.append(measure(n))
        print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
