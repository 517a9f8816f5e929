from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.testing import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(32)


@pytest.fixture
def make_store(tmp_path: Path, embedder: HashEmbedder, clock: ManualClock) -> Iterator[Callable[..., MemoryStore]]:
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
