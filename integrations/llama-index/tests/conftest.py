from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.testing import ManualClock

FACTS = [
    ("Alice prefers the dark theme in every editor", "preference"),
    ("Alice's dog is called Rex", "fact"),
    ("Alice moved to Berlin in March", "event"),
    ("Alice drinks green tea every morning", "preference"),
    ("Alice is learning to play jazz piano", "fact"),
    ("Alice works as a data engineer at Acme", "fact"),
]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_store(tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., MemoryStore]]:
    """Open (or reopen) a store in this test's tmp dir; the hash embedder unless one is given."""
    opened: list[MemoryStore] = []

    def make(**kwargs: object) -> MemoryStore:
        kwargs.setdefault("embedder", HashEmbedder(32))
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


@pytest.fixture
def filled(store: MemoryStore, clock: ManualClock) -> MemoryStore:
    """Alice's six memories, a day apart, and one memory of Bob's."""
    for text, kind in FACTS:
        store.add(text, namespace="alice", kind=kind)
        clock.advance(days=1)
    store.add("Bob prefers the light theme", namespace="bob", kind="preference")
    return store
