"""Formation backfill: run memory formation over the conversations a store already holds, namespaces in parallel on Ray.

One Ray task per namespace opens the store itself (a process of its own, its own LanceDB handle and
write queue; for a :class:`~memory_retrievers.ShardedMemoryStore`, the namespace's shard) and runs
:class:`~memory_retrievers.formation.MemoryFormer` over that namespace's stored turns, session after
session in the order they were stored, so each session's consolidation sees the facts of the
sessions before it, as when they were formed live. Namespaces
never share a memory, so tasks on different namespaces only meet in LanceDB's commits, which are
conditional: concurrent writers retry, nothing is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_retrievers.bulk.batching import check_factory, check_positive, sessions_in_order
from memory_retrievers.bulk.engine import EmbedderFactory, factory_for, require_ray
from memory_retrievers.bulk.tables import open_table, table_openers
from memory_retrievers.errors import InvalidInputError, MemoryRetrieversError
from memory_retrievers.validation import check_namespace

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["BackfillReport", "NamespaceBackfill", "backfill_formation"]

#: Turns read per page while collecting a namespace's conversation.
_PAGE = 1000

#: Every stored turn, whatever its state: none left means the conversation was forgotten.
_EVERY_TURN = {"kinds": ["message"], "include_superseded": True, "include_expired": True, "include_archived": True}

LLMFactory = Callable[[], Any]
"""Builds the user's LLM in a Ray worker (anything ``MemoryFormer(llm=...)`` takes)."""


@dataclass(frozen=True, slots=True)
class NamespaceBackfill:
    """Formation over one namespace.

    Attributes:
        namespace: The namespace.
        sessions: Sessions formed.
        turns: Stored turns read.
        facts: Facts the LLM extracted and the store kept (whatever their decision).
        added: Facts stored as new memories.
        summaries: Session summaries stored.
        rejected: Facts or summaries the store refused (see each run's report).
        forgotten: The namespace was forgotten while it was formed: what its task had stored was
            deleted again and the counts are zero (its conversation is gone, so are its facts).
    """

    namespace: str
    sessions: int
    turns: int
    facts: int
    added: int
    summaries: int
    rejected: int
    forgotten: bool = False


@dataclass(frozen=True, slots=True)
class BackfillReport:
    """What :func:`backfill_formation` did.

    Attributes:
        namespaces: One entry per namespace, in the order asked.
        seconds: Wall time of the job.
    """

    namespaces: tuple[NamespaceBackfill, ...]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "namespaces": [{k: getattr(n, k) for k in NamespaceBackfill.__dataclass_fields__} for n in self.namespaces],
            "seconds": round(self.seconds, 3),
        }


def backfill_formation(
    store: MemoryStore,
    llm_factory: LLMFactory,
    *,
    namespaces: Sequence[str] | None = None,
    formation_config: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
    embedder_factory: EmbedderFactory | None = None,
    workers: int | None = None,
) -> BackfillReport:
    """Form memories (facts, session summaries) from the conversations stored in ``store``, on Ray.

    Every stored ``message`` memory of a namespace is a turn; turns are grouped by ``session_id``
    and each session is passed to ``MemoryFormer.form`` as stored memories (they are not written
    again). Forming a session twice stores no fact twice when the LLM repeats itself (duplicate
    detection and consolidation see the first run's facts).

    Args:
        store: The store holding the conversations; the formed memories go into it too.
        llm_factory: Builds the LLM in each Ray task (a function with no arguments, e.g.
            ``functools.partial(MyLLM, model="...")``): LLM clients hold connections that do not pickle.
        namespaces: Only these (default: every namespace of the store).
        formation_config: :class:`~memory_retrievers.formation.FormationConfig` fields.
        storage_options: Those the store was opened with (object storage credentials).
        embedder_factory: Builds the store's embedder in a task (default: rebuilt from it).
        workers: Namespaces formed at once (default: every CPU of the Ray cluster).

    Returns:
        Per-namespace counts and the wall time.

    Raises:
        InvalidInputError: A bad argument.
        ConfigError: Ray is not installed, or the embedder cannot be sent to workers.
    """
    started = time.perf_counter()
    if not callable(llm_factory):
        raise InvalidInputError(f"llm_factory must be a function that builds the LLM, got {llm_factory!r}")
    check_factory(embedder_factory, "embedder_factory")
    at_once = check_positive(workers, "workers") if workers is not None else None
    _check_formation_config(formation_config)
    chosen = _chosen(store, namespaces)
    openers = table_openers(store, storage_options)
    factory = embedder_factory or factory_for(store.embedder)
    ray = require_ray()
    store.flush()  # queued writes of this process are committed before the tasks read the turns
    task = ray.remote(num_cpus=1)(_form_namespace)
    # A sharded store's namespace is formed on its own shard's table, opened by the task.
    calls = [(openers[_table_of(store, ns)], factory, llm_factory, dict(formation_config or {}), ns) for ns in chosen]
    results = _run_at_most(ray, task, calls, at_once)
    order = {ns: i for i, ns in enumerate(chosen)}
    return BackfillReport(tuple(sorted(results, key=lambda r: order[r.namespace])), time.perf_counter() - started)


def _chosen(store: MemoryStore, namespaces: Sequence[str] | None) -> list[str]:
    """The namespaces to form, each checked as the store checks one (a bad one must not reach a task)."""
    if namespaces is None:
        return list(store.namespaces())
    if isinstance(namespaces, str):
        raise InvalidInputError("namespaces must be a list of str, e.g. ['alice']; got a single str")
    chosen = list(namespaces)
    if not chosen:
        raise InvalidInputError("namespaces is empty; pass None for every namespace")
    return [check_namespace(ns, max_chars=store.config.max_key_chars) for ns in chosen]


def _check_formation_config(formation_config: Mapping[str, Any] | None) -> None:
    """Build the formation config once here, so a bad field fails before Ray starts, not in every task."""
    from memory_retrievers.formation import FormationConfig

    if formation_config is None:
        return
    if not isinstance(formation_config, Mapping):
        raise InvalidInputError(f"formation_config must be a dict of FormationConfig fields, got {formation_config!r}")
    try:
        FormationConfig(**formation_config)
    except MemoryRetrieversError as exc:
        raise InvalidInputError(f"formation_config: {exc}") from None


def _table_of(store: MemoryStore, namespace: str) -> int:
    """Index into ``table_openers(store)`` of the table holding ``namespace``."""
    shard_index = getattr(store, "shard_index", None)  # a ShardedMemoryStore routes by namespace
    return 0 if shard_index is None else int(shard_index(namespace))


def _run_at_most(ray: Any, task: Any, calls: list[tuple[Any, ...]], at_once: int | None) -> list[NamespaceBackfill]:
    """Every call of ``task``, at most ``at_once`` in flight (all at once when ``None``: Ray queues them)."""
    results: list[NamespaceBackfill] = []
    waiting: list[Any] = []
    for args in calls:
        if at_once is not None and len(waiting) >= at_once:
            done, waiting = ray.wait(waiting, num_returns=1)
            results.extend(ray.get(done))
        waiting.append(task.remote(*args))
    results.extend(ray.get(waiting))
    return results


def _form_namespace(
    opener: dict[str, Any],
    factory: EmbedderFactory,
    llm_factory: LLMFactory,
    formation_config: dict[str, Any],
    namespace: str,
) -> NamespaceBackfill:
    """One Ray task: open the store, read the namespace's turns, form session after session."""
    from memory_retrievers.formation import Decision, MemoryFormer

    with open_table(opener, factory()) as store:
        turns = _turns(store, namespace)
        former = MemoryFormer(store, llm=llm_factory(), config=formation_config)
        facts = added = summaries = rejected = 0
        written: list[str] = []
        sessions = sessions_in_order(turns)
        for session, session_turns in sessions:
            report = former.form(session_turns, namespace=namespace, session_id=session)
            written += [o.memory.id for o in report.facts if o.decision is not Decision.SKIP]
            written += [report.summary.id] if report.summary is not None else []
            if not store.count(namespace, filter=_EVERY_TURN):
                # The conversation was forgotten while this task formed it: what the task stored
                # (perhaps after the forget committed) is deleted, and nothing more is formed.
                store.delete(written, namespace=namespace, missing_ok=True)
                former.close()
                return NamespaceBackfill(namespace, 0, len(turns), 0, 0, 0, 0, forgotten=True)
            facts += len(report.facts)
            added += report.count(Decision.ADD)
            summaries += report.summary is not None
            rejected += len(report.rejected_facts) + (report.rejected_summary is not None)
        former.close()
    return NamespaceBackfill(namespace, len(sessions), len(turns), facts, added, summaries, rejected)


def _turns(store: MemoryStore, namespace: str) -> list[Any]:
    """Every stored ``message`` memory of ``namespace``, oldest first (superseded ones too)."""
    turns: list[Any] = []
    while True:
        page = store.list(
            namespace,
            filter={"kinds": ["message"], "include_superseded": True},
            limit=_PAGE,
            offset=len(turns),
            newest_first=False,
        )
        turns.extend(page)
        if len(page) < _PAGE:
            return turns
