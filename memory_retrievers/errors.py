"""The exception hierarchy of memory-retrievers.

Every error the library raises on purpose derives from :class:`MemoryRetrieversError`, and each
subclass also inherits the built-in exception a caller would naturally catch, so both
``except MemoryRetrieversError`` and ``except ValueError`` work::

    MemoryRetrieversError (Exception)
    ├── ConfigError (ValueError)             bad or unknown configuration value
    ├── InvalidInputError (ValueError)       a text, id, namespace or field that cannot be stored
    │   ├── FilterError                      a malformed metadata filter
    │   └── NotAStoreError                   an adapter given something else than a MemoryStore (also a ConfigError)
    ├── NotFoundError (LookupError)          ids that do not exist in the namespace
    ├── NamespaceForgottenError (RuntimeError)  a write from before a forget, refused after it
    ├── EmbeddingError (RuntimeError)        the embedder failed or returned unusable vectors
    │   └── DimensionMismatchError (ValueError)  vector width differs from the table's
    └── StorageError (RuntimeError)          the LanceDB table could not be read or written
        ├── QueueFullError                   add_later found the write queue full for too long
        ├── FlushTimeoutError (TimeoutError) flush()/close() passed their deadline with work pending
        ├── ReshardInProgressError           another reshard() holds the lease on a store it touches
        ├── SchemaMismatchError              the table was written by another schema/embedder
        │   └── EmbedderMismatchError        ...by another embedding model (also a DimensionMismatchError)
        └── ForkedStoreError                 a store opened in a parent process, used in a forked child

Messages always say how to fix the problem.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DimensionMismatchError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "FilterError",
    "FlushTimeoutError",
    "ForkedStoreError",
    "InvalidInputError",
    "MemoryRetrieversError",
    "NamespaceForgottenError",
    "NotAStoreError",
    "NotFoundError",
    "QueueFullError",
    "ReshardInProgressError",
    "SchemaMismatchError",
    "SourceChangingError",
    "StorageError",
]


def install_extra(extra: str) -> str:
    """How to install an optional extra, as the README's install does it: from a clone (for error messages).

    memory-retrievers is not on the package index yet, so ``pip install 'memory-retrievers[mcp]'``
    fails there; the extra is installed from the clone's folder.
    """
    return f'python -m pip install "./memory-retrievers[{extra}]" (from the folder that holds your clone)'


class MemoryRetrieversError(Exception):
    """Base class of every error raised on purpose by memory-retrievers.

    Attributes:
        written: When ``add_many`` fails after some of its batches were stored, the results of
            those records (so a retry can skip them); empty otherwise.
    """

    written: list[Any] = []  # noqa: RUF012 - never mutated: an instance gets its own list


class ConfigError(MemoryRetrieversError, ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


class InvalidInputError(MemoryRetrieversError, ValueError):
    """A memory, id, namespace or field value cannot be stored or queried as given."""


class NotAStoreError(ConfigError, InvalidInputError):
    """An adapter's ``store`` is not a :class:`~memory_retrievers.MemoryStore`.

    Both a :class:`ConfigError` and an :class:`InvalidInputError`: before the adapter base, some
    adapters raised one and some the other, and callers catching either keep working.
    """


class FilterError(InvalidInputError):
    """A metadata filter is malformed (unknown key, wrong type, empty list...)."""


class NotFoundError(MemoryRetrieversError, LookupError):
    """One or more memory ids do not exist in the given namespace.

    Attributes:
        missing: The ids that were not found, in the order they were asked for.
    """

    def __init__(self, message: str, missing: list[str] | None = None) -> None:
        super().__init__(message)
        self.missing: list[str] = list(missing or [])

    def __str__(self) -> str:
        # LookupError/KeyError would repr() the message; keep it readable.
        return str(self.args[0]) if self.args else ""


class NamespaceForgottenError(MemoryRetrieversError, RuntimeError):
    """A write made for a namespace before it was forgotten reached the store after the forget.

    Forget is a barrier: a memory formation run (or another write carrying a forget ticket) that
    was handed over before ``forget(namespace)`` stores nothing once the forget is applied, so
    nothing forgotten comes back from work that was in flight. Nothing of this write was stored;
    hand the conversation over again if it should be remembered after all.

    Attributes:
        namespace: The namespace that was forgotten.
    """

    def __init__(self, message: str, namespace: str | None = None) -> None:
        super().__init__(message)
        self.namespace = namespace


class EmbeddingError(MemoryRetrieversError, RuntimeError):
    """The embedder failed, or returned vectors that are not finite numbers of the right shape."""


class DimensionMismatchError(EmbeddingError, ValueError):
    """A vector's width differs from the dimension the table was created with."""


class StorageError(MemoryRetrieversError, RuntimeError):
    """The underlying LanceDB table could not be opened, read or written."""


class QueueFullError(StorageError):
    """The write queue stayed full for longer than the store waits for room; nothing was queued.

    ``add_later`` applies backpressure: past ``StoreConfig.max_queued_records`` queued records it
    waits for the queue to drain below the bound, at most ``StoreConfig.queue_full_timeout``, then
    raises this. Slow down, or call ``add``/``add_many`` (which wait for their own commit).
    """


class FlushTimeoutError(StorageError, TimeoutError):
    """``flush()`` or ``close()`` passed its deadline while writes were still queued or committing.

    Nothing was dropped: the queued writes still commit in the background, and a store whose
    ``close()`` raised this stays open (call ``close()`` again, or let the interpreter's exit
    commit them). Raise ``timeout`` for a store on slow storage.

    Attributes:
        queued: Writes (operations) still queued or committing when the deadline passed.
    """

    def __init__(self, message: str, queued: int = 0) -> None:
        super().__init__(message)
        self.queued = queued


class ReshardInProgressError(StorageError):
    """Another :func:`~memory_retrievers.reshard` run holds the lease on a table this one would touch.

    Two runs at once could each take the other's copy for a crash's leftover and forget it, so a
    run takes a lease on every table it reads or writes, and refuses to start while another run
    holds one. Nothing was changed. Wait for that run to finish; a run that crashed (its process
    is gone, or its lease expired) is taken over by the next run.

    Attributes:
        holder: Who holds the lease (host, process id, when it expires), as recorded with it.
    """

    def __init__(self, message: str, holder: str | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class SourceChangingError(StorageError):
    """A re-embedding could not catch up with a source that was still being written.

    :func:`~memory_retrievers.bulk.reembed` copies a snapshot of the source, then copies again every
    memory added, changed or deleted there since, round after round until a round finds nothing
    new. Writers that never paused for that long left the copy behind the source, so the job does
    not report it done. Everything copied so far is in the target; pause the writers (or pick a
    quieter hour) and run the job again: it replaces memories in place, nothing is doubled.

    Attributes:
        behind: Memories still differing between source and target after the last round.
    """

    def __init__(self, message: str, behind: int = 0) -> None:
        super().__init__(message)
        self.behind = behind


class SchemaMismatchError(StorageError):
    """The table was created by another schema version or another embedding model."""


class EmbedderMismatchError(SchemaMismatchError, DimensionMismatchError):
    """The table was written with another embedding model (another name, dimension, or both).

    Raised on open whichever detail differs; it is both a :class:`SchemaMismatchError` and a
    :class:`DimensionMismatchError`, so code that catches either keeps working.
    """


class ForkedStoreError(StorageError):
    """A :class:`~memory_retrievers.MemoryStore` was used in a child process forked after it was opened.

    Its LanceDB handles, loop thread and pending writes belong to the parent process; a forked
    child cannot use them safely. Open a new store in the child instead (see docs/how-to/deploy.md).

    Attributes:
        opened_in: The pid of the process that opened the store.
    """

    def __init__(self, message: str, opened_in: int | None = None) -> None:
        super().__init__(message)
        self.opened_in = opened_in
