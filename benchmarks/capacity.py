"""What each store operation costs on object storage, in requests, bytes and milliseconds, as tables grow.

Why: docs/how-to/deploy.md ("Toward 10 million users") plans a 10-billion-row deployment from these
figures. For each table size ``ROWSxNAMESPACES`` the script fills a store on a loopback SeaweedFS
server, then, behind a proxy that counts every request and adds ``latency_ms`` before each one (a
stand-in for a region's round trip), measures: opening a store, the first recall on the new handle
(cold), the first recall of another namespace on a warm handle, warm recalls, a single ``add``, the
recall right after it, an ``add_many`` batch and ``optimize``. Also: bytes per row (LanceDB's
``data_bytes`` of the current version, and every object under the store's prefix).

Texts are LoCoMo turns (cycled when the table is larger than the split) or, without the data,
synthetic words; vectors are random unit vectors given to the store, so no model runs and what is
measured is the store and the object store. Each figure is the median of ``--samples`` runs
(field by field); ``ms`` is wall time in this process, so it includes LanceDB's own work.

    python benchmarks/capacity.py [--sizes 10000x10,10000x100,100000x100] [--latencies 0,25,50] [--quick]

``--scenario cold-tenant`` measures a tenant's first recall before and after ``store.admin.cluster()``
instead (see benchmarks/_cold_tenant.py; results in benchmarks/results/capacity_cold_tenant.json):

    python benchmarks/capacity.py --scenario cold-tenant --sizes 100000x100 --latencies 25
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the repository's root: testing/ (the test servers)

from _capacity_plan import plan
from _data import DEFAULT_LOCOMO, load_turns
from _s3_meter import KINDS, MeteredProxy, Usage

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from testing.local_s3 import LocalS3Server

DIM = 384  # all-MiniLM-L6-v2's width, the default model's
K = 10
# Maintenance only when asked: a background optimize inside a measured window would be counted there.
CONFIG = {"optimize_after_rows": 10**9, "optimize_after_commits": 10**6}
QUIET = {"record_access": False}  # access statistics are flushed in batches; not part of one recall


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """``"10000x10,100000x100"`` -> ``[(10000, 10), (100000, 100)]`` (rows, namespaces)."""
    sizes = []
    for part in text.split(","):
        rows, _, namespaces = part.strip().partition("x")
        sizes.append((int(rows), int(namespaces or 1)))
    return sizes


def texts(data: Path, count: int, rng: np.random.Generator) -> list[str]:
    """``count`` memory texts: LoCoMo turns, cycled, or synthetic words when the data is absent."""
    if data.exists():
        turns = [t.text for t in load_turns(data)]
        return [turns[i % len(turns)] for i in range(count)]
    vocab = [f"word{i}" for i in range(20_000)]
    zipf = 1 / np.arange(1, len(vocab) + 1)  # word frequencies fall off as in natural text
    picks = rng.choice(len(vocab), size=(count, 14), p=zipf / zipf.sum())
    return [" ".join(vocab[j] for j in row) for row in picks]


def unit_vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def namespace(i: int) -> str:
    return f"user-{i:05d}"


def summarize(samples: list[Usage]) -> dict[str, Any]:
    """Median of each field over the samples (so the kinds need not add up to the total exactly)."""
    rows = [s.as_dict() for s in samples]

    def med(get: Callable[[dict[str, Any]], float]) -> float:
        return float(statistics.median(get(r) for r in rows))

    return {
        "samples": len(rows),
        "requests": {k: med(lambda r, k=k: r["requests"][k]) for k in KINDS},
        "total_requests": med(lambda r: r["total_requests"]),
        "bytes_read": med(lambda r: r["bytes_read"]),
        "bytes_written": med(lambda r: r["bytes_written"]),
        "ms": round(med(lambda r: r["ms"]), 1),
    }


class Bench:
    """One table on the server, measured through the proxy."""

    def __init__(self, proxy: MeteredProxy, uri: str, rows: int, namespaces: int, rng: np.random.Generator) -> None:
        self.proxy, self.uri, self.rows, self.namespaces, self.rng = proxy, uri, rows, namespaces, rng
        self.emb = HashEmbedder(DIM)
        self.texts: list[str] = []
        self.written = 0  # texts added after the build, numbered so that none is an exact duplicate

    def open(self) -> MemoryStore:
        return MemoryStore(self.uri, storage_options=self.proxy.storage_options, embedder=self.emb, config=CONFIG)

    def build(self, data: Path, batch: int) -> dict[str, Any]:
        """Fill the table (latency off), optimize, and read its size."""
        self.proxy.latency_ms = 0
        self.texts = texts(data, self.rows, self.rng)
        vectors = unit_vectors(self.rows, self.rng)
        records = [
            {"text": t, "namespace": namespace(i % self.namespaces), "kind": "message", "vector": vectors[i]}
            for i, t in enumerate(self.texts)
        ]
        with self.open() as store:
            t0 = time.perf_counter()
            store.add_many(records, batch_size=batch, dedup=False, progress=False)
            load_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            store.admin.optimize()  # builds the indexes (the ANN one from StoreConfig.ann_index_min_rows rows)
            optimize_s = time.perf_counter() - t0
            stats = store.admin.stats()
        return {
            "rows": stats.rows,
            "namespaces": len(stats.namespaces),
            "load_s": round(load_s, 1),
            "first_optimize_s": round(optimize_s, 1),
            "data_bytes": stats.data_bytes,
            "data_bytes_per_row": round(stats.data_bytes / stats.rows, 1),
            "indexes": sorted(f"{i.index_type}:{','.join(i.columns)}" for i in stats.indexes),
            "fragments": stats.fragments,
        }

    def query(self, ns: int) -> tuple[str, np.ndarray]:
        """A few words of one of the namespace's memories, and a random query vector."""
        row = ns + self.namespaces * int(self.rng.integers(0, max(1, self.rows // self.namespaces)))
        words = self.texts[min(row, self.rows - 1)].split()
        return " ".join(words[1:5]), unit_vectors(1, self.rng)[0]

    def recall(self, store: MemoryStore, ns: int) -> None:
        text, vec = self.query(ns)
        MemoryRetriever(store, namespace=namespace(ns), config=QUIET).recall(text, k=K, query_vector=vec)

    def new_records(self, n: int, ns: int) -> list[dict[str, Any]]:
        vecs = unit_vectors(n, self.rng)
        self.written += n
        base = self.written - n
        return [{"text": f"new memory {base + i}", "namespace": namespace(ns), "vector": vecs[i]} for i in range(n)]

    def round(self, latency_ms: float, samples: int, batch: int) -> dict[str, dict[str, Any]]:
        """Every operation at one injected latency."""
        self.proxy.latency_ms = latency_ms
        got: dict[str, list[Usage]] = {}

        def run(name: str, fn: Callable[[], Any]) -> Any:
            with self.proxy.measure() as usage:
                out = fn()
            got.setdefault(name, []).append(usage)
            return out

        for s in range(samples):  # a new handle each time: what a freshly started worker pays
            store = run("open", self.open)
            run("cold_recall", lambda store=store, s=s: self.recall(store, s % self.namespaces))
            store.close()
        with self.open() as store:
            self.recall(store, 0)  # warms the handle and namespace 0's view
            for s in range(samples):
                run("first_recall_of_another_namespace", lambda s=s: self.recall(store, 1 + s % (self.namespaces - 1)))
            for _ in range(samples):
                run("warm_recall", lambda: self.recall(store, 0))
            for _ in range(samples):
                (rec,) = self.new_records(1, 0)
                run("single_add", lambda rec=rec: store.add(rec.pop("text"), dedup=True, **rec))
                run("recall_after_add", lambda: self.recall(store, 0))
            run("add_many_batch", lambda: store.add_many(self.new_records(batch, 0), dedup=True, progress=False))
            run("optimize", store.admin.optimize)
        return {name: summarize(usages) for name, usages in got.items()}


def object_bytes(s3: LocalS3Server, uri: str) -> int:
    from pyarrow import fs

    infos = s3.filesystem().get_file_info(fs.FileSelector(uri.removeprefix("s3://"), recursive=True))
    return sum(i.size or 0 for i in infos if i.type == fs.FileType.File)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000x10,10000x100,100000x100", help="ROWSxNAMESPACES, comma-separated")
    ap.add_argument("--latencies", default="0,25,50", help="ms added before each object-store request")
    ap.add_argument("--samples", type=int, default=5, help="runs of each operation per latency (median)")
    ap.add_argument("--batch", type=int, default=100, help="records in the measured add_many")
    ap.add_argument("--load-batch", type=int, default=5000, help="records per commit while filling the table")
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON for texts (never copied)")
    ap.add_argument("--quick", action="store_true", help="2000x4, latencies 0,25, 2 samples (a smoke run)")
    ap.add_argument("--out", type=Path, default=None, help="results JSON (default: benchmarks/results/<scenario>)")
    ap.add_argument("--scenario", choices=["capacity", "cold-tenant"], default="capacity")
    args = ap.parse_args(argv)
    if args.scenario == "cold-tenant":
        return cold_tenant_main(args)
    args.out = args.out or Path(__file__).parent / "results" / "capacity.json"
    if args.quick:
        args.sizes, args.latencies, args.samples, args.batch = "2000x4", "0,25", 2, 20
    latencies = [float(x) for x in args.latencies.split(",")]
    rng = np.random.default_rng(7)
    tables = []
    with LocalS3Server(anonymous=True) as s3:
        proxy = MeteredProxy(s3.port)
        try:
            for rows, namespaces in parse_sizes(args.sizes):
                uri = s3.uri(f"capacity-{rows}x{namespaces}")
                bench = Bench(proxy, uri, rows, max(2, namespaces), rng)
                print(f"filling {rows} rows in {namespaces} namespaces ...", flush=True)
                table = {"build": bench.build(args.data, args.load_batch), "rounds": {}}
                for latency in latencies:
                    print(f"  measuring with {latency:g} ms per request ...", flush=True)
                    table["rounds"][f"{latency:g}ms"] = bench.round(latency, args.samples, args.batch)
                table["build"]["object_bytes"] = object_bytes(s3, uri)
                tables.append(table)
        finally:
            abandoned = proxy.abandoned
            proxy.close()
    biggest = tables[-1]
    slowest = biggest["rounds"][f"{latencies[-1]:g}ms"]
    result = {
        "server": "SeaweedFS on loopback, behind a counting proxy that sleeps the given latency per request",
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "embedding_dimension": DIM,
        "k": K,
        "samples": args.samples,
        "latencies_ms": latencies,
        "tables": tables,
        "abandoned_answers": abandoned,
        "plan_10m_users": plan(
            bytes_per_row=biggest["build"]["data_bytes_per_row"],
            warm_recall_requests=slowest["warm_recall"]["total_requests"],
            single_add_ms=slowest["single_add"]["ms"],
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    report(result)
    return result


def cold_tenant_main(args: argparse.Namespace) -> dict[str, Any]:
    """The cold-tenant scenario (one table per size), written to ``args.out``."""
    import _cold_tenant

    latencies = [float(x) for x in args.latencies.split(",")]
    out = args.out or _cold_tenant.default_path()
    results = []
    with LocalS3Server(anonymous=True) as s3:
        proxy = MeteredProxy(s3.port)
        try:
            for rows, namespaces in parse_sizes(args.sizes):
                print(f"cold tenant: filling {rows} rows in {namespaces} namespaces ...", flush=True)
                words = texts(args.data, rows, np.random.default_rng(7))
                uri = s3.uri(f"cold-tenant-{rows}x{namespaces}")
                run = _cold_tenant.cold_tenant(
                    proxy, uri, words, namespaces, latencies, args.samples, args.load_batch, summarize
                )
                _cold_tenant.report(run)
                results.append(run)
        finally:
            proxy.close()
    result = {
        "scenario": "cold-tenant",
        "server": "SeaweedFS on loopback, behind a counting proxy that sleeps the given latency per request",
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "samples": args.samples,
        "latencies_ms": latencies,
        "tables": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def report(result: dict[str, Any]) -> None:
    print(f"\n{'table':>12} {'latency':>8} {'operation':34} {'requests':>9} {'read KB':>9} {'ms':>8}")
    for table in result["tables"]:
        size = f"{table['build']['rows']}x{table['build']['namespaces']}"
        for latency, ops in table["rounds"].items():
            for name, f in ops.items():
                kb = f["bytes_read"] / 1024
                print(f"{size:>12} {latency:>8} {name:34} {f['total_requests']:9.0f} {kb:9.0f} {f['ms']:8.0f}")


if __name__ == "__main__":
    main()
