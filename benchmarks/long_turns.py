"""Long turns: a chat namespace whose assistant replies are LongMemEval-length, stored and recalled.

Why: real assistant replies are long (one LongMemEval turn is 77k characters), and a chat history
that stores replies must store every one of them and still recall at chat-turn speed. LongMemEval
is not reachable offline here, so the namespace is LoCoMo's dialogue with assistant replies made of
LoCoMo text at LongMemEval-like lengths (seeded): most a few hundred to a few thousand characters,
one in twenty 20k-77k. The namespace holds the first ``--turns / 2`` LoCoMo turns, each with a
reply, stored through ``MemoryChatMessageHistory`` (LangChain) as an app keeps a chat; then every
LoCoMo question of those conversations is recalled by
``RecallRetriever`` and, on the same table, by LanceDB's own hybrid query (vector + full text,
``RRFReranker``), alternately, both with the query embedding included.

    python benchmarks/long_turns.py [--data PATH] [--turns 1764]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, load_turns
from locomo_recall import load_questions

from memory_retrievers import MemoryStore, SentenceTransformerEmbedder

os.environ.setdefault("LANCE_LOG", "error")
OUT = Path(__file__).parent / "results" / "long_turns.json"


def reply_length(rng: random.Random) -> int:
    """A reply length in characters: mostly 300-4,000, one in twenty 20,000-77,000."""
    if rng.random() < 0.05:
        return rng.randint(20_000, 77_000)
    return int(min(4_000, max(300, rng.lognormvariate(7.0, 0.8))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--turns", type=int, default=1764, help="messages in the namespace (user turns + replies)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from lancedb.rerankers import RRFReranker
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_memory_retrievers import MemoryChatMessageHistory, RecallRetriever
    from memory_retrievers.filters import build_where

    turns = load_turns(args.data)
    mine = turns[: args.turns // 2]  # one namespace: the first conversations' turns, each with a reply
    conversations = {t.conversation for t in mine}
    pool = " ".join(t.text for t in turns)
    rng = random.Random(5)
    model = SentenceTransformerEmbedder()
    report: dict[str, Any] = {"messages": 0}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "db", embedder=model)
        lengths: list[int] = []
        written = 0
        t0 = time.perf_counter()
        for i, t in enumerate(mine):
            history = MemoryChatMessageHistory(store, namespace="u", session_id=t.session)
            start = rng.randrange(len(pool) - 80_000)
            reply = pool[start : start + reply_length(rng)]
            history.add_messages([HumanMessage(t.text, id=f"u{i}"), AIMessage(reply, id=f"a{i}")])
            lengths.append(len(reply))
            written += 2
        report["messages"] = written
        report["store messages per s"] = round(written / (time.perf_counter() - t0), 1)
        stored = store.list("u", limit=100_000, filter={"kinds": ["message"]})
        report["stored"] = len(stored)
        report["reply chars"] = {
            "median": statistics.median(lengths),
            "max": max(lengths),
            "over 32,000": sum(1 for n in lengths if n > 32_000),
        }
        report["longest stored text"] = max(len(m.text) for m in stored)
        store.admin.optimize()
        questions = [q for conv, q, _, _ in load_questions(args.data) if conv in conversations]
        retriever = RecallRetriever(store=store, namespace="u", k=10)
        import lancedb

        table = lancedb.connect(store.uri).open_table(store.table_name)
        rrf = RRFReranker()

        def ours(q: str) -> None:
            retriever.invoke(q)

        def hybrid(q: str) -> None:
            (
                table.search(query_type="hybrid", fts_columns="text")
                .vector(model.embed_query(q))
                .text(q)
                .distance_type("cosine")
                .where(build_where("u"), prefilter=True)
                .rerank(rrf)
                .limit(10)
                .select(["id"])
                .to_list()
            )

        def interleaved(ours: Any) -> tuple[float, float]:
            times: dict[str, list[float]] = {"ours": [], "hybrid": []}
            for q in questions[:5]:  # warm
                ours(q)
                hybrid(q)
            for n, q in enumerate(questions):
                pair = [("ours", ours), ("hybrid", hybrid)]
                for name, fn in pair if n % 2 == 0 else pair[::-1]:
                    t1 = time.perf_counter()
                    fn(q)
                    times[name].append((time.perf_counter() - t1) * 1000)
            return statistics.median(times["ours"]), statistics.median(times["hybrid"])

        ours_p50, ref_p50 = interleaved(ours)
        report["recall p50 ms"] = round(ours_p50, 1)
        report["lancedb hybrid p50 ms"] = round(ref_p50, 1)
        report["ratio"] = round(ours_p50 / ref_p50, 2)
        report["questions"] = len(questions)
        # Recall writes access statistics back (one commit per 256 recorded accesses); LanceDB
        # rewrites those rows, which leave the full-text indexes until the next optimize, and
        # searching them unindexed is what costs with long texts. Measured again without it.
        table = lancedb.connect(store.uri).open_table(store.table_name)
        report["unindexed rows after the recalls"] = table.index_stats("text_idx").num_unindexed_rows
        store.admin.optimize()
        table = lancedb.connect(store.uri).open_table(store.table_name)
        quiet = RecallRetriever(store=store, namespace="u", k=10, recall_config={"record_access": False})
        ours_p50, ref_p50 = interleaved(quiet.invoke)
        report["without access statistics"] = {
            "recall p50 ms": round(ours_p50, 1),
            "lancedb hybrid p50 ms": round(ref_p50, 1),
            "ratio": round(ours_p50 / ref_p50, 2),
        }
        store.close()
    print(json.dumps(report, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
