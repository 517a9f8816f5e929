"""Every storage operation has a deadline (issue 27 item 19): ``StoreConfig.storage_timeout``.

A server that accepts connections but never answers blocked ``MemoryStore(uri)`` for more than
190 s (about 12 minutes with LanceDB's default options): its client retries each unanswered
request. Past the deadline, the operation raises ``StorageError`` naming it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from memory_retrievers import ConfigError, HashEmbedder, MemoryStore, StorageError, StoreConfig

DEADLINE = timedelta(seconds=2)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An endpoint that accepts every connection and never answers (nor closes it)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    listener.close()


def _open_in_thread(uri: str, options: dict[str, str], config: dict[str, Any]) -> tuple[BaseException | None, float]:
    """Open a store in a thread (so a hang fails the test instead of hanging it): its error and duration."""
    outcome: list[BaseException | None] = []
    started = time.monotonic()

    def run() -> None:
        try:
            MemoryStore(uri, storage_options=options, embedder=HashEmbedder(32), config=config).close()
            outcome.append(None)
        except BaseException as exc:  # reported below
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, "opening a store on a silent server hung past 60 s"
    return outcome[0], time.monotonic() - started


def test_item19_opening_a_store_on_a_silent_server_fails_at_the_deadline(silent_server: str) -> None:
    options = {
        "endpoint": silent_server,
        "allow_http": "true",
        "aws_access_key_id": "k",
        "aws_secret_access_key": "s",
        "region": "us-east-1",
    }
    error, took = _open_in_thread("s3://bucket/store", options, {"storage_timeout": DEADLINE})
    assert isinstance(error, StorageError), error
    assert "storage_timeout" in str(error) and "2 s" in str(error)
    assert took < 15


class HangingCommits:
    """Stands in for the LanceDB table: reads pass, commits never answer."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def add(self, data: Any) -> Any:
        await asyncio.sleep(3600)


def test_item19_a_commit_that_never_answers_fails_at_the_deadline(tmp_path: Any) -> None:
    store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32), config={"storage_timeout": DEADLINE})
    try:
        store.add("seed", namespace="u")
        store._table._table = HangingCommits(store._table._table)
        started = time.monotonic()
        with pytest.raises(StorageError, match="storage_timeout"):
            store.add("never lands", namespace="u")
        assert time.monotonic() - started < 15
        store._table._table = store._table._table.real
        assert [m.text for m in store.list("u")] == ["seed"]
    finally:
        store.close()


def test_item19_the_deadline_is_configurable_and_checked() -> None:
    assert StoreConfig().storage_timeout == timedelta(seconds=120)
    assert StoreConfig(storage_timeout=None).storage_timeout is None
    with pytest.raises(ConfigError, match="storage_timeout"):
        StoreConfig(storage_timeout=timedelta(0))
