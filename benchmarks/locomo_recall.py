"""Recall benchmark on LoCoMo: ours vs LanceDB, LangChain and LlamaIndex retrieval, same process.

Why: the README's quality and speed claims must be reproducible against the retrievers users
would otherwise pick. Every system gets the same all-MiniLM-L6-v2 embeddings (computed once), the
same turn texts ("Speaker: text"), one index per conversation, and top-10 retrieval with no LLM.
Metric (see ../shared/data/locomo/README.md): evidence recall@k = share of a question's evidence
turns in the top k, averaged over the 883 answerable questions with evidence; hit@10 = any evidence
turn in the top 10. Latency is per query, from the query text (query embedding included).

    python benchmarks/locomo_recall.py [--data PATH] [--systems ours,lancedb-hybrid,...] [--ablations]
        [--memories turns,facts,turns+facts,turns+facts+summaries]

``--memories`` (default ``turns``, today's setup) adds, for each other value, a store filled by
``MemoryFormer`` from each session with the LoCoMo replay LLM (``benchmarks/_replay.py``), scored as
``ours (<memories>)``; a fact counts through the turns it links to, a summary through none.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, Turn, load_turns

from memory_retrievers import MemoryRetriever, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.formation import MemoryFormer

MEMORIES = ("turns", "facts", "turns+facts", "turns+facts+summaries")

K = 10


def load_questions(path: Path) -> list[tuple[str, str, set[str], int]]:
    out = []
    for conv in json.loads(path.read_text()):
        for q in conv["qa"]:
            if q.get("category") not in (1, 2, 3, 4) or not q.get("evidence"):
                continue
            evidence = {p for e in q["evidence"] for p in re.split(r"[;,\s]+", e) if re.fullmatch(r"D\d+:\d+", p)}
            if evidence:
                out.append((conv["sample_id"], q["question"], evidence, q["category"]))
    return out


class Embedder:
    """One MiniLM for everyone; documents embedded once and shared."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.model = SentenceTransformerEmbedder()
        self.doc_vectors = self.model.embed_documents([t.text for t in turns])

    def query(self, text: str) -> np.ndarray:
        return self.model.embed_query(text)


def load_session_questions(path: Path) -> list[tuple[str, str, set[str]]]:
    """Every question with evidence, category 5 (adversarial) included, and its evidence sessions.

    For the session-level figure zero-LLM peers headline ("R@5"): is an evidence session among the
    sessions of the top 5 memories? A dialog id ``D3:5`` is turn 5 of session 3.
    """
    out = []
    for conv in json.loads(path.read_text()):
        for q in conv["qa"]:
            dias = {p for e in q.get("evidence") or [] for p in re.split(r"[;,\s]+", e) if re.fullmatch(r"D\d+:\d+", p)}
            if dias:
                out.append((conv["sample_id"], q["question"], {d.split(":")[0] for d in dias}))
    return out


# (conversation, question) -> dia_ids best first, or one tuple of dia_ids per memory (formed memories)
System = Callable[[str, str], Sequence[Any]]


def build_lancedb(store: MemoryStore, dia_of: dict[str, str], emb: Embedder) -> dict[str, System]:
    """LanceDB's own vector, FTS and hybrid (RRFReranker) queries on the very table our store
    wrote (same rows, same FTS index on `text`, same vectors), with the same namespace prefilter."""
    import lancedb
    from lancedb.rerankers import RRFReranker

    from memory_retrievers.filters import build_where

    table = lancedb.connect(store.uri).open_table(store.table_name)
    rrf = RRFReranker()

    def where(conv: str) -> str:
        return build_where(conv)

    def vector(conv: str, q: str) -> list[str]:
        res = table.search(emb.query(q)).distance_type("cosine").where(where(conv), prefilter=True)
        return [dia_of[r["id"]] for r in res.limit(K).select(["id"]).to_list()]

    def fts(conv: str, q: str) -> list[str]:
        res = table.search(q, query_type="fts", fts_columns="text").where(where(conv), prefilter=True)
        return [dia_of[r["id"]] for r in res.limit(K).select(["id"]).to_list()]

    def hybrid(conv: str, q: str) -> list[str]:
        res = (
            table.search(query_type="hybrid", fts_columns="text")
            .vector(emb.query(q))
            .text(q)
            .distance_type("cosine")
            .where(where(conv), prefilter=True)
            .rerank(rrf)
            .limit(K)
            .select(["id"])
            .to_list()
        )
        return [dia_of[r["id"]] for r in res]

    return {"lancedb-vector": vector, "lancedb-fts": fts, "lancedb-hybrid": hybrid}


def build_langchain(turns: Sequence[Turn], emb: Embedder) -> dict[str, System]:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class Shared(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return emb.model.embed_documents(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return emb.query(text).tolist()

    retrievers = {}
    for conv in sorted({t.conversation for t in turns}):
        idx = [i for i, t in enumerate(turns) if t.conversation == conv]
        docs = [Document(page_content=turns[i].text, metadata={"dia_id": turns[i].dia_id}) for i in idx]
        bm25 = BM25Retriever.from_documents(docs, k=K)
        store = InMemoryVectorStore(Shared())
        store.add_documents(docs, ids=[turns[i].dia_id for i in idx])
        # vectors computed once: overwrite with the shared ones so every system embeds identically
        for i in idx:
            store.store[turns[i].dia_id]["vector"] = emb.doc_vectors[i].tolist()
        vec = store.as_retriever(search_kwargs={"k": K})
        retrievers[conv] = EnsembleRetriever(retrievers=[bm25, vec], weights=[0.5, 0.5])

    def run(conv: str, q: str) -> list[str]:
        return [d.metadata["dia_id"] for d in retrievers[conv].invoke(q)][:K]

    return {"langchain-ensemble": run}


def build_llamaindex(turns: Sequence[Turn], emb: Embedder) -> dict[str, System]:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    class Shared(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return emb.query(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return emb.query(query).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return emb.model.embed_query(text).tolist()

    Settings.llm = None
    retrievers = {}
    for conv in sorted({t.conversation for t in turns}):
        idx = [i for i, t in enumerate(turns) if t.conversation == conv]
        nodes = [TextNode(text=turns[i].text, id_=turns[i].dia_id, embedding=emb.doc_vectors[i].tolist()) for i in idx]
        index = VectorStoreIndex(nodes, embed_model=Shared())
        bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K)
        retrievers[conv] = QueryFusionRetriever(
            [index.as_retriever(similarity_top_k=K), bm25],
            similarity_top_k=K,
            num_queries=1,
            mode=FUSION_MODES.RECIPROCAL_RANK,
            use_async=False,
            llm=None,
        )

    def run(conv: str, q: str) -> list[str]:
        return [n.node.id_ for n in retrievers[conv].retrieve(q)][:K]

    return {"llamaindex-fusion": run}


def build_ours(
    turns: Sequence[Turn], emb: Embedder, tmp: Path, configs: dict[str, dict[str, Any]]
) -> tuple[dict[str, System], MemoryStore, dict[str, str]]:
    # The store embeds its own copy with the same model; identical vectors to the shared ones.
    store = MemoryStore(tmp / "ours", embedder=emb.model)
    records = [
        {
            "text": t.text,
            "namespace": t.conversation,
            "kind": "message",
            "session_id": t.session,
            "created_at": t.created_at + timedelta(seconds=i),
            "metadata": {"dia_id": t.dia_id},
        }
        for i, t in enumerate(turns)
    ]
    added = store.add_many(records)
    dia_of = {m.id: t.dia_id for m, t in zip(added, turns, strict=True)}
    store.admin.optimize()
    # Questions are asked after each conversation ends: `now` = a day after its last session.
    ends: dict[str, datetime] = {}
    for t in turns:
        ends[t.conversation] = max(ends.get(t.conversation, t.created_at), t.created_at)
    systems = {}
    for name, cfg in configs.items():
        rets = {conv: MemoryRetriever(store, namespace=conv, config={**cfg, "record_access": False}) for conv in ends}

        def run(conv: str, q: str, rets: dict[str, MemoryRetriever] = rets) -> list[str]:
            res = rets[conv].recall(q, k=K, token_budget=None, now=ends[conv] + timedelta(days=1))
            return [dia_of[m.id] for m in res.memories]

        systems[name] = run
    return systems, store, dia_of


def build_formed(
    turns: Sequence[Turn],
    emb: Embedder,
    tmp: Path,
    memories: str,
    data: Path,
    configs: dict[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, System], dict[str, Any], MemoryStore]:
    """Ours over memories formed by MemoryFormer with the LoCoMo replay LLM (see ``--memories``).

    Each session goes through ``MemoryFormer.form`` as a finished conversation: raw turns (unless
    facts only), facts extracted by the replay LLM with links to their turns, consolidation, and
    session summaries for ``turns+facts+summaries``. A fact counts through the turns it came from;
    a summary counts for none.
    """
    from _replay import LoCoMoReplayLLM

    store = MemoryStore(tmp / memories.replace("+", "_"), embedder=emb.model)
    llm = LoCoMoReplayLLM(data)
    cfg = {"store_turns": memories != "facts", "summarize": memories.endswith("summaries")}
    former = MemoryFormer(store, llm=llm, config=cfg)
    sessions: dict[tuple[str, str], list[tuple[int, Turn]]] = {}
    for i, t in enumerate(turns):
        sessions.setdefault((t.conversation, t.session), []).append((i, t))
    dias_of: dict[str, tuple[str, ...]] = {}
    decisions: dict[str, int] = {}
    t0 = time.perf_counter()
    for (conv, session), items in sessions.items():
        records = [
            {"text": t.text, "created_at": t.created_at + timedelta(seconds=i), "metadata": {"dia_id": t.dia_id}}
            for i, t in items
        ]
        report = former.form(records, namespace=conv, session_id=session)
        for m in report.turns:
            dias_of[m.id] = (str(m.metadata["dia_id"]),)
        for out in report.facts:
            dias = tuple(items[j][1].dia_id for j in out.fact.sources)
            dias_of[out.memory.id] = tuple(dict.fromkeys((*dias_of.get(out.memory.id, ()), *dias)))
            decisions[out.decision.value] = decisions.get(out.decision.value, 0) + 1
    seconds = time.perf_counter() - t0
    store.admin.optimize()
    ends: dict[str, datetime] = {}
    for t in turns:
        ends[t.conversation] = max(ends.get(t.conversation, t.created_at), t.created_at)
    systems: dict[str, System] = {}
    for suffix, cfg in (configs or {"": {}}).items():
        rets = {c: MemoryRetriever(store, namespace=c, config={**cfg, "record_access": False}) for c in ends}

        def run(conv: str, q: str, rets: dict[str, MemoryRetriever] = rets) -> list[tuple[str, ...]]:
            res = rets[conv].recall(q, k=K, token_budget=None, now=ends[conv] + timedelta(days=1))
            return [dias_of.get(m.id, ()) for m in res.memories]

        systems[f"ours ({memories}{suffix})"] = run

    facts = sum(decisions.values())
    stats = {
        "sessions": len(sessions),
        "facts": facts,
        "decisions": decisions,
        "formation_s": round(seconds, 1),
        "sessions_per_s": round(len(sessions) / seconds, 2),
        "memories": sum(store.count(conv) for conv in ends),
        "llm_calls": dict(llm.calls),
    }
    return systems, stats, store


def _covered(got: Sequence[Any], k: int) -> set[str]:
    # A system returns dialog ids, or (for formed memories) each memory's tuple of dialog ids.
    return {d for item in got[:k] for d in ((item,) if isinstance(item, str) else item)}


def evaluate(
    system: System,
    questions: Sequence[tuple[str, str, set[str], int]],
    session_questions: Sequence[tuple[str, str, set[str]]] = (),
) -> dict[str, float]:
    """Evidence recall@5/@10 and hit@10 (overall and recall@10 by category), latency, and with
    ``session_questions`` the session-level R@5."""
    for conv, q, _, _ in questions[:5]:  # warm caches
        system(conv, q)
    r5, r10, hit, lat = [], [], [], []
    by_category: dict[int, list[float]] = {}
    seen: dict[tuple[str, str], Sequence[Any]] = {}
    for conv, q, ev, category in questions:
        t0 = time.perf_counter()
        got = seen[conv, q] = system(conv, q)
        lat.append((time.perf_counter() - t0) * 1000)
        r5.append(len(_covered(got, 5) & ev) / len(ev))
        r10.append(len(_covered(got, 10) & ev) / len(ev))
        hit.append(float(bool(_covered(got, 10) & ev)))
        by_category.setdefault(category, []).append(r10[-1])
    lat.sort()
    out = {
        "recall@5": round(float(np.mean(r5)), 3),
        "recall@10": round(float(np.mean(r10)), 3),
        "hit@10": round(float(np.mean(hit)), 3),
        **{f"recall@10 cat{c}": round(float(np.mean(v)), 3) for c, v in sorted(by_category.items())},
        "p50_ms": round(statistics.median(lat), 2),
        "p95_ms": round(lat[int(0.95 * len(lat)) - 1], 2),
    }
    if session_questions:
        found = [
            bool({d.split(":")[0] for d in _covered(seen.get((conv, q)) or system(conv, q), 5)} & sessions)
            for conv, q, sessions in session_questions
        ]
        out["session R@5"] = round(float(np.mean(found)), 3)
    return out


def interleaved_latency(
    ours: System, reference: System, questions: Sequence[tuple[str, str, set[str], int]]
) -> dict[str, float]:
    """p50 of both systems timed question by question, alternately first, and their ratio.

    Each system's own p50 above is measured in its own pass, minutes apart; on a shared 2-core
    machine the load drifts between passes by more than the difference being measured.
    """
    times: dict[str, list[float]] = {"ours": [], "reference": []}
    for i, (conv, q, _, _) in enumerate(questions):
        pair = [("ours", ours), ("reference", reference)]
        for name, system in pair if i % 2 == 0 else pair[::-1]:
            t0 = time.perf_counter()
            system(conv, q)
            times[name].append((time.perf_counter() - t0) * 1000)
    ours_p50, ref_p50 = statistics.median(times["ours"]), statistics.median(times["reference"])
    return {
        "ours_p50_ms": round(ours_p50, 2),
        "lancedb_hybrid_p50_ms": round(ref_p50, 2),
        "p50": round(ours_p50 / ref_p50, 2),
    }


ABLATIONS: dict[str, dict[str, Any]] = {
    "ours (defaults)": {},
    "- speaker cue (boost 1, names kept in the vector query)": {
        "scoring": {"speaker_boost": 1.0},
        "query": {"speaker_free_vector": False},
    },
    "- speaker boost": {"scoring": {"speaker_boost": 1.0}},
    "- speaker-free vector query": {"query": {"speaker_free_vector": False}},
    "- as-asked vector list": {"query": {"asked_vector_share": 0.0}},
    "- date cue (boost 1, no dated channel)": {"scoring": {"date_boost": 1.0}, "weights": {"dated": 0.0}},
    "- date boost": {"scoring": {"date_boost": 1.0}},
    "- dated channel": {"weights": {"dated": 0.0}},
    "context weight 3 (before)": {"weights": {"context": 3.0}},
    "before this release (no cues, context 3)": {
        "scoring": {"speaker_boost": 1.0, "date_boost": 1.0},
        "query": {"speaker_free_vector": False},
        "weights": {"dated": 0.0, "context": 3.0},
    },
    "- context channel": {"weights": {"context": 0.0}},
    "- bm25 channel": {"weights": {"bm25": 0.0}},
    "- vector channel": {"weights": {"vector": 0.0}},
    "- rank bonus": {"fusion": {"rank1_bonus": 0.0, "top3_bonus": 0.0}},
    "- decay (weight 0)": {"scoring": {"decay": "none"}},
    "+ full decay (weight 1)": {"scoring": {"decay_weight": 1.0}},
    "+ classic mmr (floor 0)": {"selection": {"mmr_similarity_floor": 0.0}},
    "- mmr": {"selection": {"mmr": False}},
    "+ session diversity": {"selection": {"session_diverse": True}},
    "+ hybrid mode (feedback expansion, rocchio hyde, recency)": {"mode": "hybrid"},
    "vector mode": {"mode": "vector"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--systems", default="all", help="comma list, or 'all'")
    ap.add_argument("--ablations", action="store_true", help="also run each stage off in turn")
    ap.add_argument(
        "--memories",
        default="turns",
        help=f"comma list of {'|'.join(MEMORIES)}: what ours stores (formed by MemoryFormer + the LoCoMo replay LLM)",
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "recall_results.json")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    memories = [m.strip() for m in args.memories.split(",") if m.strip()]
    if not memories or set(memories) - set(MEMORIES):
        ap.error(f"--memories takes a comma list of {', '.join(MEMORIES)}; got {args.memories!r}")

    turns = load_turns(args.data)
    questions = load_questions(args.data)
    session_questions = load_session_questions(args.data)
    print(f"{len(turns)} turns, {len(questions)} questions")
    emb = Embedder(turns)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        systems: dict[str, System] = {}
        configs = ABLATIONS if args.ablations else {"ours (defaults)": {}}
        ours, store, dia_of = build_ours(turns, emb, Path(tmp), configs)
        systems.update(ours)
        systems.update(build_lancedb(store, dia_of, emb))
        wanted = None if args.systems == "all" else set(args.systems.split(","))
        if wanted is None or "langchain-ensemble" in wanted:
            systems.update(build_langchain(turns, emb))
        if wanted is None or "llamaindex-fusion" in wanted:
            systems.update(build_llamaindex(turns, emb))
        formation: dict[str, dict[str, Any]] = {}
        stores: list[MemoryStore] = []
        for mode in memories:
            if mode != "turns":
                # Facts folded into their source turns (the default) and competing with them.
                unfolded = {"channels": {"fact_source_weight": 0.0}}
                variants = {"": {}, ", facts not folded": unfolded} if "turns" in mode else None
                formed, formation[mode], formed_store = build_formed(turns, emb, Path(tmp), mode, args.data, variants)
                stores.append(formed_store)
                systems.update(formed)
                print(f"formed {mode}: {formation[mode]}")
        for name, system in systems.items():
            if wanted is not None and name not in wanted and not name.startswith(("ours", "-", "+", "vector")):
                continue
            results[name] = evaluate(system, questions, session_questions)
            print(f"{name:32} {results[name]}")
        if "lancedb-hybrid" in results and "ours (defaults)" in results:
            pair = interleaved_latency(systems["ours (defaults)"], systems["lancedb-hybrid"], questions)
            results["_latency_ratio_vs_lancedb_hybrid"] = pair
            print(f"p50 latency, interleaved: {pair}")
        for each in (store, *stores):
            each.close()  # before the folder goes: access statistics are written at close
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"k": K, "questions": len(questions), "results": results}
    if formation:
        out["formation"] = formation
    args.out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
