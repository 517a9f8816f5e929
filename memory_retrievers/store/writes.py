"""The everyday write API of the store, async: add, replace, update, supersede, delete, forget.

Each method validates its arguments, then hands the work to the write queue (``storage/queue.py``),
which runs it against the table layer. The sync twins are made from these (see ``store.py``).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memory_retrievers.errors import InvalidInputError, MemoryRetrieversError
from memory_retrievers.filters import MemoryFilter, build_where, coerce_filter
from memory_retrievers.models import AddedMemory, Memory
from memory_retrievers.storage.fields import WRITABLE_FIELDS
from memory_retrievers.storage.queue import AddBatch
from memory_retrievers.storage.write_plan import NEW_ID
from memory_retrievers.storage.writes import record_vectors
from memory_retrievers.store.barrier import Ticket
from memory_retrievers.store.base import StoreBase
from memory_retrievers.store.pending import PendingWrite
from memory_retrievers.validation import check_key

__all__ = ["WriteAPI"]


class WriteAPI(StoreBase):
    """Writes: every record is validated before anything is committed, then committed once per batch."""

    async def aadd(self, /, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> AddedMemory:
        """Store one memory and return it (``.action`` says added, updated or skipped).

        Args:
            text: What to remember. Stored verbatim.
            namespace: The user or tenant it belongs to.
            dedup: Override the config: ``False`` skips duplicate detection.
            **fields: Any writable field: ``id`` (an existing id is upserted), ``kind``,
                ``session_id``, ``project``, ``topic``, ``tags``, ``entities``, ``priority``,
                ``pinned``, ``importance``, ``created_at``, ``context``, ``metadata``, ``links``,
                ``supersedes``, ``vector`` (scaled to unit length; all zeros is refused).

        Raises:
            InvalidInputError: Bad text or field (nothing is written).
            EmbeddingError: The embedder failed (nothing is written).
        """
        (result,) = await self.aadd_many([{**fields, "text": text, "namespace": namespace}], dedup=dedup)
        return result

    def add_later(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> PendingWrite:
        """Queue one memory and return at once, without waiting for its commit (micro-batching).

        The record is validated now; it is embedded and committed with the writes queued around it,
        within ``StoreConfig.write_linger`` plus the commits queued before it (typically tens of
        milliseconds). Use it where the caller need not wait for a commit: logging chat turns (the
        LangChain and LlamaIndex memory adapters store each turn this way), or object storage where
        a commit is slow.

        Read-your-writes: from the moment this returns, recall in this process finds the memory
        (merged into every search of its namespace, under :attr:`PendingWrite.id`), before its
        commit; other processes find it once committed. ``get``, ``list`` and ``count`` show it once
        committed (:meth:`flush` waits for that).

        Acknowledgement: :meth:`add` returns once the memory is committed; ``add_later`` returns a
        :class:`PendingWrite` that is committed once its ``result()`` returns. :meth:`flush`,
        :meth:`close`, interpreter exit and ``os.fork()`` all wait for queued writes, so a program
        that ends normally loses none; a process killed (or ended by ``os._exit``) before the commit
        loses what was still queued. It does not wait for the commit, so async code may call it too
        (``await store.add_later(...)`` waits for the commit). A ``forget`` or ``delete`` called
        after it applies after its commit: the memory is deleted with the rest.

        Backpressure: when ``StoreConfig.max_queued_records`` records are already queued, it waits
        for room (at most ``StoreConfig.queue_full_timeout``), then raises
        :class:`~memory_retrievers.QueueFullError` with nothing queued. Called from a running event
        loop it never waits (that would block the loop): a full queue raises at once there; async
        code that wants to wait for room awaits :meth:`aadd` instead.

        Args:
            text: What to remember. Stored verbatim.
            namespace: The user or tenant it belongs to.
            dedup: Override the config: ``False`` skips duplicate detection.
            **fields: Any writable field, as for :meth:`add`.

        Returns:
            The queued write: ``.result()`` (or ``await``) gives the :class:`AddedMemory`.

        Raises:
            InvalidInputError: Bad text or field (nothing is queued).
            QueueFullError: The queue stayed full (nothing is queued).
            StorageError: The store is closed.
        """
        (pending,) = self.add_many_later([{**fields, "text": text}], namespace=namespace, dedup=dedup)
        return pending

    def add_many_later(
        self, records: Iterable[Mapping[str, Any]], *, namespace: str, dedup: bool | None = None
    ) -> builtins.list[PendingWrite]:
        """Queue memories of one namespace and return at once: :meth:`add_later` for several records.

        Every record is validated before anything is queued, and they commit together (one batch:
        all of them or, if the write fails, none). Recall in this process finds them at once.

        Args:
            records: Dicts with ``text`` and any writable field (see :meth:`add`); a record naming
                a namespace must name ``namespace``.
            namespace: The user or tenant they belong to.
            dedup: Override the config's duplicate detection.

        Returns:
            One :class:`PendingWrite` per record, in order.

        Raises:
            InvalidInputError: A record is invalid, or names another namespace (nothing is queued).
            QueueFullError: The queue stayed full (nothing is queued).
            StorageError: The store is closed.
        """
        self._ensure_open()
        self._check_dedup(dedup)
        ns = self._ns(namespace)
        recs = self._records(records, ns)
        other = next((r["namespace"] for r in recs if r["namespace"] != ns), None)
        if other is not None:
            raise InvalidInputError(f"add_many_later() writes one namespace ({ns!r}); a record names {other!r}")
        if not recs:
            return []
        for rec in recs:
            if rec.get("id") is None:  # planned now: recall shows the queued memory by the id it gets
                rec[NEW_ID] = uuid.uuid4().hex
        if not self._embedder_loaded:
            # A lazily loaded model must not load at interpreter exit (see SentenceTransformerEmbedder.load).
            load = getattr(self._embedder, "load", None)
            if callable(load):
                load()
            self._embedder_loaded = True
        queued_at = self._clock()
        batch = AddBatch(recs, dedup)
        future = self._queue.add_nowait(batch)
        self._pending.add(batch, future, queued_at)
        return [
            PendingWrite(future, rec["text"], index=i, id=rec.get("id") or rec[NEW_ID]) for i, rec in enumerate(recs)
        ]

    async def aadd_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        dedup: bool | None = None,
        progress: bool | None = None,
    ) -> builtins.list[AddedMemory]:
        """Store many memories: embedded in batches, one LanceDB commit per batch.

        Args:
            records: Dicts with ``text`` and any writable field (see :meth:`add`).
            namespace: Namespace for records that do not name one.
            batch_size: Records per commit (default ``StoreConfig.write_batch_size``).
            dedup: Override the config's duplicate detection.
            progress: Show a tqdm progress bar. ``None`` (default): when stderr is a terminal
                and the records need more than one batch.

        Returns:
            One :class:`AddedMemory` per record, in order.

        Raises:
            InvalidInputError: A record is invalid. Every record is validated before the first
                commit, so an invalid record means nothing at all was written.
        """
        self._ensure_open()
        size = batch_size if batch_size is not None else self._config.write_batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"batch_size must be a positive int, got {size!r}")
        if progress is not None and not isinstance(progress, bool):
            raise InvalidInputError(f"progress must be True, False or None, got {progress!r}")
        self._check_dedup(dedup)
        recs = self._records(records, namespace)
        if progress is None:
            progress = len(recs) > size and sys.stderr is not None and sys.stderr.isatty()
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(recs), unit="memory", desc="add_many")
        try:
            return await self._add_batches(recs, size, dedup, bar)
        finally:
            if bar is not None:
                bar.close()

    async def _add_batches(
        self, recs: builtins.list[dict[str, Any]], size: int, dedup: bool | None, bar: Any
    ) -> builtins.list[AddedMemory]:
        """Embed and commit ``recs`` in batches of ``size``, in order; each batch one queued commit."""
        results: builtins.list[AddedMemory] = []
        starts = range(0, len(recs), size)
        # The next batch is embedded while this one is planned and committed: the two overlap, so a
        # long load runs near the embedding's own speed (the commit, dedup and context reads of a
        # batch took a third of the time when they waited for each other).
        ahead: asyncio.Future[builtins.list[dict[str, Any]]] | None = None
        try:
            for n, start in enumerate(starts):
                try:
                    batch = await (ahead or self._embedded(recs[start : start + size]))
                    ahead = None
                    if n + 1 < len(starts):
                        ahead = asyncio.ensure_future(self._embedded(recs[start + size : start + 2 * size]))
                    results.extend(await self._queue.add(AddBatch(batch, dedup, start)))
                except MemoryRetrieversError as exc:
                    if results:  # earlier batches are stored: say which, so nothing is written twice
                        exc.written = results
                        exc.args = (
                            f"{exc} (records 0-{len(results) - 1} were stored, see .written; records "
                            f"{len(results)} onwards were not)",
                        )
                    raise
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if ahead is not None:  # the load stopped early: the batch embedded ahead is not written
                ahead.cancel()
                with contextlib.suppress(BaseException):
                    await ahead
        return results

    async def _embedded(self, batch: builtins.list[dict[str, Any]]) -> builtins.list[dict[str, Any]]:
        """The batch's records, each with its vector (embedded now unless the caller gave one)."""
        vectors = await record_vectors(self._vectors, batch)  # a caller's vector was checked in _records
        return [{**r, "vector": v} for r, v in zip(batch, vectors, strict=True)]

    async def areplace(
        self,
        namespace: str,
        records: Iterable[Mapping[str, Any]],
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[AddedMemory]:
        """Replace the memories of a namespace that match ``filter`` by ``records``, in one commit.

        Readers see the old memories or the new ones, never neither; a crash or an invalid record
        leaves the old ones untouched (every record is checked before anything is written). Made
        for chat stores that set a whole session (``filter={"session_ids": [...], "kinds":
        ["message"], "include_superseded": True}``): chat turns get their context from the new
        records alone, and nothing is deduplicated.

        Returns:
            One :class:`AddedMemory` per record, in order.

        Raises:
            InvalidInputError: A record is invalid, or names another namespace.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        where = build_where(ns, coerce_filter(filter))
        recs = self._records(records, ns)
        other = next((r["namespace"] for r in recs if r["namespace"] != ns), None)
        if other is not None:
            raise InvalidInputError(f"replace() writes one namespace ({ns!r}); a record names {other!r}")

        async def run() -> builtins.list[AddedMemory]:
            doomed = (await self._table.rows(where, ["id"])).column("id").to_pylist()
            return await self._writer.write(recs, dedup=False, replacing=(ns, doomed))

        return await self._queue.exclusive(run)

    async def aupdate(self, id: str, /, *, namespace: str, **fields: Any) -> Memory:
        """Change fields of one memory; text changes are re-embedded.

        Raises:
            NotFoundError: No memory with that id in the namespace.
            InvalidInputError: Bad field values, or ``id``/``namespace`` in ``fields``.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        id_ = check_key(id, field="id", max_chars=self._config.max_key_chars)
        if not fields:
            raise InvalidInputError("update() needs at least one field to change")
        for fixed in ("id", "namespace"):
            if fixed in fields:
                raise InvalidInputError(f"{fixed} cannot be changed by update(); add a new memory instead")
        unknown = set(fields) - WRITABLE_FIELDS
        if unknown:
            raise InvalidInputError(
                f"unknown field(s) {sorted(unknown)}; writable fields are: {', '.join(sorted(WRITABLE_FIELDS))}"
            )
        return await self._queue.exclusive(lambda: self._editor.update(ns, id_, fields))

    async def asupersede(
        self, old_id: str, new: str | Mapping[str, Any], *, namespace: str, dedup: bool | None = None
    ) -> AddedMemory:
        """Replace a memory by a newer one, keeping both linked.

        The new memory inherits the old one's fields unless ``new`` (a text or a dict of fields)
        sets them; it records ``supersedes=old_id`` and the old one ``superseded_by=<new id>``
        (two commits: the new memory, then the link; a crash between them leaves both live, and
        superseding again finishes the job). Superseded memories are left out of searches unless a
        filter asks for them. Deleting the newer memory later makes the old one live again.

        Duplicates are detected as on :meth:`add` (same tests, same scope, same
        ``StoreConfig`` settings). When the new record duplicates a live memory and the
        ``dedup_policy`` is ``skip`` (default) or ``update``, nothing new is stored, in one commit
        (none if nothing changes):

        - the duplicate is another memory: the old one is superseded by it (``superseded_by`` is
          its id; the duplicate's own ``supersedes`` is left as it is). It takes the new record as
          on ``add``: ``skip`` adds the annotations (tags, entities, links, metadata keys, pinned,
          the higher priority and importance), ``update`` rewrites it with the fields ``new`` sets;
        - the duplicate is the old memory itself (superseded by its own text): it stays live,
          not superseded, and takes the record as above;
        - the old memory is already superseded by the duplicate (a repeated supersede, e.g. a
          script run again): nothing more is linked; any other superseded ``old_id`` is refused.

        The result is then the duplicate, with ``action`` ``skipped`` (``updated`` when it took new
        annotations or fields), ``duplicate_of`` its id, ``similarity`` and ``reason``. A record
        naming an ``id`` is compared with the memory of that id only. With ``keep_both`` the new
        memory is stored and the result still names the duplicate.

        Args:
            old_id: The memory to replace.
            new: The new text, or a dict of fields with ``text`` (any writable field, as for :meth:`add`).
            namespace: The namespace of both.
            dedup: Override the config: ``False`` skips duplicate detection (always a new memory).

        Raises:
            NotFoundError: ``old_id`` does not exist in the namespace.
            InvalidInputError: ``old_id`` is already superseded (and the new record does not
                duplicate its successor), the new record is invalid, or ``dedup`` is not a bool or None.
        """
        self._ensure_open()
        self._check_dedup(dedup)
        ns = self._ns(namespace)
        old_key = check_key(old_id, field="old_id", max_chars=self._config.max_key_chars)
        return await self._queue.exclusive(lambda: self._editor.supersede(ns, old_key, new, dedup=dedup))

    async def adelete(self, ids: str | Sequence[str], *, namespace: str, missing_ok: bool = False) -> int:
        """Delete memories by id; returns how many were deleted.

        A memory superseded by a deleted one becomes live again (in the same commit).

        Raises:
            NotFoundError: Some ids do not exist (and ``missing_ok`` is false); nothing is deleted.
        """
        self._ensure_open()
        ns, wanted = self._ns(namespace), self._ids(ids)
        return await self._queue.exclusive(lambda: self._editor.delete(ns, wanted, missing_ok=missing_ok))

    async def aforget(self, namespace: str) -> int:
        """Delete every memory of a namespace (a user's right to be forgotten); returns the count.

        A barrier: writes queued before it (``add_later``) commit first and are deleted with the
        rest, and memory formation handed over before it (``MemoryFormer.form_later``, a running
        ``form``) stores nothing once it is applied; that run fails with
        :class:`~memory_retrievers.errors.NamespaceForgottenError`.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        number = self._forgets.request(ns)

        async def run() -> int:
            self._forgets.apply(ns, number)  # first: a failed delete still refuses work from before it
            return await self._editor.forget(ns)

        return await self._queue.exclusive(run)

    def _forget_ticket(self, namespace: str) -> Ticket:
        """A ticket for work on ``namespace`` handed over now: its writes never land after a later forget."""
        return self._forgets.ticket(self._ns(namespace))
