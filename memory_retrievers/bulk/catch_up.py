"""Bring a re-embedded copy up to date with the writes its source took while the copy ran.

The Ray read of :func:`~memory_retrievers.bulk.reembed` sees the source as it was when the job
started; a job takes minutes to hours, and the application keeps writing. Without this step an add
made meanwhile never reached the new table, and a fact superseded meanwhile ("moved to Berlin")
was live again there beside its replacement. Each round compares the two stores namespace by
namespace (every field but the vector and the access statistics) and writes the difference
through the public API; rounds repeat until one finds nothing to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_retrievers.errors import SourceChangingError

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["CatchUp", "catch_up"]

#: Rounds before giving up on writers that never pause: each round copies what the one before
#: missed, so a source written at a steady pace is caught in two or three.
ROUNDS = 5

#: Usage telemetry, not content: a recall on the source bumps these, and a copy that chased them
#: would never finish beside a busy agent. The copy carries the statistics of its snapshot.
_USAGE = frozenset({"access_count", "last_accessed_at", "vector"})

#: Memories restored per commit during a catch-up.
_BATCH = 500


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What catching up wrote.

    Attributes:
        recopied: Memories added or changed in the source after the snapshot, restored into the copy.
        dropped: Memories of the copy the source no longer holds (deleted or forgotten), deleted.
        rounds: Rounds run, the last of which found nothing to do.
    """

    recopied: int
    dropped: int
    rounds: int


def catch_up(
    source: MemoryStore,
    target: MemoryStore,
    copied: Mapping[str, Iterable[str]],
    namespaces: Sequence[str] | None,
    *,
    rounds: int = ROUNDS,
) -> CatchUp:
    """Write into ``target`` every change ``source`` took since ``copied`` was read from it.

    Args:
        source: The store the copy was read from.
        target: The copy (embedded by its own embedder; changed texts are embedded again here).
        copied: The ids the copy wrote, per namespace: only these (and ones restored here) are ever
            deleted from ``target``, so memories the target held of its own are left alone.
        namespaces: The namespaces the job copies (``None``: all, including ones created since).
        rounds: At most this many rounds.

    Returns:
        What was restored and deleted.

    Raises:
        SourceChangingError: The source still changed in the last round; what was copied stays.
    """
    ours = {ns: set(ids) for ns, ids in copied.items()}
    recopied = dropped = 0
    for done in range(1, rounds + 1):
        changed = 0
        for ns in _namespaces(source, ours, namespaces):
            stale, gone = _difference(source, target, ns, ours.setdefault(ns, set()))
            if gone:
                dropped += target.delete(gone, namespace=ns, missing_ok=True)
            for start in range(0, len(stale), _BATCH):
                target.admin.restore(stale[start : start + _BATCH], namespace=ns)
            ours[ns].update(r["id"] for r in stale)
            recopied += len(stale)
            changed += len(stale) + len(gone)
        if not changed:
            return CatchUp(recopied, dropped, done)
    raise SourceChangingError(
        f"the source was still being written after {rounds} rounds of catching up ({changed} memories "
        "changed in the last one); everything copied so far is in the target. Pause the writers and run "
        "reembed again (it replaces memories in place, nothing is doubled)",
        behind=changed,
    )


def _namespaces(source: MemoryStore, ours: Mapping[str, Any], namespaces: Sequence[str] | None) -> list[str]:
    """The namespaces to compare: the job's own list, or every one in the source or in the copy."""
    if namespaces is not None:
        return list(namespaces)
    return sorted(set(source.namespaces()) | set(ours))


def _difference(
    source: MemoryStore, target: MemoryStore, ns: str, ours: set[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The source's records of ``ns`` the target lacks or holds otherwise, and our ids the source lost."""
    # Without vectors: the comparison needs none, and a restore without one embeds with the target's.
    held = {r["id"]: r for r in source.admin.export(ns, include_vectors=False)}
    copy = {r["id"]: r for r in target.admin.export(ns, include_vectors=False)}
    stale = [r for i, r in held.items() if i not in copy or _content(copy[i]) != _content(r)]
    gone = sorted(i for i in ours if i in copy and i not in held)
    return stale, gone


def _content(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in _USAGE}
