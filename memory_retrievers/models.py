"""Records and enums shared by the store and the recall pipeline."""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

__all__ = [
    "AddedMemory",
    "DedupPolicy",
    "FtsField",
    "Hit",
    "Memory",
    "MemoryKind",
    "WriteAction",
]


class MemoryKind(str, enum.Enum):
    """What a memory is; recall scoring can weigh kinds differently."""

    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    INSIGHT = "insight"
    RAW = "raw"
    MESSAGE = "message"


class DedupPolicy(str, enum.Enum):
    """What a write does when it finds an exact or near duplicate in the same namespace."""

    SKIP = "skip"
    """Store nothing and return the existing memory."""
    UPDATE = "update"
    """Rewrite the existing memory with the new text and fields (its id and history stay)."""
    KEEP_BOTH = "keep_both"
    """Store the new memory as well; the result still names the duplicate."""


class FtsField(str, enum.Enum):
    """What a full-text search matches against."""

    TEXT = "text"
    """The memory's text alone."""
    CONTEXT = "context"
    """The memory's text together with its ``context`` (e.g. neighbouring chat turns)."""
    ENTITIES = "entities"
    """The memory's entities."""


class WriteAction(str, enum.Enum):
    """What a write did with one record."""

    ADDED = "added"
    UPDATED = "updated"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory, as returned by the store.

    Timestamps are timezone-aware UTC datetimes. ``vector`` is only filled when a read asks for it.
    """

    id: str
    namespace: str
    text: str
    kind: MemoryKind = MemoryKind.FACT
    session_id: str | None = None
    project: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    priority: float = 1.0
    pinned: bool = False
    importance: float = 0.5
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    content_hash: str = ""
    supersedes: str | None = None
    superseded_by: str | None = None
    links: tuple[str, ...] = ()
    context: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None
    lifecycle: str | None = None
    vector: tuple[float, ...] | None = None

    @property
    def is_superseded(self) -> bool:
        """True when a newer memory replaced this one."""
        return self.superseded_by is not None

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-friendly dict of the fields (enums as values, datetimes as ISO strings)."""
        # Field by field, not ``asdict``: its deep copy of a 384-float vector tuple cost 135 s of a
        # 100k-memory export. Only ``metadata`` can hold mutable values, so only it is deep-copied.
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["kind"] = self.kind.value
        out["metadata"] = copy.deepcopy(dict(self.metadata))
        for key in ("created_at", "updated_at", "last_accessed_at", "expires_at"):
            value = out[key]
            out[key] = value.isoformat() if value is not None else None
        for key in ("tags", "entities", "links"):
            out[key] = list(out[key])
        if self.vector is None:
            out.pop("vector")
        else:
            out["vector"] = list(self.vector)
        return out


@dataclass(frozen=True, slots=True)
class AddedMemory(Memory):
    """A :class:`Memory` returned by a write, saying what the write did.

    Attributes:
        action: Whether the record was added, updated (upsert, or a duplicate merged into the memory
            it duplicates) or skipped.
        duplicate_of: The id of the exact/near duplicate that was found, if any.
        similarity: Cosine similarity to that duplicate (1.0 for an exact duplicate).
        reason: Why the write did what it did, when it did not simply add the record (e.g. "a near
            duplicate of 3f2a… (cosine 0.971, same words); merged into it: tags").
    """

    action: WriteAction = WriteAction.ADDED
    duplicate_of: str | None = None
    similarity: float | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result of a search primitive.

    ``score`` is the channel's raw score, higher is better: cosine similarity in [-1, 1] for vector
    search, BM25 for full text, the number of shared entities for entity search, POSIX seconds for
    recency. Ranks are the positions in the returned list (1-based when fused).
    """

    id: str
    score: float
