"""Memory formation: a finished conversation in, turns + facts (+ a summary) stored out.

The steps, each switchable in :class:`FormationConfig`: store the raw turns with a zero-LLM
importance; ask the LLM for facts (linked to the turns they came from); compare each fact with
the stored memories it resembles and apply the LLM's ADD/MERGE/UPDATE/INVALIDATE/SKIP; mark
contradictions without an LLM; optionally store a session summary. The raw turns are stored before
any LLM is asked, so a failing, slow or garbled LLM never costs a turn.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.config import validated
from memory_retrievers.errors import InvalidInputError, NotFoundError, QueueFullError
from memory_retrievers.formation.config import FormationConfig
from memory_retrievers.formation.consolidate import Consolidator
from memory_retrievers.formation.extract import extract_facts, summarize
from memory_retrievers.formation.importance import importance
from memory_retrievers.formation.lifecycle import next_tier
from memory_retrievers.formation.report import FactOutcome, FormationReport, RejectedFact
from memory_retrievers.formation.review import DuplicateFinding, review_duplicates
from memory_retrievers.formation.types import Confidence, Fact
from memory_retrievers.llm import LLM, as_llm
from memory_retrievers.models import AddedMemory, Memory, MemoryKind
from memory_retrievers.store.barrier import Ticket, holding
from memory_retrievers.store.paging import aiter_memories
from memory_retrievers.store.pending import PendingWrite
from memory_retrievers.validation import check_text, validate_record

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["MemoryFormer", "Message"]

logger = logging.getLogger("memory_retrievers")

#: A turn to form memories from: a text, a record dict (``text`` plus writable fields), a memory
#: already stored, or one queued by ``add_later`` (chat adapters store turns as they come).
Message = str | Mapping[str, Any] | Memory | PendingWrite

#: The uuid namespace of turn ids made by formation (see ``_turn_ids``).
_TURN_IDS = uuid.UUID("6f1f3a52-7d0e-4d8e-9a39-2f0c7c1b5e11")


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

        Forget is a barrier: once ``store.forget(namespace)`` is applied, a run handed over before
        it stores nothing more (not even its turns, if it had not stored them yet) and raises
        :class:`~memory_retrievers.errors.NamespaceForgottenError`; no LLM is asked about it after.

        One unusable item of an LLM answer (a fact or ``about`` the store refuses, a summary over
        ``StoreConfig.max_text_chars``) is left out and reported in the report
        (``rejected_facts``, ``rejected_summary``, ``notes``); the others are stored. At most
        ``FormationConfig.max_facts`` (and ``max_facts_per_turn`` per turn) facts are stored.

        New turns get ids made from the namespace, the session and the whole conversation, so
        forming the same conversation again (a retry after a failure) rewrites its turns in
        place instead of storing them twice.

        Raises:
            InvalidInputError: A message is invalid; nothing was stored.
            NamespaceForgottenError: The namespace was forgotten while the run was in flight;
                nothing more was stored after the forget.
            MemoryRetrieversError: A later write failed (e.g. ``StorageError``); the turns may be
                stored, and forming the same messages again does not store them twice.
        """
        return _loop.run_sync(self.aform(messages, namespace=namespace, session_id=session_id, when=when))

    def form_later(
        self, messages: Sequence[Message], *, namespace: str, session_id: str | None = None, when: str | None = None
    ) -> Future[FormationReport]:
        """Run :meth:`form` in the background and return at once (what chat adapters call).

        Runs are serialised on one worker thread per former, in the order given, so one
        conversation's consolidation sees the facts of the one before. Pass turns that are already
        stored (the :class:`~memory_retrievers.Memory` objects a write returned) or queued (the
        :class:`~memory_retrievers.PendingWrite` objects of ``add_later``/``add_many_later``: the run
        starts once they are committed) so the caller never waits for an LLM or a commit, and a
        failed run costs no turn. An exception is kept in the
        future, never raised into the caller's thread; :meth:`flush` waits for every run. A
        ``forget`` of the namespace called after this returns wins: the run stores nothing after it.

        Bounded: with ``FormationConfig.max_queued_runs`` runs queued or running, a new run is
        not queued (a caller faster than the LLM would otherwise grow the queue without end):
        its future fails at once with :class:`~memory_retrievers.errors.QueueFullError` and a
        warning is logged. Nothing of it is stored; turns already stored stay stored.
        """
        batch = self._prepare(messages, namespace, session_id)  # bad input raises in the caller's thread
        ticket = self._store._forget_ticket(namespace)  # taken now: a forget from here on wins
        with self._lock:
            if self._worker is None or self._worker_pid != os.getpid():  # a forked child gets its own
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="memory-formation")
                self._worker_pid = os.getpid()
                self._pending = set()
            if len(self._pending) >= self._config.max_queued_runs:
                return _shed(self._config.max_queued_runs, namespace)
            # The coroutine is made in the worker, so a run that never starts leaves none un-awaited.
            future = self._worker.submit(lambda: _loop.run_sync(self._run(batch, namespace, session_id, when, ticket)))
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
        batch = self._prepare(messages, namespace, session_id)
        return await self._run(batch, namespace, session_id, when, self._store._forget_ticket(namespace))

    def _prepare(self, messages: Any, namespace: str, session_id: str | None) -> _Batch:
        """Split and check the messages: every record is validated before anything is stored."""
        cfg = self._config
        _check_messages(messages)
        stored: list[Memory | PendingWrite] = []
        records: list[dict[str, Any]] = []
        dropped: list[str] = []
        for i, msg in enumerate(messages):
            if isinstance(msg, Memory | PendingWrite):
                stored.append(msg)
                continue
            record: dict[str, Any] | None = (
                {"text": msg} if isinstance(msg, str) else dict(msg) if isinstance(msg, Mapping) else None
            )
            if record is None or not isinstance(record.get("text"), str):
                raise InvalidInputError(f"messages[{i}] must be a text, a dict with 'text', a Memory or a PendingWrite")
            record.setdefault("kind", MemoryKind.MESSAGE)
            record.setdefault("importance", importance(record["text"]))
            if session_id is not None:
                record.setdefault("session_id", session_id)
            validate_record(record, self._store.config, namespace=namespace)  # bad input raises here
            if cfg.drop_below is not None and record["importance"] < cfg.drop_below:
                dropped.append(record["text"])
            else:
                records.append(record)
        _name_turns(records, messages, namespace)
        return _Batch(stored, records, dropped)

    async def _run(
        self, batch: _Batch, namespace: str, session_id: str | None, when: str | None, ticket: Ticket
    ) -> FormationReport:
        # Every write of the run carries the ticket: the store's queue refuses it after a later forget.
        with holding(ticket):
            return await self._formed(batch, namespace, session_id, when, ticket)

    async def _formed(
        self, batch: _Batch, namespace: str, session_id: str | None, when: str | None, ticket: Ticket
    ) -> FormationReport:
        cfg = self._config
        # Turns queued by add_later are formed once committed (a failed write fails the run).
        turns: list[Memory] = [await m if isinstance(m, PendingWrite) else m for m in batch.stored]
        if batch.records and cfg.store_turns:
            turns += await self._store.aadd_many(batch.records, namespace=namespace)
        texts = [m.text for m in turns] if turns else [r["text"] for r in batch.records]
        dates = [m.created_at for m in turns if m.created_at is not None]
        session = session_id or next((m.session_id for m in turns if m.session_id), None)
        when = when or (_date(min(dates)) if dates else None)
        if self._llm is None or not texts:
            return FormationReport(tuple(turns), tuple(batch.dropped))

        ticket.check()  # a forgotten user's turns are not sent to an LLM any more
        facts = await extract_facts(self._llm, texts, when=when, timeout_s=cfg.llm_timeout_s) if cfg.extract else []
        kept = [f for f in facts if f.confidence.rank <= cfg.min_confidence.rank]
        too_unsure = tuple(f for f in facts if f.confidence.rank > cfg.min_confidence.rank)
        base = {"kind": MemoryKind.FACT, "session_id": session, "created_at": max(dates) if dates else None}
        base = {k: v for k, v in base.items() if v is not None}
        fact_records, rejected, notes = self._fact_records(kept, [m.id for m in turns], base, namespace, len(texts))
        ticket.check()
        llm = self._llm if cfg.consolidate else None
        consolidator = Consolidator(self._store, llm, cfg, namespace, check=ticket.check)
        outcomes: list[FactOutcome] = await consolidator.apply(fact_records)
        summary, rejected_summary = None, None
        if cfg.summarize:
            ticket.check()
            summary, rejected_summary = await self._summary(self._llm, texts, when, base, session, namespace)
        return FormationReport(
            tuple(turns),
            tuple(batch.dropped),
            tuple(outcomes),
            too_unsure,
            summary,
            rejected_facts=tuple(rejected),
            rejected_summary=rejected_summary,
            notes=tuple(notes),
        )

    def _fact_records(
        self, facts: Sequence[Fact], ids: Sequence[str], base: Mapping[str, Any], namespace: str, n_turns: int
    ) -> tuple[list[tuple[Fact, dict[str, Any]]], list[RejectedFact], list[str]]:
        """The facts' records to store, each checked alone: a bad item is left out, never the rest.

        Returns the storable records (at most the configured cap), the facts left out and why,
        and notes on repairs (an unstorable ``about`` dropped from a fact that is kept).
        """
        cfg = self._config
        cap = min(cfg.max_facts, cfg.max_facts_per_turn * max(n_turns, 1))
        records: list[tuple[Fact, dict[str, Any]]] = []
        rejected: list[RejectedFact] = []
        notes: list[str] = []
        for fact in facts:
            fields = self._fact_fields(fact, ids, base)
            problem = self._refusal(fields, namespace)
            if problem is not None and fields["entities"]:
                without = {**fields, "entities": []}
                if self._refusal(without, namespace) is None:
                    notes.append(f"about of fact {fact.text[:40]!r} left out: {problem}")
                    fields, problem = without, None
            if problem is not None:
                rejected.append(RejectedFact(fact, f"not storable: {problem}"))
            elif len(records) >= cap:
                reason = f"over the cap of {cap} facts per conversation (FormationConfig.max_facts, max_facts_per_turn)"
                rejected.append(RejectedFact(fact, reason))
            else:
                records.append((fact, fields))
        return records, rejected, notes

    def _fact_fields(self, fact: Fact, ids: Sequence[str], base: Mapping[str, Any]) -> dict[str, Any]:
        cfg = self._config
        fields: dict[str, Any] = {
            **base,
            "text": fact.text,
            "links": [ids[i] for i in fact.sources if i < len(ids)],
            "importance": importance(fact.text),
            "entities": [fact.about] if fact.about else [],
            "metadata": {"confidence": fact.confidence.value, "formed_by": "extraction"},
        }
        if cfg.lifecycle:
            fields["lifecycle"] = "candidate"
        if fact.confidence is Confidence.SPECULATIVE and cfg.speculative_ttl_days is not None:
            fields["expires_at"] = self._store.clock() + timedelta(days=cfg.speculative_ttl_days)
        return fields

    def _refusal(self, fields: Mapping[str, Any], namespace: str) -> str | None:
        """Why the store would refuse ``fields`` (an LLM's text or entity), or ``None``."""
        try:
            validate_record(fields, self._store.config, namespace=namespace)
        except InvalidInputError as exc:
            return str(exc)
        return None

    async def _summary(
        self,
        llm: LLM,
        texts: Sequence[str],
        when: str | None,
        base: Mapping[str, Any],
        session: str | None,
        namespace: str,
    ) -> tuple[AddedMemory | None, str | None]:
        """The stored session summary, or why the LLM's summary was not stored."""
        text = await summarize(llm, texts, when=when, timeout_s=self._config.llm_timeout_s)
        if not text:
            return None, None
        try:
            check_text(text, field="summary", max_chars=self._store.config.max_text_chars)
        except InvalidInputError as exc:
            return None, f"summary not stored: {exc}"
        extra: dict[str, Any] = {"kind": MemoryKind.INSIGHT, "metadata": {"summary_of": session or ""}}
        extra.update({k: v for k, v in base.items() if k != "kind"})
        return await self._store.aadd(text, namespace=namespace, **extra), None


@dataclass(frozen=True, slots=True)
class _Batch:
    """Messages split into turns already stored, records to store, and texts dropped for importance."""

    stored: list[Memory | PendingWrite]
    records: list[dict[str, Any]]
    dropped: list[str]


def _name_turns(records: Sequence[dict[str, Any]], messages: Sequence[Message], namespace: str) -> None:
    """Give each new turn without an id one made from its conversation and place in it.

    The id depends on the namespace, the turn's session, every message of the conversation (in
    order) and the turn's position, so forming the same conversation again (a retry after a run
    failed past its turns) upserts the turns already stored instead of storing them twice, while
    another conversation never shares an id with it.
    """
    digest = hashlib.sha256()
    for msg in messages:
        if isinstance(msg, Memory | PendingWrite):
            text = str(msg.id)
        else:
            text = msg if isinstance(msg, str) else str(msg.get("text"))
        digest.update(text.encode("utf-8", "surrogatepass") + b"\x1f")
    conversation = digest.hexdigest()
    for position, record in enumerate(records):
        if record.get("id") is None:
            parts = (record.get("namespace", namespace), record.get("session_id") or "", conversation, str(position))
            record["id"] = str(uuid.uuid5(_TURN_IDS, "\x1f".join(parts)))


def _shed(limit: int, namespace: str) -> Future[FormationReport]:
    """The already failed future of a run the full queue does not take."""
    error = QueueFullError(
        f"memory formation queue is full ({limit} runs queued or running, FormationConfig.max_queued_runs): "
        f"this conversation of namespace {namespace!r} is not formed; its stored turns stay. Call "
        "former.flush() to wait for room, form() to wait for the run, or raise max_queued_runs"
    )
    logger.warning("memory-retrievers: %s", error)
    future: Future[FormationReport] = Future()
    future.set_exception(error)
    return future


def _check_messages(messages: Any) -> None:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of texts, record dicts or memories")


def _date(value: datetime) -> str:
    return f"{value.day} {value:%B %Y}"
