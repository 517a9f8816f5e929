"""Live workloads: recall while memories are written, from 600 memories to many tenants.

Why: recall was tuned on a static corpus, but a chat agent stores a turn and then recalls for the
next one, all day, in namespaces that grow, for many users at once. Every figure here is a ratio
against references measured in the same run on the same rows:

- **plain LanceDB app**: what a user of LanceDB alone would run (:class:`PlainApp`): its own
  table with the same rows and vectors, BM25 (FTS) and bitmap (namespace) indexes, LanceDB's
  hybrid query (``RRFReranker``, namespace prefilter, query embedding included), each new turn
  added through the same handle it searches with. Ours is reported against it static and right
  after a write (``*_vs_plain_lancedb``).
- **LanceDB hybrid**: the same hybrid query on the store's own table through a handle that checks
  for other writers' commits on every query (``*_vs_lancedb``), as a reader in another process
  must.
- **floor**: the query embedding plus an exact top-10 dot product in numpy over the namespace's
  vectors held in memory: no storage, no fusion, no second channel. Nothing can be faster.

Scenarios:

- ``chat``: per namespace size, static recall (no writes between) and the chat loop (add one
  turn to a session, then recall; a different question for each timed call), with the single
  ``add``'s latency; ``add_many`` throughput while the namespace is filled (rows/s, and against
  raw embedding throughput where the model embeds), peak RSS and disk size.
- ``tenants``: many namespaces of equal size; recall in random namespaces while a writer thread
  adds turns to other namespaces (each turn to the store and to the plain app).
- ``needles``: one LoCoMo conversation hidden in a large namespace of other memories; evidence
  recall@10 of its questions against the same conversation alone. The conversation's turns carry
  their LoCoMo dates (2023). ``--needles-dates`` says how the haystack is dated:

  - ``spread`` (the default): each filler memory gets a date drawn uniformly (seeded) from the
    conversation's own span, and the questions are asked a day after its last session, as
    ``locomo_recall.py`` asks them. Needle and hay are then equally old, so the hidden figure
    measures the haystack, not its age.
  - ``now``: the figures before this option. The filler is dated when written and questions are
    asked at the wall clock, so every needle is years older than every piece of hay: recency
    decay scales each needle's score by about 0.81 against the hay's 1.0, a handicap only a
    store with decay pays (LanceDB's hybrid query has none). Kept to compare with old results.

  ``--needles-dates spread,now`` runs both (each loads its own haystack) and reports the second
  under ``needles["variants"]`` beside the first; the top-level figures are the first variant's.

Memories: LoCoMo dialogue, made into as many distinct memories as a size needs (:class:`Haystack`:
each turn alone, then each turn joined with a different partner turn on every later pass). Up to
``--real-up-to`` memories per size they are embedded by the real model (all-MiniLM-L6-v2); above
it, each filler memory takes the real MiniLM vector of its turn (for a joined pair, the normalised
sum of the two), through the public ``Embedder`` protocol (:class:`PooledEmbedder`). Queries,
chat turns written during the runs and the needles are always embedded by the real model.
``--peers`` (on by default) also times LangChain's and LlamaIndex's in-memory hybrid retrievers on
each chat size's memories.

    python benchmarks/workloads.py                      # sizes 600,5000,20000,100000; 1000x1000 tenants; 1M needles
    python benchmarks/workloads.py --quick              # a small run (the CI smoke)
    python benchmarks/workloads.py --scenarios chat --sizes 600,5000
    python benchmarks/workloads.py --plot-only          # redraw docs/workloads.png from the results file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, Turn, load_turns
from locomo_recall import load_questions

from memory_retrievers import MemoryRetriever, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.filters import build_where

OUT = Path(__file__).parent / "results" / "workloads.json"
PLOT = Path(__file__).resolve().parents[1] / "docs" / "workloads.png"
K = 10


class Haystack:
    """Distinct filler memories from real dialogue, each with a vector that matches its text.

    A namespace larger than the dialogue cannot just repeat it: 30 copies of one turn fill a
    top-10 by themselves, and duplicate vectors degrade an HNSW graph (measured: only about half
    of the index's top 30 were true top-30 neighbours at 100,000 memories with 25 copies of each
    vector). So the first pass over the dialogue gives each turn alone, with its real MiniLM
    vector; every later pass gives each turn followed by a partner turn (a different one on each
    pass), with the normalised sum of the two real vectors, close to what the model gives the
    joined text. Each text ends in ``(#g)``, its number, which is how the embedder finds its vector.
    """

    def __init__(self, turns: Sequence[Turn], vectors: np.ndarray) -> None:
        if not turns:
            raise ValueError("a haystack needs dialogue turns: raise --pool")
        self.turns = list(turns)
        self.vectors = vectors

    @classmethod
    def of(cls, turns: Sequence[Turn], model: SentenceTransformerEmbedder) -> Haystack:
        """Embeds every turn once (a few thousand texts: under a minute on 2 cores)."""
        return cls(turns, model.embed_documents([t.text for t in turns]))

    def without(self, conversation: str) -> Haystack:
        """The same dialogue minus one conversation (the needles must not be in the hay)."""
        keep = [i for i, t in enumerate(self.turns) if t.conversation != conversation]
        return Haystack([self.turns[i] for i in keep], self.vectors[keep])

    def _parts(self, g: int) -> tuple[int, int | None]:
        n = len(self.turns)
        lap, j = divmod(g, n)
        return j, None if lap == 0 else (j + lap * 7919) % n  # 7919: prime, so partners differ per lap

    def texts(self, count: int, offset: int = 0) -> list[str]:
        """Memories ``offset`` to ``offset + count`` (numbered, so each is distinct)."""
        out = []
        for g in range(offset, offset + count):
            j, partner = self._parts(g)
            text = self.turns[j].text if partner is None else f"{self.turns[j].text} {self.turns[partner].text}"
            out.append(f"{text} (#{g})")
        return out

    def vector(self, text: str) -> np.ndarray | None:
        """The vector of a text made by :meth:`texts`; ``None`` for any other text."""
        _, sep, tail = text.rpartition(" (#")
        if not sep or not tail.endswith(")") or not tail[:-1].isdigit():
            return None
        j, partner = self._parts(int(tail[:-1]))
        if partner is None:
            vector: np.ndarray = self.vectors[j]
            return vector
        both = self.vectors[j] + self.vectors[partner]
        return (both / np.linalg.norm(both)).astype(np.float32)


class PooledEmbedder:
    """Real MiniLM for queries and other texts; the haystack's vectors for its filler memories.

    Filling a namespace of a million memories through the model would take hours on a laptop
    CPU; the haystack's vectors are real MiniLM vectors of the filler's own dialogue.
    """

    def __init__(self, model: SentenceTransformerEmbedder, haystack: Haystack) -> None:
        self.model = model
        self.haystack = haystack
        self.name = model.name
        self.dimension = model.dimension
        self.remembered: dict[str, np.ndarray] = {}  # texts ``remember`` keeps the model's vectors of

    def remember(self, texts: Sequence[str]) -> None:
        """Keep the model's vectors of ``texts`` once embedded (the needles, written into two stores)."""
        self.remembered.update(dict.fromkeys(texts, np.empty(0, dtype=np.float32)))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        real = []
        for i, text in enumerate(texts):
            vector = self.haystack.vector(text)
            if vector is None:
                vector = self.remembered.get(text)
            if vector is None or not len(vector):
                real.append(i)
            else:
                out[i] = vector
        if real:
            out[real] = self.model.embed_documents([texts[i] for i in real])
            for i in real:
                if texts[i] in self.remembered:
                    self.remembered[texts[i]] = out[i].copy()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.model.embed_query(text)

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        # Off the event loop, as the real embedder runs (some texts may go through the model).
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        # Through the model's own async path (a worker thread): a query embedded on the store's
        # event loop would stall every other read and write of the process meanwhile.
        return await self.model.aembed_query(text)


def log(message: str) -> None:
    """Progress on stderr (a full run takes over an hour)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def disk_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def lancedb_hybrid(table: Any, model: SentenceTransformerEmbedder, rrf: Any, where: str, query: str) -> list[str]:
    """LanceDB's hybrid query (vector + full text, RRF, prefiltered by ``where``): ids of the top ``K``."""
    res = (
        table.search(query_type="hybrid", fts_columns="text")
        .vector(model.embed_query(query))
        .text(query)
        .distance_type("cosine")
        .where(where, prefilter=True)
        .rerank(rrf)
        .limit(K)
        .select(["id"])
        .to_list()
    )
    return [r["id"] for r in res]


class References:
    """LanceDB's hybrid query and the numpy floor, on the store's own table."""

    def __init__(self, store: MemoryStore, model: SentenceTransformerEmbedder) -> None:
        import lancedb
        from lancedb.rerankers import RRFReranker

        # A handle that sees every commit, as a LanceDB user reading what their app writes would
        # hold (a handle that never refreshes reads one old version: fast, but blind to new rows).
        self.table = lancedb.connect(store.uri, read_consistency_interval=timedelta(0)).open_table(store.table_name)
        self.rrf = RRFReranker()
        self.model = model
        self.matrices: dict[str, np.ndarray] = {}

    def hybrid(self, namespace: str, query: str) -> list[str]:
        return lancedb_hybrid(self.table, self.model, self.rrf, build_where(namespace), query)

    def load(self, namespace: str) -> list[str]:
        """Hold the namespace's vectors for the floor; returns its texts, in the same order."""
        rows = self.table.search().where(build_where(namespace)).select(["text", "vector"]).limit(None).to_arrow()
        self.matrices[namespace] = np.stack(rows.column("vector").to_numpy(zero_copy_only=False)).astype(np.float32)
        return [str(t) for t in rows.column("text").to_pylist()]

    def floor(self, namespace: str, query: str) -> None:
        vector = self.model.embed_query(query)
        sims = self.matrices[namespace] @ vector
        top = np.argpartition(-sims, min(K, len(sims) - 1))[:K]
        top[np.argsort(-sims[top])]


class PlainApp:
    """What a LanceDB-only chat app would run instead: its own table, one handle to write and search.

    The same rows and vectors as the store's table (copied once), a BM25 (FTS) index on the
    text and a bitmap index on the namespace, LanceDB's hybrid query (``RRFReranker``, namespace
    prefilter) for recall, and each new turn embedded and added through the very handle it then
    searches with: a handle that sees its own commits without checking storage for other writers'
    on every query (:class:`References` pays that check; the store pays it too, since several
    processes may write one store). No maintenance runs: an app that never compacts pays the
    growing fragment count instead, as the store would without its thresholds. No vector index
    either: its vector search is a flat scan of the namespace, exact like ours, which at 100,000
    memories is slower than the store's indexed search (the version-checking reference reads the
    store's table, index included).
    """

    COLUMNS = ("id", "text", "namespace", "vector")

    def __init__(self, store: MemoryStore, path: Path, model: SentenceTransformerEmbedder) -> None:
        import lancedb
        from lancedb.index import FTS, Bitmap
        from lancedb.rerankers import RRFReranker

        source = lancedb.connect(store.uri).open_table(store.table_name)
        rows = source.search().where("superseded_by IS NULL").select(list(self.COLUMNS)).limit(None).to_batches(50_000)
        self.table = lancedb.connect(path).create_table("memories", data=rows)
        self.table.create_index("text", config=FTS(with_position=False))
        self.table.create_index("namespace", config=Bitmap())
        self.rrf = RRFReranker()
        self.model = model
        self.written = 0
        self._lock = threading.Lock()  # ids of live turns, when a writer thread adds meanwhile

    @staticmethod
    def where(namespace: str) -> str:
        # Its own table has no superseded_by column (build_where's filter needs one): namespace only.
        return "namespace = '" + namespace.replace("'", "''") + "'"

    def hybrid(self, namespace: str, query: str) -> list[str]:
        return lancedb_hybrid(self.table, self.model, self.rrf, self.where(namespace), query)

    def add(self, text: str, namespace: str) -> None:
        """One turn, embedded by the same model, added through the handle the app searches with."""
        with self._lock:
            self.written += 1
            row_id = f"plain-{self.written}"
        vector = self.model.embed_documents([text])[0]
        self.table.add([{"id": row_id, "text": text, "namespace": namespace, "vector": vector}])


#: A peer whose index took longer than this to build is not queried at that size (the report says so).
PEER_BUILD_LIMIT_S = 600.0
#: A peer's queries stop once they took this long in all (at least three run).
PEER_QUERY_BUDGET_S = 60.0


def rss_now_mb() -> float:
    """Resident memory now (``ru_maxrss`` only ever grows)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20  # MiB, as ru_maxrss


def langchain_peer(texts: Sequence[str], vectors: np.ndarray, model: SentenceTransformerEmbedder) -> Any:
    """LangChain's in-memory hybrid: BM25Retriever + InMemoryVectorStore in an EnsembleRetriever."""
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class Shared(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return model.embed_documents(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return model.embed_query(text).tolist()

    docs = [Document(page_content=t, id=str(i)) for i, t in enumerate(texts)]
    bm25 = BM25Retriever.from_documents(docs, k=K)
    vectorstore = InMemoryVectorStore(Shared())
    # The vectors our store holds, as add_documents would have stored them (no second embedding).
    vectorstore.store = {
        str(i): {"id": str(i), "vector": vectors[i].tolist(), "text": t, "metadata": {}} for i, t in enumerate(texts)
    }
    dense = vectorstore.as_retriever(search_kwargs={"k": K})
    ensemble = EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5])
    return ensemble.invoke


def llamaindex_peer(texts: Sequence[str], vectors: np.ndarray, model: SentenceTransformerEmbedder) -> Any:
    """LlamaIndex's in-memory hybrid: VectorStoreIndex + BM25Retriever in a QueryFusionRetriever (RRF)."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    class Shared(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return model.embed_query(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return model.embed_query(query).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return model.embed_query(text).tolist()

    Settings.llm = None
    nodes = [TextNode(text=t, id_=str(i), embedding=vectors[i].tolist()) for i, t in enumerate(texts)]
    index = VectorStoreIndex(nodes, embed_model=Shared())
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K)
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=K), bm25],
        similarity_top_k=K,
        num_queries=1,
        mode=FUSION_MODES.RECIPROCAL_RANK,
        use_async=False,
        llm=None,
    )
    return fusion.retrieve


PEERS = {"langchain-ensemble": langchain_peer, "llamaindex-fusion": llamaindex_peer}


def peers(
    texts: Sequence[str], vectors: np.ndarray, model: SentenceTransformerEmbedder, questions: Sequence[str], ours: float
) -> dict[str, Any]:
    """Static recall latency of the frameworks' own in-memory hybrid retrievers over the same memories.

    Same texts, same vectors (no second embedding), queries embedded by the same model. Their BM25
    retrievers are built once from documents and have no ``add``: a chat loop would rebuild them
    per turn, so ``build_s`` is also what one write would cost them.
    """
    out: dict[str, Any] = {}
    for name, build in PEERS.items():
        before = rss_now_mb()
        started = time.perf_counter()
        run = build(texts, vectors, model)
        built = time.perf_counter() - started
        entry: dict[str, Any] = {"build_s": round(built, 2), "rss_added_mb": round(rss_now_mb() - before, 1)}
        if built > PEER_BUILD_LIMIT_S:
            entry["stopped"] = f"index build took over {PEER_BUILD_LIMIT_S:.0f} s: not queried"
        else:
            run(questions[0])  # warm-up, as ours had
            lat: list[float] = []
            for q in questions:
                lat.append(timed(run, q))
                if len(lat) >= 3 and sum(lat) > PEER_QUERY_BUDGET_S * 1000:
                    entry["stopped"] = f"queries stopped after {PEER_QUERY_BUDGET_S:.0f} s"
                    break
            entry |= {
                "queries": len(lat),
                "recall_p50_ms": pct(lat, 0.5),
                "ours_vs_peer": round(ours / statistics.median(lat), 3),
            }
        out[name] = entry
        del run
    return out


def timed(fn: Any, *args: Any) -> float:
    started = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - started) * 1000


def chat(size: int, turns: Sequence[Turn], model: SentenceTransformerEmbedder, hay: Haystack, args: Any) -> dict:
    real = size <= args.real_up_to
    embedder: Any = model if real else PooledEmbedder(model, hay)
    questions = [q for _, q, _, _ in load_questions(args.data)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db"
        store = MemoryStore(path, embedder=embedder)
        texts = hay.texts(size)
        started = time.perf_counter()
        for start in range(0, size, 5000):
            chunk = texts[start : start + 5000]
            store.add_many(
                [{"text": t, "kind": "message", "session_id": f"s{(start + i) // 25}"} for i, t in enumerate(chunk)],
                namespace="u",
                dedup=False,
            )
        ingest = size / (time.perf_counter() - started)
        log(f"chat {size}: loaded at {ingest:.0f}/s")
        store.admin.optimize()
        raw = None
        if real:
            sample = texts[: min(size, args.throughput_sample)]
            started = time.perf_counter()
            model.embed_documents(sample)
            raw = len(sample) / (time.perf_counter() - started)
        refs = References(store, model)
        held = refs.load("u")
        app = PlainApp(store, Path(folder) / "plain", model)
        log(f"chat {size}: plain LanceDB app's table built")
        retriever = MemoryRetriever(store, namespace="u", config={"record_access": False})
        retriever.recall(questions[-1])  # warm-up (a question no timed call asks)
        app.hybrid("u", questions[-1])
        static, hybrid, floor, after, adds = [], [], [], [], []
        plain_static, plain_after, plain_adds = [], [], []
        for r in range(args.rounds):
            # A different question for each timed call of a system: nothing is answered twice.
            q, q_after = questions[(2 * r) % len(questions)], questions[(2 * r + 1) % len(questions)]
            static.append(timed(retriever.recall, q))
            hybrid.append(timed(refs.hybrid, "u", q))
            floor.append(timed(refs.floor, "u", q))
            plain_static.append(timed(app.hybrid, "u", q))
            turn = f"{turns[(size + r) % len(turns)].text} (live #{r})"
            adds.append(timed(lambda t=turn: store.add(t, namespace="u", kind="message", session_id="live")))
            after.append(timed(retriever.recall, q_after))
            plain_adds.append(timed(app.add, turn, "u"))
            plain_after.append(timed(app.hybrid, "u", q_after))
        store.flush()
        peak = peak_rss_mb()  # before the peers add theirs
        framework_peers = (
            peers(held, refs.matrices["u"], model, questions[: args.rounds], statistics.median(static))
            if args.peers
            else None
        )
        on_disk = disk_mb(path)
        # Old versions are kept for version_retention (twice storage_timeout) so that readers on them never
        # break; a bulk load's compactions leave many behind. What stays once they are pruned:
        store.admin.purge()
        result = {
            "memories": size,
            "vectors": "real MiniLM" if real else "haystack: real MiniLM vectors of its dialogue (queries real)",
            "recall_static_p50_ms": pct(static, 0.5),
            "recall_after_write_p50_ms": pct(after, 0.5),
            "recall_after_write_p95_ms": pct(after, 0.95),
            "lancedb_hybrid_p50_ms": pct(hybrid, 0.5),
            "floor_p50_ms": pct(floor, 0.5),
            "static_vs_lancedb": round(statistics.median(static) / statistics.median(hybrid), 2),
            "after_write_vs_lancedb": round(statistics.median(after) / statistics.median(hybrid), 2),
            "plain_lancedb_static_p50_ms": pct(plain_static, 0.5),
            "plain_lancedb_after_write_p50_ms": pct(plain_after, 0.5),
            "plain_lancedb_after_write_p95_ms": pct(plain_after, 0.95),
            "plain_lancedb_add_p50_ms": pct(plain_adds, 0.5),
            "static_vs_plain_lancedb": round(statistics.median(static) / statistics.median(plain_static), 2),
            "after_write_vs_plain_lancedb": round(statistics.median(after) / statistics.median(plain_after), 2),
            "static_vs_floor": round(statistics.median(static) / statistics.median(floor), 2),
            "after_write_vs_floor": round(statistics.median(after) / statistics.median(floor), 2),
            "add_p50_ms": pct(adds, 0.5),
            "add_p95_ms": pct(adds, 0.95),
            "add_p99_ms": pct(adds, 0.99),
            "add_many_rows_per_s": round(ingest, 1),
            "raw_embedding_texts_per_s": round(raw, 1) if raw else None,
            "add_many_vs_raw_embedding": round(ingest / raw, 2) if raw else None,
            "peak_rss_mb": peak,
            "disk_mb": on_disk,
            "disk_after_prune_mb": disk_mb(path),
            "peers": framework_peers,
        }
        store.close()
    print(json.dumps(result))
    return result


def bulk_config(args: Any) -> dict[str, Any]:
    """The large scenarios' store: old versions pruned after ``--version-retention-s``.

    A bulk load compacts again and again, and each compaction's old files stay for
    ``version_retention`` (an hour by default): 14 GB at 100,000 memories, more than this
    machine's disk at 1,000,000.
    """
    return {"version_retention": timedelta(seconds=args.version_retention_s)}


def tenants(count: int, per: int, model: SentenceTransformerEmbedder, hay: Haystack, args: Any) -> dict:
    embedder = PooledEmbedder(model, hay)
    questions = [q for _, q, _, _ in load_questions(args.data)]
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db"
        store = MemoryStore(path, embedder=embedder, config=bulk_config(args))
        started = time.perf_counter()
        batch: list[dict[str, Any]] = []
        for t in range(count):
            batch += [{"text": text, "namespace": f"user-{t}", "kind": "message"} for text in hay.texts(per, t * per)]
            if len(batch) >= 20_000 or t == count - 1:
                store.add_many(batch, dedup=False)
                batch = []
                if (t + 1) * per % 100_000 < per:
                    log(f"tenants: {(t + 1) * per} rows")
        ingest = count * per / (time.perf_counter() - started)
        log(f"tenants: {count * per} rows loaded at {ingest:.0f}/s")
        store.admin.optimize()
        log("tenants: optimized")
        # add_many into the full table with the real model, against the model alone on the same texts.
        sample = [t.text for t in hay.turns[: args.throughput_sample]]
        started = time.perf_counter()
        model.embed_documents(sample)
        raw = len(sample) / (time.perf_counter() - started)
        started = time.perf_counter()
        store.add_many([{"text": t, "namespace": "bulk", "kind": "message"} for t in sample])
        into_full = len(sample) / (time.perf_counter() - started)
        log(f"tenants: add_many into the full table {into_full:.0f}/s, raw embedding {raw:.0f}/s")
        refs = References(store, model)
        app = PlainApp(store, Path(folder) / "plain", model)
        log("tenants: plain LanceDB app's table built")
        stop = threading.Event()
        written = [0]

        def writer() -> None:
            # Each turn goes to both, so that both are read while the same writes land.
            wrng = random.Random(1)
            while not stop.is_set():
                ns = f"user-{wrng.randrange(count // 2, count)}"  # the other half of the tenants
                turn = f"live turn {written[0]} for {ns}"
                store.add(turn, namespace=ns, kind="message")
                app.add(turn, ns)
                written[0] += 1

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        ours, hybrid, plain, rss = [], [], [], []
        try:
            for r in range(args.rounds):
                ns = f"user-{rng.randrange(0, count // 2)}"
                q = questions[r % len(questions)]
                # A request handler makes its retriever per request (cheap): the store's views are shared.
                retriever = MemoryRetriever(store, namespace=ns, config={"record_access": False})
                ours.append(timed(retriever.recall, q))
                hybrid.append(timed(refs.hybrid, ns, q))
                plain.append(timed(app.hybrid, ns, q))
                rss.append(rss_now_mb())
        finally:
            stop.set()
            thread.join()
        result = {
            "namespaces": count,
            "memories_each": per,
            "rows": count * per,
            "writes_during_recalls": written[0],
            "recall_p50_ms": pct(ours, 0.5),
            "recall_p95_ms": pct(ours, 0.95),
            "lancedb_hybrid_p50_ms": pct(hybrid, 0.5),
            "recall_vs_lancedb": round(statistics.median(ours) / statistics.median(hybrid), 2),
            "plain_lancedb_p50_ms": pct(plain, 0.5),
            "plain_lancedb_p95_ms": pct(plain, 0.95),
            "recall_vs_plain_lancedb": round(statistics.median(ours) / statistics.median(plain), 2),
            "recall_p95_vs_plain_lancedb_p50": round(pct(ours, 0.95) / statistics.median(plain), 2),
            "add_many_rows_per_s": round(ingest, 1),
            "add_many_real_into_full_table_rows_per_s": round(into_full, 1),
            "raw_embedding_texts_per_s": round(raw, 1),
            "add_many_vs_raw_embedding": round(into_full / raw, 2),
            "rss_during_recall_mb": round(max(rss), 1),
            "peak_rss_mb": peak_rss_mb(),
            "disk_mb": disk_mb(path),
            "version_retention_s": args.version_retention_s,
        }
        store.close()
    print(json.dumps(result))
    return result


def needles(size: int, turns: Sequence[Turn], model: SentenceTransformerEmbedder, hay: Haystack, args: Any) -> dict:
    """The ``needles`` scenario for each of ``--needles-dates``' variants (the first one on top)."""
    variants = [v.strip() for v in args.needles_dates.split(",")]
    results = {v: needles_dated(size, turns, model, hay, args, v) for v in variants}
    out = dict(results[variants[0]])
    if len(variants) > 1:
        out["variants"] = results
    print(json.dumps(out))
    return out


def filler_dates(count: int, needles: Sequence[Turn], dates: str) -> list[datetime | None]:
    """The filler's ``created_at``: drawn from the needles' span (``spread``) or at write time (``now``)."""
    if dates == "now":
        return [None] * count
    first, last = min(t.created_at for t in needles), max(t.created_at for t in needles)
    rng = random.Random(29)
    return [first + (last - first) * rng.random() for _ in range(count)]


def needles_dated(
    size: int, turns: Sequence[Turn], model: SentenceTransformerEmbedder, hay: Haystack, args: Any, dates: str
) -> dict:
    conversation = turns[0].conversation
    mine = [t for t in turns if t.conversation == conversation]
    others = hay.without(conversation)
    asked = [(q, ev) for conv, q, ev, _ in load_questions(args.data) if conv == conversation]
    embedder = PooledEmbedder(model, others)  # needles have no (#g) number: embedded for real,
    embedder.remember([t.text for t in mine])  # once, for both stores
    # Asked a day after the conversation ends (as locomo_recall.py asks), or at the wall clock.
    now = None if dates == "now" else max(t.created_at for t in mine) + timedelta(days=1)
    out: dict[str, Any] = {"conversation": conversation, "questions": len(asked), "needles": len(mine), "dates": dates}
    for label, hidden_in in (("alone", 0), ("hidden", size)):
        with tempfile.TemporaryDirectory() as folder:
            store = MemoryStore(Path(folder) / "db", embedder=embedder, config=bulk_config(args))
            texts, created = others.texts(hidden_in), filler_dates(hidden_in, mine, dates)
            for start in range(0, hidden_in, 20_000):
                batch = zip(texts[start : start + 20_000], created[start : start + 20_000], strict=True)
                store.add_many(
                    [{"text": t, "kind": "message", **({"created_at": c} if c else {})} for t, c in batch],
                    namespace="u",
                    dedup=False,
                )
            added = store.add_many(
                [
                    {"text": t.text, "kind": "message", "session_id": t.session, "created_at": t.created_at}
                    for t in mine
                ],
                namespace="u",
                dedup=False,
            )
            dia = {m.id: t.dia_id for m, t in zip(added, mine, strict=True)}
            log(f"needles ({dates}): {label}, {hidden_in + len(mine)} rows loaded")
            store.admin.optimize()
            out[label] = needles_recall(store, model, dia, asked, now)
            out[label]["memories"] = hidden_in + len(mine)
            out[label]["disk_mb"] = disk_mb(Path(folder) / "db")
            store.close()
    out["difference"] = round(out["hidden"]["recall@10"] - out["alone"]["recall@10"], 3)
    out["lancedb_hybrid_difference"] = round(
        out["hidden"]["lancedb_hybrid_recall@10"] - out["alone"]["lancedb_hybrid_recall@10"], 3
    )
    out["peak_rss_mb"] = peak_rss_mb()
    out["version_retention_s"] = args.version_retention_s
    return out


def needles_recall(
    store: MemoryStore,
    model: SentenceTransformerEmbedder,
    dia: dict[str, str],
    asked: Sequence[tuple[str, set[str]]],
    now: datetime | None,
) -> dict[str, Any]:
    """Evidence recall@10 of ours and of LanceDB's hybrid query on one loaded store."""
    retriever = MemoryRetriever(store, namespace="u", config={"record_access": False})
    recalls, lat, rss = [], [], []
    for q, evidence in asked:
        started = time.perf_counter()
        got = [dia.get(m.id) for m in retriever.recall(q, k=K, token_budget=None, now=now).memories]
        lat.append((time.perf_counter() - started) * 1000)
        recalls.append(len(set(got) & evidence) / len(evidence))
        rss.append(rss_now_mb())
    # LanceDB's hybrid query on the same table, after ours (its handle's caches would
    # count in our RSS otherwise): how much the haystack costs a plain hybrid search.
    refs = References(store, model)
    plain = [len({dia.get(i) for i in refs.hybrid("u", q)} & evidence) / len(evidence) for q, evidence in asked]
    return {
        "recall@10": round(float(np.mean(recalls)), 3),
        "p50_ms": pct(lat, 0.5),
        "lancedb_hybrid_recall@10": round(float(np.mean(plain)), 3),
        "rss_during_recall_mb": round(max(rss), 1),
    }


def plot(report: dict[str, Any], path: Path) -> None:
    """Recall latency against namespace size: ours (static, right after a write), LanceDB hybrid, floor."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    chat = report["chat"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    series = [
        ("recall_static_p50_ms", "memory-retrievers, static", "o-"),
        ("recall_after_write_p50_ms", "memory-retrievers, right after a write", "s-"),
        ("lancedb_hybrid_p50_ms", "LanceDB hybrid (RRF), version-checking handle", "^--"),
        ("plain_lancedb_static_p50_ms", "plain LanceDB app: hybrid, static", "D--"),
        ("plain_lancedb_after_write_p50_ms", "plain LanceDB app: hybrid, right after its write", "d--"),
        ("floor_p50_ms", "floor: query embedding + numpy top-10", "v:"),
    ]
    for key, label, style in series:
        # Results from before the plain app was measured lack its keys: drawn where present.
        points = [(c["memories"], c[key]) for c in chat if key in c]
        if points:
            ax.plot(*zip(*points, strict=True), style, label=label)
    for name, style in (("langchain-ensemble", "x-."), ("llamaindex-fusion", "+-.")):
        timed_at = [
            (c["memories"], c["peers"][name]["recall_p50_ms"])
            for c in chat
            if "recall_p50_ms" in (c.get("peers") or {}).get(name, {})
        ]
        if timed_at:
            ax.plot(*zip(*timed_at, strict=True), style, label=f"{name} (in-memory, static)")
    ax.set_xscale("log")
    ax.set_xlabel("memories in the namespace")
    ax.set_ylabel("recall latency p50 (ms)")
    ax.set_yscale("log")
    ax.set_title("Recall while writing (benchmarks/workloads.py)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every scenario (~1 min)")
    ap.add_argument("--scenarios", default="chat,tenants,needles")
    ap.add_argument("--sizes", default="600,5000,20000,100000", help="chat: namespace sizes")
    ap.add_argument("--tenants", default="1000x1000", help="tenants: NAMESPACESxMEMORIES")
    ap.add_argument("--needles", type=int, default=1_000_000, help="needles: memories the conversation hides in")
    ap.add_argument(
        "--needles-dates",
        default="spread",
        help="needles: how the filler is dated, 'spread' over the conversation's span or 'now' (the old "
        "variant); 'spread,now' runs both",
    )
    ap.add_argument("--real-up-to", type=int, default=5000, help="embed memories for real up to this namespace size")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument(
        "--throughput-sample",
        type=int,
        default=2000,
        help="texts add_many's throughput is compared with the model's alone on (chat: at most the size)",
    )
    ap.add_argument(
        "--peers",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="chat: also time LangChain's and LlamaIndex's in-memory hybrid retrievers on the same memories",
    )
    ap.add_argument(
        "--pool", type=int, default=4000, help="dialogue turns the filler haystack is made of (each embedded once)"
    )
    ap.add_argument(
        "--version-retention-s",
        type=float,
        default=60.0,
        help="tenants and needles: the store's version_retention (old versions pruned after this)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--plot", type=Path, nargs="?", const=PLOT, help=f"write the latency plot (default {PLOT})")
    ap.add_argument("--plot-only", action="store_true", help="plot the existing --out file without measuring")
    args = ap.parse_args()
    unknown = set(args.needles_dates.split(",")) - {"spread", "now"}
    if unknown:
        ap.error(f"--needles-dates takes 'spread', 'now' or both comma-separated, not {sorted(unknown)}")
    if args.plot_only:
        plot(json.loads(args.out.read_text()), args.plot or PLOT)
        return
    if args.quick:
        args.sizes, args.tenants, args.needles, args.rounds, args.pool = "600", "10x100", 1000, 5, 700
    turns = load_turns(args.data)
    model = SentenceTransformerEmbedder()
    hay = Haystack.of(turns[: args.pool], model)
    # Scenarios not run this time keep their figures from the results file.
    previous = json.loads(args.out.read_text()) if args.out.exists() and not args.quick else {}
    report: dict[str, Any] = {"chat": [], "tenants": None, "needles": None, **previous}
    report["commands"] = [*report.get("commands", []), " ".join(["python", *sys.argv])]
    report.pop("command", None)
    scenarios = set(args.scenarios.split(","))
    if "chat" in scenarios:
        report["chat"] = [chat(int(s), turns, model, hay, args) for s in args.sizes.split(",")]
    if "tenants" in scenarios:
        count, per = (int(x) for x in args.tenants.split("x"))
        report["tenants"] = tenants(count, per, model, hay, args)
    if "needles" in scenarios:
        report["needles"] = needles(args.needles, turns, model, hay, args)
    report["machine"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    if args.plot and report["chat"]:
        plot(report, args.plot)


if __name__ == "__main__":
    main()
