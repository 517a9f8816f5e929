"""Bulk import on Ray against single-process ``add_many``, and the arithmetic for a cluster.

Why: issue 29 item 4. A chat history of billions of turns is a single-process ``add_many`` loop for
years of one core; ``memory_retrievers.bulk.import_records`` embeds on Ray workers and writes from
one process. This measures, on this machine and with the real all-MiniLM-L6-v2 model, the same
LoCoMo turns:

1. ``add_many``: one process embeds and writes (the model loaded and warmed first);
2. ``import_records`` on a local Ray instance of ``--workers`` CPUs: actors embed, this process
   writes (wall time including the actors' start and model load, and without it);
3. the writer's ceiling: ``add_many`` of the same records with their vectors precomputed (no model),
   in commits of ``--batch-size`` rows: the rate one writer commits at.

Then the cluster arithmetic: N workers embed at N * (per-worker rate), and the single writer
bounds the total at its commit rate; beyond that, split the table (one writer per shard).

    python benchmarks/bulk_ray.py --data ../shared/data/locomo/locomo_dev.json [--turns 3435] [--workers 2]

Results go to benchmarks/results/bulk_ray.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, load_turns

from memory_retrievers import MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.bulk import import_records
from memory_retrievers.bulk.jobs import DEFAULT_EMBED_BATCH

OUT = Path(__file__).resolve().parent / "results" / "bulk_ray.json"
ROOT = Path(__file__).resolve().parents[1]


def records_of(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """LoCoMo turns as chat records (one namespace per conversation), as the CLI's LoCoMo import makes them."""
    turns = load_turns(path)[:limit]
    return [
        {
            "text": t.text,
            "namespace": t.conversation,
            "kind": "message",
            "session_id": f"{t.conversation}/{t.session}",
            "created_at": t.created_at + timedelta(seconds=i),
            "metadata": {"dia_id": t.dia_id},
        }
        for i, t in enumerate(turns)
    ]


def timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def start_ray(workers: int) -> Any:
    import ray

    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        ray.init(
            num_cpus=workers,
            include_dashboard=False,
            ignore_reinit_error=True,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    return ray


def cluster(per_worker: float, commit_rate: float) -> list[dict[str, Any]]:
    """Throughput of N workers and one writer, and the days for 10M / 1B / 10B turns."""
    rows = []
    for n in (2, 8, 32, 128, 512):
        rate = min(n * per_worker, commit_rate)
        rows.append(
            {
                "workers": n,
                "turns_per_s": round(rate),
                "bound": "writer" if n * per_worker > commit_rate else "embedding",
                "days_10M": round(10e6 / rate / 86400, 2),
                "days_1B": round(1e9 / rate / 86400, 1),
                "days_10B": round(10e9 / rate / 86400, 1),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON (locomo_dev.json)")
    parser.add_argument("--turns", type=int, default=None, help="At most this many turns (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="Ray CPUs and embedding actors")
    parser.add_argument("--batch-size", type=int, default=256, help="Rows per commit (add_many's default)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    records = records_of(args.data, args.turns)
    n = len(records)
    tmp = Path(tempfile.mkdtemp(prefix="bulk_ray_"))

    model = SentenceTransformerEmbedder()
    _, load_s = timed(lambda: model.embed_query("warm up"))
    with MemoryStore(tmp / "plain", embedder=model) as plain:
        _, plain_s = timed(lambda: plain.add_many(records, batch_size=args.batch_size, progress=False))
        exported = [r for ns in plain.namespaces() for r in plain.admin.export(ns)]
    print(f"add_many: {n} turns in {plain_s:.1f} s = {n / plain_s:.0f} turns/s (model load {load_s:.1f} s)")

    by_turn = {(r["namespace"], r["metadata"]["dia_id"]): r["vector"] for r in exported}
    with_vectors = [{**r, "vector": by_turn[(r["namespace"], r["metadata"]["dia_id"])]} for r in records]
    with MemoryStore(tmp / "writer", embedder=SentenceTransformerEmbedder()) as writer:
        _, commit_s = timed(lambda: writer.add_many(with_vectors, batch_size=args.batch_size, progress=False))
    commit_rate = n / commit_s
    print(f"writer ceiling (vectors given): {commit_rate:.0f} turns/s, {commit_rate / args.batch_size:.1f} commits/s")

    # Ray starts only now, so its servers take no CPU from the single-process runs above. It starts them
    # by fork+exec: torch's and LanceDB's fork warnings in those children are harmless (they exec at once).
    ray = start_ray(args.workers)
    try:
        with MemoryStore(tmp / "ray", embedder=SentenceTransformerEmbedder()) as on_ray:
            report, ray_s = timed(
                lambda: import_records(on_ray, records, batch_size=args.batch_size, workers=args.workers)
            )
    finally:
        ray.shutdown()
    ray_rate = n / ray_s
    # Once the actors run: the time after the first vectors came back, over the records after the first
    # batch of every actor (each may have embedded one while the first came back: not counted, to stay low).
    head = args.workers * DEFAULT_EMBED_BATCH
    steady = (n - head) / (ray_s - report.startup_seconds) if n > 2 * head else ray_rate
    print(
        f"Ray import: {n} turns in {ray_s:.1f} s = {ray_rate:.0f} turns/s ({args.workers} workers); "
        f"first vectors after {report.startup_seconds:.1f} s, {steady:.0f} turns/s after that"
    )
    per_worker = steady / args.workers
    result = {
        "command": "python benchmarks/bulk_ray.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "turns": n,
        "batch_size": args.batch_size,
        "workers": args.workers,
        "model_load_s": round(load_s, 2),
        "add_many": {"seconds": round(plain_s, 2), "turns_per_s": round(n / plain_s, 1)},
        "ray_import": {
            "seconds": round(ray_s, 2),
            "turns_per_s": round(ray_rate, 1),
            "startup_seconds": round(report.startup_seconds, 2),
            "steady_turns_per_s": round(steady, 1),
            "per_worker_turns_per_s": round(per_worker, 1),
            "added": report.added,
            "batches": report.batches,
        },
        "ray_vs_add_many": round(ray_rate / (n / plain_s), 3),
        "ray_steady_vs_add_many": round(steady / (n / plain_s), 3),
        "writer_ceiling": {
            "seconds": round(commit_s, 2),
            "turns_per_s": round(commit_rate, 1),
            "commits_per_s": round(commit_rate / args.batch_size, 2),
        },
        "cluster_extrapolated": cluster(per_worker, commit_rate),
        "notes": (
            "Measured on this machine's shared cores (other jobs ran beside it): ratios within one run count. "
            "cluster_extrapolated is arithmetic, not a measurement: N workers times the per-worker rate measured "
            "here, capped by the single writer's commit rate measured here (local disk; object storage commits "
            "are slower, see benchmarks/capacity.py). Past the cap, shard the table: one writer per shard."
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
