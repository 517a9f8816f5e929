"""ManualClock: a settable UTC clock, for stores whose timestamps a test decides.

Pair a :class:`ManualClock` with :class:`~memory_retrievers.HashEmbedder` for fast, exactly
reproducible stores (timestamps and vectors are the same on every run and in every process).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memory_retrievers.errors import ConfigError

__all__ = ["ManualClock"]


class ManualClock:
    """A settable UTC clock for ``MemoryStore(clock=...)``: time moves only when told to.

    Args:
        start: The first reading (timezone-aware); default 2024-05-01 12:00 UTC.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
        if self.now.tzinfo is None:
            raise ConfigError("start must be timezone-aware, e.g. datetime(..., tzinfo=timezone.utc)")

    def __call__(self) -> datetime:
        """The current reading."""
        return self.now

    def __repr__(self) -> str:
        return f"ManualClock({self.now.isoformat()})"

    def advance(self, **kwargs: float) -> None:
        """Move forward by a ``timedelta(**kwargs)``, e.g. ``advance(days=3)``."""
        self.now += timedelta(**kwargs)
