"""Messy chat: the block an agent is handed after real-life chat traffic, ours against LanceDB's.

Why: LoCoMo is clean prose between two people. A chat app stores typos, "lol", emoji-only
replies, the assistant's "Got it!" and "I don't think you've told me", facts that were corrected
since, a 190-line stack trace pasted as one message, a second language. ``_messy_script.py`` is
three users' chats written that way (hand-written, no LLM, no randomness), with 88 questions asked
at the end, each labelled with its category, the messages that must be in the block and, for
corrections, the messages it supersedes.

Every system stores the same messages (``"user: ..."`` / ``"assistant: ..."``, kind ``message``,
the session and the time each was sent) and answers each question as the next user turn:

- ``core``: ``store.add(...)`` per message, ``MemoryRetriever(store).recall(question, namespace=...)``
  with every default; the block is ``result.to_context()``.
- ``langchain``: ``MemoryChatMessageHistory`` per session (one ``add_messages`` per message); the
  question goes through ``create_agent`` with ``MemoryMiddleware`` (defaults, ``remember="off"`` so
  the questions do not become memories); the block is what the model's system message holds.
- ``llamaindex``: ``RecallMemory`` per session (one ``put`` per message); the question is
  ``RecallMemory.get(input=...)`` in a fresh session; the block is the system message it returns.
- ``lancedb-hybrid`` / ``lancedb-bm25``: LanceDB's own hybrid query (vector + full text,
  ``RRFReranker``) and its full-text query alone, top 10, on the ``core`` table (same rows, same
  vectors, the namespace as a prefilter): what an app on LanceDB alone would paste.

Per category and overall: evidence recall@10 (the share of a question's evidence messages among
the block's first 10 lines); "answer in block" (the answer's words are in the block's text);
correction-order wins (the newer message in the block and every superseded one absent or below
it); blocks the pasted stack trace leaked into (when it is not the evidence); blocks holding any
pasted content not asked for; empty blocks for off-topic questions; assistant hedges ("I don't
think you've told me ...") in blocks.

    python benchmarks/messy_chat.py                     # every system, ~3-4 min on 2 cores
    python benchmarks/messy_chat.py --systems core,lancedb-hybrid,lancedb-bm25 --personas maya
    python benchmarks/messy_chat.py --details /tmp/blocks.json   # also every block's text and scores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# LanceDB logs a deprecation warning per hybrid/FTS query (a Rust log line, not a Python warning);
# read when LanceDB is first imported.
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")

from _messy_script import CATEGORIES, PERSONAS, Persona, Question

from memory_retrievers import Embedder, MemoryRetriever, MemoryStore, RecallResult

OUT = Path(__file__).parent / "results" / "messy_chat.json"
K = 10


class Clock:
    """The stores' clock: each message is written at the time it was sent; questions a day later."""

    def __init__(self) -> None:
        self.now = datetime(2024, 1, 1).astimezone()

    def __call__(self) -> datetime:
        return self.now


def text_key(text: str) -> str:
    """How a stored text is matched to the script's messages: spaces and case aside, its first 600 characters."""
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()[:600]


class Lookup:
    """A stored text -> the script messages with that text (several for "lol", "Got it!"...)."""

    def __init__(self, stored: Iterable[tuple[int, str]]) -> None:
        self.by_text: dict[str, set[int]] = {}
        for index, text in stored:
            self.by_text.setdefault(text_key(text), set()).add(index)

    def __call__(self, text: str) -> frozenset[int]:
        return frozenset(self.by_text.get(text_key(text), ()))


def persona_lookup(p: Persona) -> Lookup:
    return Lookup((m.index, m.stored) for m in p.messages)


@dataclass
class Block:
    """What one system handed the model for one question."""

    lines: list[frozenset[int]]  # per line, best first: the messages it stands for
    text: str  # the block as the model reads it
    ms: float = 0.0
    scores: list[dict[str, Any]] = field(default_factory=list)  # ours: per line, why it is there


# ---------------------------------------------------------------------- the metrics (pure)


def answer_in(text: str, parts: Sequence[str]) -> bool:
    """Every part of the answer (alternatives split by ``|``) is in ``text``, case aside."""
    t = unicodedata.normalize("NFC", text).casefold()
    return all(any(unicodedata.normalize("NFC", a).casefold() in t for a in part.split("|")) for part in parts)


def judge(
    q: Question,
    lines: Sequence[frozenset[int]],
    text: str,
    *,
    trace: int,
    pastes: frozenset[int],
    hedges: frozenset[int],
    k: int = K,
) -> dict[str, Any]:
    """One block against one question.

    ``lines`` are the block's lines best first, each as the message indices it stands for.

    - ``recall``: the share of the evidence among the first ``k`` lines (``None`` off topic);
    - ``answer``: every answer part is in ``text`` (``None`` off topic);
    - ``correction_win`` (questions that supersede something): an evidence message is in the block
      and every superseded message is absent or on a later line than the best-placed evidence;
    - ``superseded_in_block``: a superseded message is in the block at all;
    - ``trace_leak``: the pasted trace is in the block and is not the evidence;
    - ``paste_leak``: some pasted content that is not the evidence is in the block;
    - ``hedge_lines``: lines that are the assistant hedging;
    - ``empty``: no lines.
    """
    lines = list(lines)[:k]
    first: dict[int, int] = {}
    for position, indices in enumerate(lines):
        for i in indices:
            first.setdefault(i, position)
    evidence = set(q.evidence)
    out: dict[str, Any] = {
        "category": q.category,
        "recall": (sum(1 for e in evidence if e in first) / len(evidence)) if evidence else None,
        "answer": answer_in(text, q.answer) if q.answer else None,
        "empty": not lines,
        "trace_leak": trace in first and trace not in evidence,
        "paste_leak": any(i in first for i in pastes - evidence),
        "hedge_lines": sum(1 for indices in lines if indices & hedges),
        "correction_win": None,
        "superseded_in_block": None,
    }
    if q.supersedes:
        best = min((first[e] for e in evidence if e in first), default=None)
        out["correction_win"] = best is not None and all(old not in first or first[old] > best for old in q.supersedes)
        out["superseded_in_block"] = any(old in first for old in q.supersedes)
    return out


def _mean(values: Iterable[float]) -> float | None:
    v = list(values)
    return round(sum(v) / len(v), 3) if v else None


def summarize(judged: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per category and overall, from ``judge`` records."""
    answerable = [j for j in judged if j["category"] != "off_topic"]
    corrections = [j for j in judged if j["correction_win"] is not None]
    off = [j for j in judged if j["category"] == "off_topic"]
    out: dict[str, Any] = {
        "questions": len(judged),
        "evidence recall@10": _mean(j["recall"] for j in answerable),
        "answer in block": _mean(float(j["answer"]) for j in answerable),
        "correction-order wins": f"{sum(j['correction_win'] for j in corrections)}/{len(corrections)}",
        "correction-order win rate": _mean(float(j["correction_win"]) for j in corrections),
        "superseded message in block": sum(bool(j["superseded_in_block"]) for j in corrections),
        "trace leaked into an unrelated block": sum(j["trace_leak"] for j in judged),
        "pasted content in an unrelated block": sum(j["paste_leak"] for j in judged),
        "off-topic empty-block rate": _mean(float(j["empty"]) for j in off),
        "empty blocks, answerable": sum(j["empty"] for j in answerable),
        "blocks with an assistant hedge": sum(1 for j in judged if j["hedge_lines"]),
        "assistant hedge lines": sum(j["hedge_lines"] for j in judged),
        "by category": {},
    }
    for c in CATEGORIES:
        group = [j for j in judged if j["category"] == c]
        if not group:
            continue
        if c == "off_topic":
            out["by category"][c] = {"n": len(group), "empty-block rate": _mean(float(j["empty"]) for j in group)}
        else:
            out["by category"][c] = {
                "n": len(group),
                "recall@10": _mean(j["recall"] for j in group),
                "answer in block": _mean(float(j["answer"]) for j in group),
            }
    return out


# ---------------------------------------------------------------------- recording what the adapters recalled

_recalls: list[RecallResult] = []
_original_arecall = MemoryRetriever.arecall


async def _recording_arecall(self: MemoryRetriever, *args: Any, **kwargs: Any) -> RecallResult:
    result = await _original_arecall(self, *args, **kwargs)
    _recalls.append(result)
    return result


def record_recalls() -> None:
    """Keep every recall's result (the adapters' blocks are read back to memories through it).

    Wraps the public ``MemoryRetriever.arecall`` (``recall`` calls it); changes nothing it returns.
    """
    MemoryRetriever.arecall = _recording_arecall  # type: ignore[method-assign]


def _explained(result: RecallResult, lookup: Lookup) -> tuple[list[frozenset[int]], list[dict[str, Any]]]:
    lines, scores = [], []
    for m in result.memories:
        indices = lookup(m.text)
        lines.append(indices)
        e = m.explanation
        scores.append(
            {
                "messages": sorted(indices),
                "score": round(m.score, 3),
                "relevance": round(m.relevance, 3),
                "final": round(e.final_score, 4),
                "ranks": {c.label: c.rank for c in e.channels},
                "note": m.note,
                "text": m.text[:120],
            }
        )
    return lines, scores


# ---------------------------------------------------------------------- the systems


class System:
    name = ""

    def replay(self, p: Persona) -> float:
        """Store the persona's chat; returns the mean ms per message."""
        raise NotImplementedError

    def ask(self, p: Persona, q: Question, n: int) -> Block:
        raise NotImplementedError

    def close(self) -> None:
        pass


def settle(store: MemoryStore) -> None:
    """Fold every row into the indexes before the questions (an app's maintenance would).

    LanceDB's BM25 scores depend on which rows its full-text index covers (unindexed rows are
    scanned apart), and the store's background maintenance runs when its thresholds trip, so
    without this the same chat gives slightly different rankings from run to run.
    """
    store.admin.optimize()


class Core(System):
    """The core library as a chat app uses it: one ``store.add`` per message, ``recall`` with defaults."""

    name = "core"

    def __init__(self, path: Path, model: Embedder, *, batch: bool = False) -> None:
        self.clock = Clock()
        self.store = MemoryStore(path, embedder=model, clock=self.clock)
        self.retriever = MemoryRetriever(self.store)
        self.batch = batch  # one add_many per session instead (the smoke test, for speed)
        self.lookups: dict[str, Lookup] = {}

    def replay(self, p: Persona) -> float:
        self.lookups[p.namespace] = persona_lookup(p)
        t0 = time.perf_counter()
        if self.batch:
            sessions: dict[str, list[Any]] = {}
            for m in p.messages:
                sessions.setdefault(m.session, []).append(m)
            for messages in sessions.values():
                self.clock.now = messages[-1].created_at
                records = [
                    {"text": m.stored, "kind": "message", "session_id": m.session, "created_at": m.created_at}
                    for m in messages
                ]
                self.store.add_many(records, namespace=p.namespace)
        else:
            for m in p.messages:
                self.clock.now = m.created_at
                self.store.add(
                    m.stored, namespace=p.namespace, kind="message", session_id=m.session, created_at=m.created_at
                )
        ms = (time.perf_counter() - t0) * 1000 / len(p.messages)
        settle(self.store)
        return ms

    def ask(self, p: Persona, q: Question, n: int) -> Block:
        self.clock.now = p.asked_at
        t0 = time.perf_counter()
        result = self.retriever.recall(q.text, namespace=p.namespace)
        ms = (time.perf_counter() - t0) * 1000
        lines, scores = _explained(result, self.lookups[p.namespace])
        return Block(lines, result.to_context(), ms, scores)

    def close(self) -> None:
        self.store.close()


def _where(namespace: str) -> str:
    return "namespace = '" + namespace.replace("'", "''") + "'"


def lancedb_top(
    table: Any, model: Embedder, namespace: str, query: str, query_type: str, *, rrf: Any, k: int = K
) -> list[str]:
    """The texts of LanceDB's own top ``k`` for ``query`` in ``namespace``: ``hybrid`` (vector + full
    text, ``RRFReranker``) or ``fts`` (BM25 alone), on the ``text`` column and its FTS index."""
    if query_type == "hybrid":
        q = (
            table.search(query_type="hybrid", fts_columns="text")
            .vector(model.embed_query(query))
            .text(query)
            .distance_type("cosine")
            .where(_where(namespace), prefilter=True)
            .rerank(rrf)
        )
    else:
        q = table.search(query, query_type="fts", fts_columns="text").where(_where(namespace), prefilter=True)
    return [r["text"] for r in q.limit(k).select(["text"]).to_list()]


class LanceDB(System):
    """LanceDB's own queries on the ``core`` table, top 10; the block is the ten texts."""

    def __init__(self, core: Core, model: Embedder, query_type: str) -> None:
        import lancedb
        from lancedb.rerankers import RRFReranker

        self.name = f"lancedb-{'hybrid' if query_type == 'hybrid' else 'bm25'}"
        self.core = core
        self.model = model
        self.query_type = query_type
        self.table = lancedb.connect(core.store.uri).open_table(core.store.table_name)
        self.rrf = RRFReranker()
        self.errors = 0

    def replay(self, p: Persona) -> float:
        self.table.checkout_latest()
        return 0.0  # the core system wrote the table

    def search(self, namespace: str, query: str) -> list[str]:
        try:
            return lancedb_top(self.table, self.model, namespace, query, self.query_type, rrf=self.rrf)
        except Exception:  # a query LanceDB cannot parse returns nothing, as an app would show
            self.errors += 1
            return []

    def ask(self, p: Persona, q: Question, n: int) -> Block:
        t0 = time.perf_counter()
        texts = self.search(p.namespace, q.text)
        ms = (time.perf_counter() - t0) * 1000
        lookup = self.core.lookups[p.namespace]
        return Block([lookup(t) for t in texts], "\n".join(f"- {t}" for t in texts), ms)


class LangChain(System):
    """``MemoryChatMessageHistory`` per session; asked through ``create_agent`` + ``MemoryMiddleware``."""

    name = "langchain"

    def __init__(self, path: Path, model: Embedder) -> None:
        from langchain.agents import create_agent
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.messages import BaseMessage

        from langchain_memory_retrievers import MemoryMiddleware

        class Recorder(FakeListChatModel):
            """Answers "OK." and keeps the system message it was shown."""

            seen: list[str] = []  # noqa: RUF012 - a pydantic field: each instance gets its own list

            def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
                system = [m for m in messages if m.type == "system"]
                self.seen.append(str(system[0].content) if system else "")
                return super()._call(messages, *args, **kwargs)

        record_recalls()
        self.clock = Clock()
        self.store = MemoryStore(path, embedder=model, clock=self.clock)
        self.namespace = ""
        self.model = Recorder(responses=["OK."])
        self.middleware = MemoryMiddleware(self.store, namespace=lambda rt: self.namespace, remember="off")
        self.agent = create_agent(self.model, tools=[], middleware=[self.middleware])
        self.lookups: dict[str, Lookup] = {}

    def replay(self, p: Persona) -> float:
        from langchain_core.messages import AIMessage, HumanMessage

        from langchain_memory_retrievers import MemoryChatMessageHistory

        self.lookups[p.namespace] = persona_lookup(p)
        histories: dict[str, Any] = {}
        t0 = time.perf_counter()
        for m in p.messages:
            history = histories.get(m.session)
            if history is None:
                history = histories[m.session] = MemoryChatMessageHistory(
                    self.store, namespace=p.namespace, session_id=m.session
                )
            self.clock.now = m.created_at
            mid = f"{p.namespace}-{m.index}"
            message = HumanMessage(m.text, id=mid) if m.role == "user" else AIMessage(m.text, id=mid)
            history.add_messages([message])
        ms = (time.perf_counter() - t0) * 1000 / len(p.messages)
        settle(self.store)
        return ms

    def ask(self, p: Persona, q: Question, n: int) -> Block:
        from langchain_core.messages import HumanMessage

        self.namespace = p.namespace
        self.clock.now = p.asked_at
        self.model.responses, self.model.i = ["OK."], 0
        before = len(_recalls)
        t0 = time.perf_counter()
        self.agent.invoke({"messages": [HumanMessage(q.text, id=f"q-{p.namespace}-{n}")]})
        ms = (time.perf_counter() - t0) * 1000
        header = self.middleware.header
        seen = self.model.seen[-1]
        text = seen.split(header, 1)[1].strip() if header in seen else ""
        if not text or len(_recalls) == before:
            return Block([], "", ms)
        lines, scores = _explained(_recalls[-1], self.lookups[p.namespace])
        return Block(lines, f"{header}\n{text}", ms, scores)

    def close(self) -> None:
        self.store.close()


class LlamaIndex(System):
    """``RecallMemory`` per session; asked with ``RecallMemory.get(input=...)`` in a fresh session."""

    name = "llamaindex"

    def __init__(self, path: Path, model: Embedder) -> None:
        record_recalls()
        self.clock = Clock()
        self.store = MemoryStore(path, embedder=model, clock=self.clock)
        self.lookups: dict[str, Lookup] = {}

    def replay(self, p: Persona) -> float:
        from llama_index.core.base.llms.types import ChatMessage

        from llama_index.memory_retrievers import RecallMemory

        self.lookups[p.namespace] = persona_lookup(p)
        memories: dict[str, Any] = {}
        t0 = time.perf_counter()
        for m in p.messages:
            memory = memories.get(m.session)
            if memory is None:
                memory = memories[m.session] = RecallMemory.from_defaults(
                    store=self.store, namespace=p.namespace, session_id=m.session
                )
            self.clock.now = m.created_at
            memory.put(ChatMessage(role=m.role, content=m.text))
        ms = (time.perf_counter() - t0) * 1000 / len(p.messages)
        settle(self.store)
        return ms

    def ask(self, p: Persona, q: Question, n: int) -> Block:
        from llama_index.core.base.llms.types import MessageRole

        from llama_index.memory_retrievers import RecallMemory

        self.clock.now = p.asked_at
        memory = RecallMemory.from_defaults(store=self.store, namespace=p.namespace, session_id=f"ask-{n}")
        before = len(_recalls)
        t0 = time.perf_counter()
        messages = memory.get(input=q.text)
        ms = (time.perf_counter() - t0) * 1000
        system = [m for m in messages if m.role == MessageRole.SYSTEM]
        text = str(system[0].content) if system else ""
        if not text or len(_recalls) == before:
            return Block([], "", ms)
        lines, scores = _explained(_recalls[-1], self.lookups[p.namespace])
        return Block(lines, text, ms, scores)

    def close(self) -> None:
        self.store.close()


SYSTEMS = ("core", "langchain", "llamaindex", "lancedb-hybrid", "lancedb-bm25")


# ---------------------------------------------------------------------- running


def build(names: Sequence[str], tmp: Path, model: Embedder, *, batch: bool = False) -> list[System]:
    """The systems, in order; LanceDB's read the core's table, so ``core`` comes first when they run."""
    if any(n.startswith("lancedb") for n in names) and "core" not in names:
        names = ["core", *names]
    systems: list[System] = []
    core: Core | None = None
    for name in names:
        if name == "core":
            core = Core(tmp / "core", model, batch=batch)
            systems.append(core)
        elif name == "lancedb-hybrid" and core is not None:
            systems.append(LanceDB(core, model, "hybrid"))
        elif name == "lancedb-bm25" and core is not None:
            systems.append(LanceDB(core, model, "fts"))
        elif name == "langchain":
            systems.append(LangChain(tmp / "langchain", model))
        elif name == "llamaindex":
            systems.append(LlamaIndex(tmp / "llamaindex", model))
        else:
            raise ValueError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
    return systems


def run(
    personas: Sequence[Persona],
    names: Sequence[str],
    model: Embedder,
    tmp: Path,
    *,
    batch: bool = False,
    progress: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Store every persona's chat in every system, ask every question; the results as JSON-ready data."""
    systems = build(names, tmp, model, batch=batch)
    results: dict[str, Any] = {"k": K, "systems": {}, "questions": []}
    judged: dict[str, list[dict[str, Any]]] = {s.name: [] for s in systems}
    timing: dict[str, dict[str, list[float]]] = {s.name: {"replay": [], "ask": []} for s in systems}
    try:
        for p in personas:
            for s in systems:
                t0 = time.perf_counter()
                timing[s.name]["replay"].append(s.replay(p))
                progress(
                    f"{p.namespace}: {s.name} stored {len(p.messages)} messages in {time.perf_counter() - t0:.1f}s"
                )
            pastes = p.of_kind("paste")
            hedges = p.of_kind("hedge")
            for n, q in enumerate(p.questions):
                row: dict[str, Any] = {
                    "persona": p.namespace,
                    "question": q.text,
                    "category": q.category,
                    "evidence": list(q.evidence),
                    "supersedes": list(q.supersedes),
                    "answer": list(q.answer),
                    "systems": {},
                }
                for s in systems:
                    block = s.ask(p, q, n)
                    j = judge(q, block.lines, block.text, trace=p.trace, pastes=pastes, hedges=hedges)
                    judged[s.name].append(j)
                    timing[s.name]["ask"].append(block.ms)
                    row["systems"][s.name] = {
                        **{k: v for k, v in j.items() if k != "category"},
                        "lines": [sorted(i) for i in block.lines],
                        "block chars": len(block.text),
                        **({"explained": block.scores} if block.scores else {}),
                        **({"block": block.text[:4000]} if s.name in ("core", "langchain", "llamaindex") else {}),
                    }
                results["questions"].append(row)
    finally:
        for s in systems:
            s.close()
    for s in systems:
        summary = summarize(judged[s.name])
        summary["replay ms per message"] = round(statistics.mean(timing[s.name]["replay"]), 1)
        summary["ask p50 ms"] = round(statistics.median(timing[s.name]["ask"]), 1)
        if isinstance(s, LanceDB):
            summary["query errors"] = s.errors
        results["systems"][s.name] = summary
    return results


def slim(results: dict[str, Any]) -> dict[str, Any]:
    """The results without the blocks' texts and the lines' scores (``--details`` keeps them)."""
    heavy = ("block", "explained")
    questions = [
        {**q, "systems": {n: {k: v for k, v in got.items() if k not in heavy} for n, got in q["systems"].items()}}
        for q in results["questions"]
    ]
    return {**results, "questions": questions}


def write_json(path: Path, results: dict[str, Any]) -> None:
    """The summaries indented, then one line per question (readable, and diffs stay small)."""
    head = json.dumps({k: v for k, v in results.items() if k != "questions"}, indent=1, ensure_ascii=False, default=str)
    rows = ",\n  ".join(json.dumps(q, ensure_ascii=False, default=str) for q in results.get("questions", []))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head[:-2] + f',\n "questions": [\n  {rows}\n ]\n}}\n')


def table(results: dict[str, Any]) -> str:
    """The summary as a plain-text table, one column per system."""
    systems = results["systems"]
    names = list(systems)
    rows: list[tuple[str, list[Any]]] = []
    for c in CATEGORIES:
        got = [systems[n]["by category"].get(c) for n in names]
        if not any(got):
            continue
        count = next(g["n"] for g in got if g)
        if c == "off_topic":
            rows.append((f"{c} (n={count}) empty-block rate", [g and g["empty-block rate"] for g in got]))
        else:
            rows.append((f"{c} (n={count}) recall@10", [g and g["recall@10"] for g in got]))
            rows.append((f"{c} (n={count}) answer in block", [g and g["answer in block"] for g in got]))
    for key in (
        "evidence recall@10",
        "answer in block",
        "correction-order wins",
        "superseded message in block",
        "trace leaked into an unrelated block",
        "pasted content in an unrelated block",
        "off-topic empty-block rate",
        "empty blocks, answerable",
        "blocks with an assistant hedge",
        "assistant hedge lines",
        "replay ms per message",
        "ask p50 ms",
    ):
        rows.append((key, [systems[n].get(key) for n in names]))
    width = max(len(r[0]) for r in rows)
    out = [" " * width + " | " + " | ".join(f"{n:>14}" for n in names)]
    out.append("-" * len(out[0]))
    for label, values in rows:
        out.append(f"{label:<{width}} | " + " | ".join(f"{'' if v is None else v!s:>14}" for v in values))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", default="all", help=f"comma list of {', '.join(SYSTEMS)}, or 'all'")
    ap.add_argument("--personas", default="all", help="comma list of " + ", ".join(p.namespace for p in PERSONAS))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--details", type=Path, default=None, help="also write every block's text and each line's scores here"
    )
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    names = list(SYSTEMS) if args.systems == "all" else [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(names) - set(SYSTEMS)
    if unknown:
        ap.error(f"unknown system(s) {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    wanted = None if args.personas == "all" else set(args.personas.split(","))
    personas = [p for p in PERSONAS if wanted is None or p.namespace in wanted]
    from memory_retrievers import SentenceTransformerEmbedder

    t0 = time.perf_counter()
    model = SentenceTransformerEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        results = run(personas, names, model, Path(tmp), progress=lambda s: print(s, flush=True))
    results["personas"] = {
        p.namespace: {"messages": len(p.messages), "facts": p.facts, "questions": len(p.questions)} for p in personas
    }
    results["embedder"] = model.name
    results["seconds"] = round(time.perf_counter() - t0, 1)
    if args.details is not None:
        write_json(args.details, results)
    write_json(args.out, slim(results))
    print(table(results))
    print(f"{results['seconds']} s; written to {args.out}")


if __name__ == "__main__":
    main()
