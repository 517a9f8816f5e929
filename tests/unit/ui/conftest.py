"""Fixtures of the inspector's tests: a real LanceDB store (hash embedder) and a TestClient over the app."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from memory_retrievers import HashEmbedder, MemoryStore, ShardedMemoryStore
from memory_retrievers.testing import ManualClock
from memory_retrievers.ui import create_app

#: A namespace that needs escaping in a URL (a slash, a percent sign, a space, unicode).
ODD = "team/ä 50%"


@pytest.fixture
def ui_store(store: MemoryStore, clock: ManualClock) -> MemoryStore:
    """Memories of three namespaces, a day apart: facts, a preference, a chain and a contradiction."""
    store.add("Alice prefers the dark theme in every editor", namespace="alice", kind="preference")
    clock.advance(days=1)
    store.add("Alice's dog is called Rex", namespace="alice", kind="fact")
    clock.advance(days=1)
    store.add("Ana likes jazz music a lot", namespace=ODD, kind="preference")
    clock.advance(days=1)
    store.add("Ana does not like jazz music a lot", namespace=ODD, kind="fact")
    store.add("Bob prefers the light theme", namespace="bob", kind="preference")
    return store


@pytest.fixture
def sharded_store(tmp_path: Path, embedder: HashEmbedder, clock: ManualClock) -> Iterator[ShardedMemoryStore]:
    """Two shards: ``dave`` lives in the first, ``alice`` in the second (a chat turn, a fact formed from it)."""
    store = ShardedMemoryStore([tmp_path / "shard-a", tmp_path / "shard-b"], embedder=embedder, clock=clock)
    assert (store.shard_index("dave"), store.shard_index("alice")) == (0, 1)
    turn = store.add("Alice: my dog is called Rex", namespace="alice", kind="message")
    clock.advance(days=1)
    store.add("Alice's dog is called Rex", namespace="alice", kind="fact", links=[turn.id])
    store.add("Dave likes jazz music a lot", namespace="dave", kind="preference")
    store.add("Dave does not like jazz music a lot", namespace="dave", kind="fact")
    yield store
    store.close()


@pytest.fixture
def make_client() -> Iterator[Callable[..., TestClient]]:
    """A TestClient over ``create_app(store, **kwargs)``, on the loopback host the app accepts."""
    clients: list[TestClient] = []

    def make(store: MemoryStore, **kwargs: Any) -> TestClient:
        client = TestClient(create_app(store, **kwargs), base_url="http://127.0.0.1:8765", follow_redirects=False)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(ui_store: MemoryStore, make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(ui_store)


def csrf_of(client: TestClient) -> str:
    """The app's CSRF secret (every form renders it)."""
    token: str = client.app.state.csrf_token  # type: ignore[attr-defined]
    return token


def run_scan(client: TestClient, segment: str) -> str:
    """Run the review scans of the namespace at URL ``segment`` as the page's button does; the review page after."""
    response = client.post(f"/ns/{segment}/review", data={"csrf_token": csrf_of(client)}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return client.get(response.headers["location"]).text
