from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore


class Clock:
    """A settable UTC clock, so timestamps in tests are exact."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc))


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(32)


@pytest.fixture
def make_store(tmp_path: Path, embedder: HashEmbedder, clock: Clock) -> Iterator[Callable[..., MemoryStore]]:
    """Open (or reopen) a store in this test's tmp dir with the hash embedder."""
    opened: list[MemoryStore] = []

    def make(**kwargs: object) -> MemoryStore:
        kwargs.setdefault("embedder", embedder)
        kwargs.setdefault("clock", clock)
        store = MemoryStore(tmp_path / "db", **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store()
