"""Memory formation: a finished conversation in, turns + facts (+ a summary) stored out.

The steps, each switchable in :class:`FormationConfig`: store the raw turns with a zero-LLM
importance; ask the LLM for facts (linked to the turns they came from); compare each fact with
the stored memories it resembles and apply the LLM's ADD/MERGE/UPDATE/INVALIDATE/SKIP; mark
contradictions without an LLM; optionally store a session summary. The raw turns are stored before
any LLM is asked, so a failing, slow or garbled LLM never costs a turn.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .. import _loop
from ..config import validated
from ..errors import InvalidInputError, NotFoundError
from ..integration import aiter_memories
from ..llm import as_llm
from ..models import Memory, MemoryKind
from ..validation import validate_record
from .config import FormationConfig
from .consolidate import Consolidator
from .extract import extract_facts, summarize
from .importance import importance
from .lifecycle import next_tier
from .report import FormationReport
from .review import DuplicateFinding, review_duplicates
from .types import Confidence, Fact

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["MemoryFormer", "Message"]

#: A turn to form memories from: a text, a record dict (``text`` plus writable fields), or a
#: memory already stored (chat adapters store turns as they come).
Message = str | Mapping[str, Any] | Memory


class MemoryFormer:
    """Turns conversations into memories: raw turns, extracted facts, consolidation, summaries.

    Example::

        former = MemoryFormer(store, llm=my_llm)
        report = former.form(["Ana: I moved to Lisbon last week."], namespace="ana", session_id="s1")

    Args:
        store: The store to write to.
        llm: Anything with ``complete``/``acomplete`` or a callable ``prompt -> str``; ``None``
            runs only the zero-LLM steps.
        config: A :class:`FormationConfig` or a dict of its fields.
    """

    def __init__(
        self, store: MemoryStore, *, llm: Any = None, config: FormationConfig | Mapping[str, Any] | None = None
    ) -> None:
        self._config: FormationConfig = validated(FormationConfig, config, "FormationConfig")
        self._store = store
        self._llm = as_llm(llm)
        self._lock = threading.Lock()
        self._worker: ThreadPoolExecutor | None = None
        self._worker_pid = 0
        self._pending: set[Future[FormationReport]] = set()

    @property
    def store(self) -> MemoryStore:
        """The store memories are formed in."""
        return self._store

    @property
    def config(self) -> FormationConfig:
        """The formation configuration."""
        return self._config

    def form(
        self, messages: Sequence[Message], *, namespace: str, session_id: str | None = None, when: str | None = None
    ) -> FormationReport:
        """Store a finished conversation and the memories formed from it.

        Args:
            messages: The turns, in order (texts, record dicts or stored memories).
            namespace: Where everything is stored.
            session_id: The session of new turns, facts and summary (default: the turns' own).
            when: When the conversation took place, for the prompts (default: the first turn's
                ``created_at`` date, if any).

        Returns:
            What was stored and decided, fact by fact.

        Raises:
            InvalidInputError: A message is invalid; nothing was stored.
        """
        return _loop.run_sync(self.aform(messages, namespace=namespace, session_id=session_id, when=when))

    def form_later(
        self, messages: Sequence[Message], *, namespace: str, session_id: str | None = None, when: str | None = None
    ) -> Future[FormationReport]:
        """Run :meth:`form` in the background and return at once (what chat adapters call).

        Runs are serialised on one worker thread per former, in the order given, so one
        conversation's consolidation sees the facts of the one before. Pass turns that are already
        stored (the :class:`~memory_retrievers.Memory` objects a write returned) so the caller
        never waits for an LLM and a failed run costs no turn. An exception is kept in the
        future, never raised into the caller's thread; :meth:`flush` waits for every run.
        """
        batch = self._prepare(messages, namespace, session_id)  # bad input raises in the caller's thread
        with self._lock:
            if self._worker is None or self._worker_pid != os.getpid():  # a forked child gets its own
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="memory-formation")
                self._worker_pid = os.getpid()
                self._pending = set()
            # The coroutine is made in the worker, so a run that never starts leaves none un-awaited.
            future = self._worker.submit(lambda: _loop.run_sync(self._run(batch, namespace, session_id, when)))
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: Future[FormationReport]) -> None:
        with self._lock:
            self._pending.discard(future)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every :meth:`form_later` run has finished (successfully or not)."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            if not future.cancelled():
                future.exception(timeout=timeout)  # waits; the run's own failure stays in its future

    def close(self) -> None:
        """Finish the queued runs, then stop the worker thread."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None and self._worker_pid == os.getpid():
            worker.shutdown(wait=True)

    def review_lifecycle(self, namespace: str) -> dict[str, int]:
        """Move the namespace's formed memories through their lifecycle tiers, by use.

        Returns how many memories moved to each tier (e.g. ``{"validated": 3, "archived": 1}``).
        Reads the whole namespace: run it on a schedule (daily, say), not per turn.
        """
        return _loop.run_sync(self.areview_lifecycle(namespace))

    async def areview_lifecycle(self, namespace: str) -> dict[str, int]:
        """Async twin of :meth:`review_lifecycle`."""
        now = self._store.clock()
        moved: dict[str, int] = {}
        changes: list[tuple[str, str]] = []
        async for page in aiter_memories(self._store, namespace, filter={"include_archived": True}):
            for memory in page:
                tier = next_tier(memory, now, self._config)
                if tier is not None:
                    changes.append((memory.id, tier))
        for id_, tier in changes:  # after the reads: updates would reorder the pages
            try:
                await self._store.aupdate(id_, namespace=namespace, lifecycle=tier)
            except NotFoundError:  # deleted meanwhile
                continue
            moved[tier] = moved.get(tier, 0) + 1
        return moved

    def review_duplicates(self, namespace: str, *, apply: bool = False) -> list[DuplicateFinding]:
        """Report the namespace's fuzzy-duplicate facts; with ``apply``, archive each into its keeper.

        A dry run by default. See :mod:`memory_retrievers.formation.review`; run it on a schedule.
        """
        return _loop.run_sync(review_duplicates(self._store, namespace, apply=apply))

    async def areview_duplicates(self, namespace: str, *, apply: bool = False) -> list[DuplicateFinding]:
        """Async twin of :meth:`review_duplicates`."""
        return await review_duplicates(self._store, namespace, apply=apply)

    async def aform(
        self, messages: Sequence[Message], *, namespace: str, session_id: str | None = None, when: str | None = None
    ) -> FormationReport:
        """Async twin of :meth:`form`."""
        return await self._run(self._prepare(messages, namespace, session_id), namespace, session_id, when)

    def _prepare(self, messages: Any, namespace: str, session_id: str | None) -> _Batch:
        """Split and check the messages: every record is validated before anything is stored."""
        cfg = self._config
        _check_messages(messages)
        stored: list[Memory] = []
        records: list[dict[str, Any]] = []
        dropped: list[str] = []
        for i, msg in enumerate(messages):
            if isinstance(msg, Memory):
                stored.append(msg)
                continue
            record: dict[str, Any] | None = (
                {"text": msg} if isinstance(msg, str) else dict(msg) if isinstance(msg, Mapping) else None
            )
            if record is None or not isinstance(record.get("text"), str):
                raise InvalidInputError(f"messages[{i}] must be a text, a dict with 'text', or a Memory")
            record.setdefault("kind", MemoryKind.MESSAGE)
            record.setdefault("importance", importance(record["text"]))
            if session_id is not None:
                record.setdefault("session_id", session_id)
            validate_record(record, self._store.config, namespace=namespace)  # bad input raises here
            if cfg.drop_below is not None and record["importance"] < cfg.drop_below:
                dropped.append(record["text"])
            else:
                records.append(record)
        return _Batch(stored, records, dropped)

    async def _run(self, batch: _Batch, namespace: str, session_id: str | None, when: str | None) -> FormationReport:
        cfg = self._config
        stored, records, dropped = batch.stored, batch.records, batch.dropped
        turns: list[Memory] = list(stored)
        if records and cfg.store_turns:
            turns += await self._store.aadd_many(records, namespace=namespace)
        texts = [m.text for m in turns] if turns else [r["text"] for r in records]
        ids = [m.id for m in turns]
        dates = [m.created_at for m in turns if m.created_at is not None]
        created = max(dates) if dates else None
        session = session_id or next((m.session_id for m in turns if m.session_id), None)
        when = when or (_date(min(dates)) if dates else None)
        if self._llm is None or not texts:
            return FormationReport(tuple(turns), tuple(dropped))

        facts = await extract_facts(self._llm, texts, when=when, timeout_s=cfg.llm_timeout_s) if cfg.extract else []
        kept = [f for f in facts if f.confidence.rank <= cfg.min_confidence.rank]
        too_unsure = tuple(f for f in facts if f.confidence.rank > cfg.min_confidence.rank)
        consolidator = Consolidator(self._store, self._llm if cfg.consolidate else None, cfg, namespace)
        base = {"kind": MemoryKind.FACT, "session_id": session, "created_at": created}
        fact_records: list[tuple[Fact, dict[str, Any]]] = []
        for fact in kept:
            links = [ids[i] for i in fact.sources if i < len(ids)]
            fields: dict[str, Any] = {
                **{k: v for k, v in base.items() if v is not None},
                "text": fact.text,
                "links": links,
                "importance": importance(fact.text),
                "entities": [fact.about] if fact.about else [],
                "metadata": {"confidence": fact.confidence.value, "formed_by": "extraction"},
            }
            if cfg.lifecycle:
                fields["lifecycle"] = "candidate"
            if fact.confidence is Confidence.SPECULATIVE and cfg.speculative_ttl_days is not None:
                fields["expires_at"] = self._store.clock() + timedelta(days=cfg.speculative_ttl_days)
            fact_records.append((fact, fields))
        outcomes = await consolidator.apply(fact_records)
        summary = None
        if cfg.summarize:
            text = await summarize(self._llm, texts, when=when, timeout_s=cfg.llm_timeout_s)
            if text:
                extra: dict[str, Any] = {"kind": MemoryKind.INSIGHT, "metadata": {"summary_of": session or ""}}
                extra.update({k: v for k, v in base.items() if k != "kind" and v is not None})
                summary = await self._store.aadd(text, namespace=namespace, **extra)
        return FormationReport(tuple(turns), tuple(dropped), tuple(outcomes), too_unsure, summary)


@dataclass(frozen=True, slots=True)
class _Batch:
    """Messages split into turns already stored, records to store, and texts dropped for importance."""

    stored: list[Memory]
    records: list[dict[str, Any]]
    dropped: list[str]


def _check_messages(messages: Any) -> None:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of texts, record dicts or memories")


def _date(value: datetime) -> str:
    return f"{value.day} {value:%B %Y}"
