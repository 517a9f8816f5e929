"""Frozen, validated configuration of the memory store."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memory_retrievers.errors import ConfigError, MemoryRetrieversError
from memory_retrievers.models import DedupPolicy, MemoryKind

__all__ = ["CheckedModel", "StoreConfig", "reject_bools", "validated"]


class CheckedModel(BaseModel):
    """Base of the library's frozen, validated models: their errors are the library's own.

    Building one with a bad value raises the class's ``error_type`` (a
    :class:`~memory_retrievers.ConfigError` unless it says otherwise) naming the field and the fix,
    never pydantic's ``ValidationError``; ``True``/``False`` are refused where a number is meant.
    """

    error_type: ClassVar[type[MemoryRetrieversError]] = ConfigError
    error_key: ClassVar[str] = "key"

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            error = self.error_type(_explain(exc, type(self), type(self).__name__, self.error_key))
            # kept so that a model holding this one as a field names the path (``fusion.rrf_k``)
            error.validation = (exc, type(self))  # type: ignore[attr-defined]
            raise error from None

    @model_validator(mode="before")
    @classmethod
    def _refuse_bools(cls, data: Any) -> Any:
        return reject_bools(cls, data)


class StoreConfig(CheckedModel):
    """How a :class:`~memory_retrievers.MemoryStore` writes, deduplicates and maintains its table.

    Every field has a documented default; unknown keys are rejected with :class:`ConfigError`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)

    max_text_chars: int = Field(default=1_000_000, ge=1, le=10_000_000)
    """Longest text a memory may hold, in characters: a pathological size (a million characters is
    a long book), refused with :class:`~memory_retrievers.InvalidInputError` naming this limit, never
    truncated. Anything shorter is stored whole, through every entry point (``add``, ``add_many``,
    ``add_later``, the command line, MCP, both adapters' chat turns): a real assistant reply of
    77,000 characters is one memory, its exact text returned. What is *searched* of a long text is
    its opening (:data:`memory_retrievers.storage.schema.SEARCHED_CHARS`, 32,000 characters: the
    embedding and the text-with-context index; the default model reads only its first 256 word
    pieces anyway), and recall's block shows the passage the query asks about
    (``RecallConfig.excerpt_chars``)."""

    max_context_chars: int = Field(default=16_000, ge=0, le=10_000_000)
    """Longest ``context`` (text searched with a memory but not returned as it)."""

    max_key_chars: int = Field(default=512, ge=1, le=65_536)
    """Longest namespace, id, session, project, topic, tag, entity or link value."""

    dedup_policy: DedupPolicy = DedupPolicy.SKIP
    """What a write does on finding a duplicate in the same namespace."""

    exact_dedup: bool = True
    """Detect exact duplicates: same text after Unicode/whitespace/case normalisation."""

    near_duplicate_threshold: float | None = Field(default=0.95, gt=0.0, le=1.0)
    """Cosine similarity at or above which a memory counts as a near duplicate; ``None`` = off."""

    dedup_exempt_kinds: frozenset[MemoryKind] = frozenset({MemoryKind.MESSAGE})
    """Kinds never deduplicated: a chat log keeps every "ok" and "thanks" a speaker says."""

    context_window: int = Field(default=2, ge=0, le=10)
    """For ``message`` memories with a ``session_id`` and no caller-given ``context``: how many
    neighbouring turns before and after (same session) fill the ``context`` field. 0 = off.
    Context makes short turns findable ("yes, the blue one") by what surrounds them. Measured on
    LoCoMo (BM25 over turn + context, recall@10): no context 0.603, 1 turn 0.681, 2 turns 0.691."""

    embed_batch_size: int = Field(default=64, ge=1, le=4096)
    """Texts per embedding call."""

    write_batch_size: int = Field(default=512, ge=1, le=100_000)
    """Default records per LanceDB commit in ``add_many``."""

    optimize_after_rows: int = Field(default=5_000, ge=1)
    """Run ``optimize()`` (fold new rows into indexes, compact, prune) once this many rows were
    written since the last run. Checked after writes, never run per write."""

    optimize_after_commits: int = Field(default=64, ge=1)
    """...or once this many commits (each makes a small fragment that slows queries) happened."""

    cluster_min_run_rows: int = Field(default=1_000, ge=1)
    """``admin.cluster()`` rewrites rows so each namespace's rows are contiguous, in sorted runs:
    runs shorter than this (rows written since the last pass among them) are rewritten with the
    newer rows as one new run. See :mod:`memory_retrievers.storage.cluster`."""

    cluster_max_runs: int = Field(default=8, ge=1)
    """...and once more runs than this would be left, every row is rewritten as one run (a cold
    read of a namespace costs a few requests per run holding it)."""

    cluster_chunk_rows: int = Field(default=100_000, ge=1)
    """A clustering pass reads, holds and commits at most this many rows at a time (at least
    ``cluster_min_run_rows``), so its memory is bounded whatever the table's size; each commit
    scans the table's keys once, so fewer, larger chunks are faster on object storage. A table no
    bigger than this is read by one scan when a pass moves most of it (the fewest requests)."""

    cluster_on_optimize: bool = False
    """Run a clustering pass at the start of every ``optimize()`` (the automatic one included).
    Off by default: what it saves is object-store requests of cold reads (a 1,000-memory tenant in
    a 100k-row table on S3: 1,048-1,140 requests before, 24-81 after; docs/how-to/object-storage.md),
    while each pass rewrites the rows it moves, and they leave every index until the same
    optimize folds them back in (with a vector index, that re-indexes the moved rows). Turn it on
    for tables on object storage serving many namespaces."""

    ann_index_min_rows: int = Field(default=100_000, ge=256)
    """Build an approximate vector index once the table holds this many rows. Below it a flat,
    exact scan with the namespace prefilter is faster than an index (measured: 11 ms at 10k rows).
    The index is also built, in the background, as soon as a recall finds a namespace larger than
    ``recall_view_max_rows`` (its vector search then runs in LanceDB: 62 ms flat vs 26 ms indexed
    for a 20,000-memory namespace, hash vectors)."""

    index_in_child_process: bool = True
    """Build the vector index in a child Python process rather than in the store's own. LanceDB
    runs CPU-bound work on one pool of ``max(1, cores - 2)`` threads, first come first served: on a
    small machine a write made while the store built its vector index in-process queued behind the
    whole build (measured on 2 cores, 20k rows: one ``add`` took 94 s instead of ~50 ms, and a 1M-row
    load failed on ``storage_timeout``). A caller's connection or a LanceDB Cloud table is always
    indexed in-process. Off: build in-process (no child process is started)."""

    version_retention: timedelta | None = None
    """Table versions older than this are pruned by every ``optimize()``, the automatic one too.

    ``None`` (default): twice ``storage_timeout``, 4 minutes (an hour when ``storage_timeout`` is
    ``None``); see :attr:`kept_versions_age`. No read outlives ``storage_timeout``, so a read in
    flight (another process's included) keeps the version it reads; past that, old versions only
    take disk: each is about 30 KB of manifest and transaction files, plus the files compaction
    replaced. Under the one-hour default of before, 60 chat turns left 275 versions, 9.5 MB on disk
    for 0.23 MB of memories. Raise it for time travel further back, or for a bulk job reading a
    pinned version longer than this."""

    access_flush_size: int = Field(default=256, ge=1)
    """Memories with recorded accesses held in memory before they are written: by an optimize, in
    the background, which folds the rows it rewrites straight back into the indexes."""

    recall_view_max_rows: int = Field(default=50_000, ge=0)
    """Recall keeps an in-memory view (rows and vectors) of namespaces up to this size, so the
    vector, entity, recency and link channels need no LanceDB query; 0 disables it. A view holds
    about 2.7 KB per memory with the default model, and building one (on a namespace's first
    recall in a process) peaks at about 6.5 KB per memory while LanceDB's result is converted.
    Measured with ``benchmarks/workloads.py``: at 20,000 memories recall took 0.74-0.88x LanceDB's
    hybrid query with a view and 1.6x without one; at 100,000 the view no longer pays (static
    recall 54 vs 70 ms, right after a write 76 vs 70 ms) for its 270 MB."""

    recall_view_total_rows: int = Field(default=100_000, ge=0)
    """The ceiling on rows held over all namespace views of a store: past it, the least recently
    used views are dropped (and rebuilt when recalled again). At least ``recall_view_max_rows``.
    The default, 100,000 rows, is about 270 MB with the default model."""

    index_cache_bytes: int | None = Field(default=None, ge=0)
    """Ceiling of LanceDB's index cache for this store (opened indexes: vector, full-text,
    scalar). ``None`` keeps LanceDB's own, 6 GiB. Indexes that do not fit are read from disk again
    when a search needs them."""

    metadata_cache_bytes: int | None = Field(default=None, ge=0)
    """Ceiling of LanceDB's metadata cache for this store (file metadata, schemas). ``None``
    keeps LanceDB's own, 1 GiB."""

    read_consistency_interval: timedelta | None = timedelta(0)
    """How often a read checks for other processes' commits. ``timedelta(0)`` (default) = on every
    read, so app workers sharing a store always see each other's writes (a chat turn written by one
    worker is in the next request's history, whichever worker serves it); it costs one version
    check per read (measured in benchmarks/results/read_consistency.json). A longer interval checks
    at most that often (reads may be that stale); ``None`` = never: only for a store that one process
    alone writes, as a handle then never sees another process's later writes. Writes always start
    from the latest version, whatever this says."""

    write_linger: timedelta = timedelta(0)
    """How long a queued write waits for others to join its commit (micro-batching). Writes of
    several threads, tasks or :meth:`~memory_retrievers.MemoryStore.add_later` calls that queue
    within this window share one commit (at most ``write_batch_size`` records; a full group commits
    at once). ``timedelta(0)`` (default) commits at once: writes that queue while a commit runs
    still share the next one. On object storage, where each commit is several requests, e.g.
    ``timedelta(milliseconds=50)`` turns a burst of small writes into far fewer commits, at the
    price of up to that much extra latency per write. At most 10 seconds."""

    max_queued_records: int = Field(default=4_096, ge=1, le=10_000_000)
    """Most records :meth:`~memory_retrievers.MemoryStore.add_later` keeps queued (not yet being
    committed). Past it, ``add_later`` applies backpressure: it waits for the queue to drain below
    the bound, at most ``queue_full_timeout``, then raises :class:`~memory_retrievers.QueueFullError`
    with nothing queued. It bounds the memory a burst holds and how long ``flush``/``close``/
    ``os.fork()`` take to commit what is queued (4,096 short turns embed in about 8 s with the
    default model on 2 cores)."""

    storage_timeout: timedelta | None = timedelta(seconds=120)
    """Longest wait for one storage operation: opening the table, one read, one commit. Past it the
    operation raises :class:`~memory_retrievers.StorageError` naming this deadline, instead of
    waiting out the object-store client's retries (a server that accepts connections but never
    answers blocked opening a store for over 190 s with 1 s request timeouts, about 12 minutes with
    LanceDB's defaults). A write whose commit timed out is checked for having landed before it is
    reported as failed. ``None`` waits as long as LanceDB does. Maintenance's reads and small
    commits (listing indexes and versions, dropping an index) take this deadline too; its long steps
    take ``maintenance_timeout``."""

    maintenance_timeout: timedelta | None = timedelta(hours=1)
    """Longest wait for one long step of maintenance: an index build, a compaction or pruning of
    ``optimize``, a rewrite of ``purge``. These legitimately take minutes on large tables (an ANN
    index over 100,000 rows takes about 100 s on 2 cores), so they do not take ``storage_timeout``;
    past this deadline the step raises :class:`~memory_retrievers.StorageError` naming it (the
    automatic maintenance after writes logs it, and the next run starts over: the data is intact),
    instead of holding ``optimize``, ``purge`` and ``close`` for good when the storage stops
    answering. ``None`` waits as long as LanceDB does."""

    queue_full_timeout: timedelta = timedelta(seconds=30)
    """How long ``add_later`` waits for room in a full queue before it raises
    :class:`~memory_retrievers.QueueFullError` (``timedelta(0)``: raise at once). Called from a
    running event loop (async code, or a plug-in on the store's loop) it never waits, which would
    block that loop: it raises when full; async code wanting backpressure awaits ``aadd``."""

    @property
    def kept_versions_age(self) -> timedelta:
        """How old a table version gets before ``optimize()`` prunes it (``version_retention``, or its default)."""
        if self.version_retention is not None:
            return self.version_retention
        return 2 * self.storage_timeout if self.storage_timeout is not None else timedelta(hours=1)

    @model_validator(mode="after")
    def _view_ceiling(self) -> StoreConfig:
        if self.recall_view_total_rows < self.recall_view_max_rows:
            raise ValueError(
                f"recall_view_total_rows ({self.recall_view_total_rows}) must be at least recall_view_max_rows "
                f"({self.recall_view_max_rows}): raise it, or lower recall_view_max_rows"
            )
        return self

    @field_validator("write_linger")
    @classmethod
    def _linger_bounds(cls, value: timedelta) -> timedelta:
        if value < timedelta(0) or value > timedelta(seconds=10):
            raise ValueError("must be between timedelta(0) (commit at once) and timedelta(seconds=10)")
        return value

    @field_validator("storage_timeout", "maintenance_timeout")
    @classmethod
    def _deadline_positive(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value <= timedelta(0):
            raise ValueError(
                "must be a positive timedelta (e.g. timedelta(seconds=30)), or None to wait as LanceDB does"
            )
        return value

    @field_validator("queue_full_timeout")
    @classmethod
    def _wait_bounds(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must be >= timedelta(0) (0 raises QueueFullError at once when the queue is full)")
        return value

    @field_validator("read_consistency_interval")
    @classmethod
    def _not_negative(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(0):
            raise ValueError("must be >= 0 (timedelta(0) checks on every read), or None")
        return value

    @field_validator("dedup_exempt_kinds", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> Any:
        if isinstance(value, (str, MemoryKind)):
            return frozenset({value})
        return value


def _admits_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    return any(_admits_bool(arg) for arg in get_args(annotation))


def reject_bools(model: type[BaseModel], data: Any) -> Any:
    """Refuse ``True``/``False`` for a number field (pydantic would read ``True`` as 1).

    Used as a ``model_validator(mode="before")`` by the library's config models.
    """
    if isinstance(data, Mapping):
        for name, value in data.items():
            field = model.model_fields.get(name) if isinstance(name, str) else None
            if isinstance(value, bool) and field is not None and not _admits_bool(field.annotation):
                raise ValueError(f"{name} must be a number, not {value!r}")
    return data


def validated(
    model: type[BaseModel],
    value: Any,
    what: str,
    *,
    error: type[MemoryRetrieversError] = ConfigError,
    key: str = "key",
) -> Any:
    """Build ``model`` from a mapping or an instance, with errors that say how to fix them.

    Pydantic errors become ``error`` with a message that names each bad field and, for unknown
    keys, lists the valid ones.

    Args:
        model: The pydantic model class.
        value: An instance of ``model``, a mapping of its fields, or ``None`` for the defaults.
        what: Name used in the error message (e.g. ``"StoreConfig"``).
        error: The exception type to raise (a :class:`MemoryRetrieversError`).
        key: How the message calls a field ("key", "filter key").
    """
    if value is None:
        return model()
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise error(f"{what} must be a {model.__name__} or a dict of its fields, got {type(value).__name__}")
    try:
        return model(**value)
    except ValidationError as exc:
        raise error(_explain(exc, model, what, key)) from None
    except MemoryRetrieversError as exc:  # a CheckedModel's own error: name it as the caller called it
        raise error(str(exc).replace(f"invalid {model.__name__}:", f"invalid {what}:", 1)) from None
    except TypeError as exc:  # non-str keys
        raise error(f"invalid {what}: {exc}") from None


def _explain(exc: ValidationError, model: type[BaseModel], what: str, key: str) -> str:
    return f"invalid {what}: " + "; ".join(_parts(exc, model, key, ()))


def _parts(exc: ValidationError, model: type[BaseModel], key: str, prefix: tuple[Any, ...]) -> list[str]:
    """One message per error, each naming its field by its path from the outermost model."""
    parts = []
    for err in exc.errors():
        path = (*prefix, *err["loc"])
        loc = ".".join(str(p) for p in path)
        inner = err.get("ctx", {}).get("error")
        nested = getattr(inner, "validation", None)  # a CheckedModel field's own error
        if err["type"] == "value_error" and nested is not None:
            parts.extend(_parts(nested[0], nested[1], key, path))
        elif err["type"] == "extra_forbidden":
            valid = ", ".join(sorted(model.model_fields))
            parts.append(f"unknown {key} {loc!r}; valid {key}s are: {valid}{_did_you_mean(model, str(path[-1]))}")
        elif err["type"] == "value_error":  # our own checks: their message already says what to do
            message = str(err["msg"]).removeprefix("Value error, ")
            nested_text = message.startswith("invalid ")  # a nested model's own error: keep its wording
            parts.append(message if nested_text or not path else f"{loc}: {message}")
        else:
            parts.append(f"{loc}: {err['msg']} (got {err.get('input')!r})")
    return parts


def _did_you_mean(model: type[BaseModel], name: str) -> str:
    """A close field name, looked up in ``model`` and in the models its fields hold (``fusion.rrf_k``)."""
    paths: dict[str, str] = {}
    for field, info in model.model_fields.items():
        paths[field] = field
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            paths.update({inner: f"{field}.{inner}" for inner in sub.model_fields})
    close = difflib.get_close_matches(name, list(paths), n=1, cutoff=0.8)
    return f"; did you mean {paths[close[0]]!r}?" if close else ""
