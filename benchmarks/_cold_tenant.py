"""The cold-tenant scenario of benchmarks/capacity.py: a tenant's first recall, before and after clustering.

Why: issue 29's target is the first recall of a 1,000-memory tenant in a 100k-row table on object
storage at 25 ms per request: at most 50 requests and 1 s (from ~1,050 requests and 4-6 s, because
rows written interleaved across namespaces scatter each tenant over the whole table).
``store.admin.cluster()`` rewrites the table so each namespace's rows are contiguous.

The table is filled as real traffic fills it: ``--load-batch`` records per commit, namespaces in
turn. Vectors are random (no model runs); the ANN index is not built (``ann_index_min_rows`` above
the table size: at 100k rows it costs minutes on 2 cores and recall of a 1,000-row namespace does
not use it). Then, at each latency, before clustering and after ``cluster()`` + ``optimize()``:

- ``fresh_open`` / ``fresh_first_recall``: a new store (what a freshly started worker pays), then
  the first recall of a namespace on it;
- ``open_first_recall``: the first recall of another namespace on a store that has served others.

Each namespace is recalled cold once (never the same one twice), each figure is the median of
``--samples``. ``cluster`` reports the pass itself (requests at 0 ms added latency), and
``incremental`` the next pass, after one more commit of ``--load-batch`` interleaved rows.

    python benchmarks/capacity.py --scenario cold-tenant --sizes 100000x100 --latencies 25
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from _s3_meter import MeteredProxy, Usage

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore

__all__ = ["cold_tenant"]

DIM = 384
# No maintenance inside a measured window, and no ANN index (see the module docstring).
CONFIG = {"optimize_after_rows": 10**9, "optimize_after_commits": 10**6, "ann_index_min_rows": 10**9}
QUIET = {"record_access": False}


def cold_tenant(
    proxy: MeteredProxy,
    uri: str,
    texts: list[str],
    namespaces: int,
    latencies: list[float],
    samples: int,
    load_batch: int,
    summarize: Callable[[list[Usage]], dict[str, Any]],
) -> dict[str, Any]:
    """Fill one table, measure cold first recalls, cluster, measure again; the figures as a dict."""
    rng = np.random.default_rng(11)
    emb = HashEmbedder(DIM)

    def open_store() -> MemoryStore:
        return MemoryStore(uri, storage_options=proxy.storage_options, embedder=emb, config=CONFIG)

    proxy.latency_ms = 0
    vectors = rng.standard_normal((len(texts), DIM)).astype(np.float32)
    records = [
        {"text": t, "namespace": _ns(i % namespaces), "kind": "message", "vector": vectors[i]}
        for i, t in enumerate(texts)
    ]
    with open_store() as store:
        t0 = time.perf_counter()
        store.add_many(records, batch_size=load_batch, dedup=False, progress=False)
        build = {"rows": len(records), "namespaces": namespaces, "load_s": round(time.perf_counter() - t0, 1)}
        store.admin.optimize()
    tenants = _tenants(namespaces)
    out: dict[str, Any] = {"build": build, "before": {}, "after": {}}
    for latency in latencies:
        out["before"][f"{latency:g}ms"] = _round(proxy, open_store, texts, tenants, latency, samples, summarize)
    proxy.latency_ms = 0
    with open_store() as store:
        with proxy.measure() as usage:
            result = store.admin.cluster()
        t0 = time.perf_counter()
        store.admin.optimize()  # folds the moved rows back into the indexes
        out["cluster"] = {**result.to_dict(), **usage.as_dict(), "optimize_after_s": round(time.perf_counter() - t0, 1)}
    for latency in latencies:
        out["after"][f"{latency:g}ms"] = _round(proxy, open_store, texts, tenants, latency, samples, summarize)
    out["incremental"] = _incremental(proxy, open_store, records[:load_batch])
    return out


def _incremental(
    proxy: MeteredProxy, open_store: Callable[[], MemoryStore], batch: list[dict[str, Any]]
) -> dict[str, Any]:
    """One more commit of interleaved rows, then the pass that moves just those (no added latency)."""
    proxy.latency_ms = 0
    fresh = [{**r, "text": f"{r['text']} (later)"} for r in batch]
    with open_store() as store:
        store.add_many(fresh, batch_size=len(fresh), dedup=False, progress=False)
        with proxy.measure() as usage:
            result = store.admin.cluster()
        t0 = time.perf_counter()
        store.admin.optimize()
        return {**result.to_dict(), **usage.as_dict(), "optimize_after_s": round(time.perf_counter() - t0, 1)}


def _ns(i: int) -> str:
    return f"user-{i:05d}"


def _tenants(namespaces: int) -> Iterator[int]:
    """Namespaces in an order that never repeats one (each is measured cold once)."""
    yield from range(namespaces)
    raise SystemExit(f"too few namespaces ({namespaces}) for the samples: raise NAMESPACES or lower --samples")


def _round(
    proxy: MeteredProxy,
    open_store: Callable[[], MemoryStore],
    texts: list[str],
    tenants: Iterator[int],
    latency: float,
    samples: int,
    summarize: Callable[[list[Usage]], dict[str, Any]],
) -> dict[str, Any]:
    proxy.latency_ms = latency
    got: dict[str, list[Usage]] = {}

    def run(name: str, fn: Callable[[], Any]) -> Any:
        with proxy.measure() as usage:
            out = fn()
        got.setdefault(name, []).append(usage)
        return out

    for _ in range(samples):
        store = run("fresh_open", open_store)
        ns = next(tenants)
        run("fresh_first_recall", lambda store=store, ns=ns: _recall(store, ns, texts))
        store.close()
    with open_store() as store:
        _recall(store, next(tenants), texts)  # the handle has served a namespace: warm
        for _ in range(samples):
            ns = next(tenants)
            run("open_first_recall", lambda ns=ns: _recall(store, ns, texts))
    return {name: summarize(usages) for name, usages in got.items()}


def _recall(store: MemoryStore, ns: int, texts: list[str]) -> None:
    words = texts[ns].split()  # the namespace's first memory (rows are written round robin)
    query = " ".join(words[1:5]) or "memory"
    vector = np.random.default_rng(ns).standard_normal(DIM).astype(np.float32)
    MemoryRetriever(store, namespace=_ns(ns), config=QUIET).recall(query, k=10, query_vector=vector)


def report(result: dict[str, Any]) -> None:
    """The figures as a table on stdout."""
    build = result["build"]
    print(f"\ncold tenant: {build['rows']} rows, {build['namespaces']} namespaces (loaded in {build['load_s']} s)")
    print(
        f"{'when':>7} {'latency':>8} {'operation':22} {'requests':>9} {'GET':>6} {'LIST':>5} {'read MB':>8} {'ms':>8}"
    )
    for when in ("before", "after"):
        for latency, ops in result[when].items():
            for name, f in ops.items():
                mb = f["bytes_read"] / 1e6
                req = f["requests"]
                print(
                    f"{when:>7} {latency:>8} {name:22} {f['total_requests']:9.0f} {req['GET']:6.0f} "
                    f"{req['LIST']:5.0f} {mb:8.2f} {f['ms']:8.0f}"
                )
    c = result["cluster"]
    print(
        f"cluster: moved {c['moved']} rows, runs {c['runs_before']} -> {c['runs_after']}, {c['total_requests']} "
        f"requests, {c['ms'] / 1000:.1f} s (+ optimize {c['optimize_after_s']} s)"
    )
    i = result["incremental"]
    print(
        f"then one more commit, interleaved: the pass moved {i['moved']}, runs {i['runs_before']} -> "
        f"{i['runs_after']}, {i['total_requests']} requests, {i['ms'] / 1000:.1f} s "
        f"(+ optimize {i['optimize_after_s']} s)"
    )


def default_path() -> Path:
    return Path(__file__).parent / "results" / "capacity_cold_tenant.json"
