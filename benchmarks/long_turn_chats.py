"""Long-turn chats: one detail deep inside a 2,000-80,000-character assistant answer, recalled.

Why: assistants answer at length and users later ask about one line of one answer ("which entrance
did you say to use at the Copper Kiln Market?"). ``_long_turn_script.py`` generates four such
conversations (seeded templates and word lists: travel plans, recipes, code reviews, explanations;
eight sessions each), with questions whose evidence is one turn, user or assistant, labelled with
how deep in the turn its detail sits.

Each exchange (the user's turn and the answer) is stored as a chat history stores it, in one write
(``store.add_many`` of ``{"text": "user: ..."}``, ``{"text": "assistant: ..."}`` with kind
``message``, the session and the time), each text cut to ``StoreConfig.max_text_chars`` (32,000 by default, as
both adapters cut it: the store refuses longer texts), twice: once per conversation in its own
namespace (a haystack per user) and once all together in one namespace (pooled). Then each
question is asked of ours (``MemoryRetriever.recall``, defaults), LanceDB's hybrid query (vector +
full text, ``RRFReranker``) and LanceDB's BM25 alone, top 10, on the same table.

Metrics: turn recall@10 (the evidence turn among the first 10), session hit@10 (a turn of the
evidence session among them), both per haystack and pooled, by depth of the detail and by whose
turn holds it; for ours also whether the block's text holds the answer (a long memory is shown
as an excerpt of ``RecallConfig.selection.excerpt_chars``) and the block's size.

    python benchmarks/long_turn_chats.py        # ~4-6 min on 2 shared cores
    python benchmarks/long_turn_chats.py --details /tmp/long_blocks.json   # also ours' blocks and scores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")

from _long_turn_script import QUOTA, LongChat, chats, depth_bucket, problems
from messy_chat import Clock, Lookup, answer_in, lancedb_top, write_json

from memory_retrievers import Embedder, MemoryRetriever, MemoryStore

OUT = Path(__file__).parent / "results" / "long_turn_chats.json"
K = 10
POOLED = "pooled"


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Turn recall@10 and session hit@10, overall, by depth bucket and by domain (plus the block, for ours)."""
    out: dict[str, Any] = {
        "questions": len(rows),
        "turn recall@10": _mean([r["turn"] for r in rows]),
        "session hit@10": _mean([r["session"] for r in rows]),
    }
    if rows and "answer" in rows[0]:
        out["answer in block"] = _mean([float(r["answer"]) for r in rows])
        out["empty blocks"] = sum(r["lines"] == 0 for r in rows)
        out["block chars p50"] = statistics.median(r["chars"] for r in rows)
        out["block lines p50"] = statistics.median(r["lines"] for r in rows)
    out["by depth"] = {
        b: {
            "n": len(g),
            "turn recall@10": _mean([r["turn"] for r in g]),
            **({"answer in block": _mean([float(r["answer"]) for r in g])} if "answer" in g[0] else {}),
        }
        for b in QUOTA
        if (g := [r for r in rows if r["bucket"] == b])
    }
    out["by domain"] = {
        d: _mean([r["turn"] for r in rows if r["domain"] == d]) for d in sorted({r["domain"] for r in rows})
    }
    return out


def run(data: Sequence[LongChat], model: Embedder, tmp: Path, progress: Any = print) -> dict[str, Any]:
    import lancedb
    from lancedb.rerankers import RRFReranker

    clock = Clock()
    store = MemoryStore(tmp / "db", embedder=model, clock=clock)
    max_chars = store.config.max_text_chars
    lookup = Lookup(((c.id, t.index), t.stored[:max_chars]) for c in data for t in c.turns)
    sessions = {(c.id, t.index): t.session for c in data for t in c.turns}
    t0 = time.perf_counter()
    stored = 0
    for namespace, group in [*((c.id, [c]) for c in data), (POOLED, list(data))]:
        for c in group:
            exchange: list[dict[str, Any]] = []
            for t in c.turns:
                record = {"text": t.stored[:max_chars], "kind": "message", "session_id": t.session}
                exchange.append({**record, "created_at": t.created_at})
                if t.role == "assistant":  # one write per exchange, as a chat history's add_messages
                    clock.now = t.created_at
                    store.add_many(exchange, namespace=namespace)
                    stored += len(exchange)
                    exchange = []
            if exchange:
                store.add_many(exchange, namespace=namespace)
                stored += len(exchange)
        progress(f"{namespace}: stored ({time.perf_counter() - t0:.0f}s)")
    store.admin.optimize()
    store_s = time.perf_counter() - t0
    retriever = MemoryRetriever(store)
    table = lancedb.connect(store.uri).open_table(store.table_name)
    rrf = RRFReranker()
    end = max(t.created_at for c in data for t in c.turns)
    results: dict[str, Any] = {"settings": {}, "questions": []}
    for setting in ("per haystack", "pooled"):
        rows: dict[str, list[dict[str, Any]]] = {"ours": [], "lancedb-hybrid": [], "lancedb-bm25": []}
        per_chat: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for c in data:
            namespace = c.id if setting == "per haystack" else POOLED
            clock.now = (c.turns[-1].created_at if setting == "per haystack" else end) + timedelta(days=1)
            for q in c.questions:
                result = retriever.recall(q.text, namespace=namespace)
                found = {
                    "ours": [lookup(m.text) for m in result.memories],
                    "lancedb-hybrid": [
                        lookup(t) for t in lancedb_top(table, model, namespace, q.text, "hybrid", rrf=rrf)
                    ],
                    "lancedb-bm25": [lookup(t) for t in lancedb_top(table, model, namespace, q.text, "fts", rrf=rrf)],
                }
                record = {
                    "chat": c.id,
                    "setting": setting,
                    "question": q.text,
                    "answer": q.answer,
                    "evidence": q.evidence,
                    "bucket": depth_bucket(q),
                    "systems": {},
                }
                for name, lines in found.items():
                    top = lines[:K]
                    row = {
                        "turn": float(any((c.id, q.evidence) in line for line in top)),
                        # a line that stands for several turns ("nice. anything else?") names no session
                        "session": float(
                            any(len(line) == 1 and sessions[next(iter(line))] == q.session for line in top)
                        ),
                        "bucket": depth_bucket(q),
                        "domain": q.domain,
                    }
                    if name == "ours":
                        text = result.to_context()
                        row.update({"answer": answer_in(text, [q.answer]), "lines": len(top), "chars": len(text)})
                        record["block"] = text[:3000]
                        record["explained"] = [
                            {
                                "turn": sorted(line),
                                "score": round(m.score, 3),
                                "relevance": round(m.relevance, 3),
                                "ranks": {x.label: x.rank for x in m.explanation.channels},
                                "excerpt": m.excerpt is not None,
                            }
                            for line, m in zip(lines, result.memories, strict=True)
                        ]
                    rows[name].append(row)
                    per_chat.setdefault(c.id, {}).setdefault(name, []).append(row)
                    record["systems"][name] = {**row, "lines": [sorted(x) for x in top]}
                results["questions"].append(record)
        results["settings"][setting] = {name: summarize(r) for name, r in rows.items()}
        if setting == "per haystack":
            results["settings"][setting]["each haystack"] = {
                cid: {
                    name: {k: v for k, v in summarize(r).items() if k in ("turn recall@10", "session hit@10")}
                    for name, r in by.items()
                }
                for cid, by in per_chat.items()
            }
    results["stored messages"] = stored
    results["store seconds"] = round(store_s, 1)
    store.close()
    return results


def table(results: dict[str, Any]) -> str:
    names = ["ours", "lancedb-hybrid", "lancedb-bm25"]
    out = [f"{'':40} | " + " | ".join(f"{n:>14}" for n in names)]
    out.append("-" * len(out[0]))
    for setting in ("per haystack", "pooled"):
        s = results["settings"][setting]
        for metric in ("turn recall@10", "session hit@10"):
            out.append(f"{setting + ', ' + metric:40} | " + " | ".join(f"{s[n][metric]!s:>14}" for n in names))
        for bucket in QUOTA:
            got = [s[n]["by depth"].get(bucket) for n in names]
            if got[0]:
                out.append(
                    f"{setting + ', r@10 depth ' + bucket + ' (n=' + str(got[0]['n']) + ')':40} | "
                    + " | ".join(f"{g['turn recall@10']!s:>14}" for g in got)
                )
        out.append(f"{setting + ', ours: answer in block':40} | {s['ours']['answer in block']!s:>14}")
        out.append(f"{setting + ', ours: empty blocks':40} | {s['ours']['empty blocks']!s:>14}")
        out.append(f"{setting + ', ours: block lines p50':40} | {s['ours']['block lines p50']!s:>14}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=4)
    ap.add_argument("--sessions", type=int, default=24)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--details", type=Path, default=None, help="also write ours' blocks and line scores here")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    data = chats(seed=args.seed, n=args.conversations, sessions=args.sessions)
    wrong = problems(data)
    if wrong:
        raise SystemExit("the generated data is not well formed:\n" + "\n".join(wrong))
    from memory_retrievers import SentenceTransformerEmbedder

    t0 = time.perf_counter()
    model = SentenceTransformerEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        results = run(data, model, Path(tmp))
    lengths = [len(t.text) for c in data for t in c.turns if t.role == "assistant"]
    results["data"] = {
        "seed": args.seed,
        "conversations": len(data),
        "turns": sum(len(c.turns) for c in data),
        "questions": sum(len(c.questions) for c in data),
        "assistant chars": {
            "median": statistics.median(lengths),
            "max": max(lengths),
            "over 32,000 (cut when stored)": sum(n > 32_000 for n in lengths),
        },
    }
    results["embedder"] = model.name
    results["seconds"] = round(time.perf_counter() - t0, 1)
    if args.details is not None:
        write_json(args.details, results)
    heavy = ("block", "explained")
    results["questions"] = [{k: v for k, v in q.items() if k not in heavy} for q in results["questions"]]
    write_json(args.out, results)
    print(table(results))
    print(json.dumps(results["settings"]["per haystack"]["each haystack"]))
    print(f"{results['seconds']} s; written to {args.out}")


if __name__ == "__main__":
    main()
