"""Write-path benchmark: `add_many` throughput vs raw embedding throughput of the same model.

Why: storing memories should cost little more than embedding them. Both are measured in the same
process on the same texts (LoCoMo dialog turns, cycled to --n), with the same model and batch
size, alternating rounds so machine noise hits both alike.

    python benchmarks/write_path.py [--data ../shared/data/locomo/locomo_dev.json] [--n 10000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, load_turns

from memory_retrievers import MemoryStore, SentenceTransformerEmbedder


def records(n: int, data: Path, kind: str) -> list[dict]:
    turns = load_turns(data)
    out = []
    for i in range(n):
        t = turns[i % len(turns)]
        cycle = i // len(turns)
        out.append(
            {
                "text": t.text,
                "namespace": f"{t.conversation}-{cycle}",
                "session_id": t.session,
                "kind": kind,
                "created_at": t.created_at,
                "metadata": {"dia_id": t.dia_id},
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--single", type=int, default=200, help="single add() calls for the latency figure")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "write_path.json")
    args = ap.parse_args()

    emb = SentenceTransformerEmbedder()
    emb.embed_documents(["warm up"] * 64)
    msgs = records(args.n, args.data, "message")
    facts = records(args.n, args.data, "fact")
    texts = [r["text"] for r in msgs]

    raw, ours_msg, ours_fact = [], [], []
    for rnd in range(args.rounds):
        t0 = time.perf_counter()
        for start in range(0, len(texts), 512):
            emb.embed_documents(texts[start : start + 512])
        raw.append(args.n / (time.perf_counter() - t0))
        for recs, sink in ((msgs, ours_msg), (facts, ours_fact)):
            with tempfile.TemporaryDirectory() as tmp:
                store = MemoryStore(Path(tmp) / "db", embedder=emb)
                t0 = time.perf_counter()
                store.add_many(recs, batch_size=512)
                sink.append(args.n / (time.perf_counter() - t0))
                store.close()
        print(
            f"round {rnd + 1}: raw {raw[-1]:.0f}/s  "
            f"add_many(messages) {ours_msg[-1]:.0f}/s  add_many(facts) {ours_fact[-1]:.0f}/s"
        )

    # Single add latency on a store that already holds n memories (one namespace per conversation).
    latencies = []
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "db", embedder=emb)
        store.add_many(msgs, batch_size=512)
        for i in range(args.single):
            t0 = time.perf_counter()
            store.add(f"Single memory number {i}: the user mentioned item {i * 7}.", namespace="conv-26-0", kind="fact")
            latencies.append((time.perf_counter() - t0) * 1000)
        store.close()

    best = max
    result = {
        "n": args.n,
        "rounds": args.rounds,
        "raw_embedding_per_s": round(best(raw), 1),
        "add_many_messages_per_s": round(best(ours_msg), 1),
        "add_many_facts_per_s": round(best(ours_fact), 1),
        "ratio_messages": round(best(ours_msg) / best(raw), 3),
        "ratio_facts": round(best(ours_fact) / best(raw), 3),
        "single_add_p50_ms": round(statistics.median(latencies), 2),
        "single_add_p95_ms": round(sorted(latencies)[int(0.95 * len(latencies)) - 1], 2),
        "all_rounds": {"raw": raw, "messages": ours_msg, "facts": ours_fact},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "all_rounds"}, indent=2))


if __name__ == "__main__":
    main()
