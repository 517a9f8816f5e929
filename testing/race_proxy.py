"""An HTTP proxy in front of an S3 server that forces two commits to race, with or without conditional PUT.

Used by tests/object_storage and benchmarks/commit_race.py to show what LanceDB's commits need
from an object store (see docs/how-to/object-storage.md); not part of the library (nor of its wheel). Put
it in front of a :class:`~testing.local_s3.LocalS3Server` started with ``anonymous=True``: requests
through it are unsigned, since removing a header would break a signature.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackProxy", "OutageProxy", "RaceProxy"]


class LoopbackProxy(ABC):
    """An HTTP proxy on 127.0.0.1 in front of an S3 server; a subclass decides how to forward.

    Serving starts when the constructor returns: a subclass sets its own state before calling it.

    Args:
        upstream_port: The S3 server's port on 127.0.0.1.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the client's connection pool expects

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                proxy.forward(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>`` of the proxy."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def storage_options(self) -> dict[str, str]:
        """LanceDB ``storage_options`` through the proxy (unsigned: the server must allow anonymous)."""
        return {"endpoint": self.endpoint, "allow_http": "true", "skip_signature": "true", "region": "us-east-1"}

    @abstractmethod
    def forward(self, req: BaseHTTPRequestHandler) -> None:
        """Pass one request on to the server and its answer back (see :meth:`relay`)."""

    @staticmethod
    def relay(req: BaseHTTPRequestHandler, resp: http.client.HTTPResponse, data: bytes) -> None:
        """Send the server's answer (already read into ``data``) back to the client."""
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
        """Stop serving, and end the connections the client's pool still keeps open."""
        self._server.shutdown()
        self._server.server_close()
        self._server.end_connections()
        self._thread.join(5)


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that can end its kept-alive connections (their threads then exit)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def end_connections(self) -> None:
        """Shut every open connection down: a handler blocked reading the next request gets end of file."""
        with self._open_lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)


class RaceProxy(LoopbackProxy):
    """An HTTP proxy to the S3 server that makes two commits race for the same table version.

    Lance commits by writing ``_versions/<n>.manifest`` with ``If-None-Match: *``: the write fails
    if another writer created version ``n`` first. When :attr:`armed`, the proxy holds the first
    manifest PUT until a second one arrives (at most ``hold_s``), then forwards both at once, so
    both writers have read the same version and both ask for the next one. With
    ``drop_if_none_match`` it also removes that header: a store that ignores conditional PUTs.

    Args:
        upstream_port: The S3 server's port on 127.0.0.1.
        drop_if_none_match: Remove ``If-None-Match`` from every request.
        hold_s: How long a held PUT waits for a partner before it goes alone.
    """

    def __init__(self, upstream_port: int, *, drop_if_none_match: bool, hold_s: float = 20.0) -> None:
        self.drop = {"if-none-match"} if drop_if_none_match else set()
        self.hold_s = hold_s
        self.armed = False
        self.raced = 0  # manifest PUTs released together
        self.outcomes: list[int] = []  # status of every manifest PUT, in order
        self._lock = threading.Lock()
        self._waiting: threading.Event | None = None
        super().__init__(upstream_port)

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
        """Pass one request to the server (holding a manifest PUT when armed) and its answer back."""
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
        self.relay(req, resp, data)


class OutageProxy(LoopbackProxy):
    """An HTTP proxy to the S3 server that cuts the network right after a commit landed.

    When :attr:`armed`, the first manifest PUT (``_versions/<n>.manifest``: the commit itself) is
    forwarded and answered; from then on, for ``outage_s`` seconds, every request's connection is
    closed without an answer, as a network that drops. A writer then sees its commit's follow-up
    requests (the LIST after the PUT, the reads after the commit) fail although the commit landed.

    Args:
        upstream_port: The S3 server's port on 127.0.0.1.
        outage_s: How long the network stays down after the commit.
    """

    def __init__(self, upstream_port: int, *, outage_s: float) -> None:
        self.outage_s = outage_s
        self.armed = False
        self.dropped = 0  # requests dropped during the outage
        self._down_until = 0.0
        self._lock = threading.Lock()
        super().__init__(upstream_port)

    def forward(self, req: BaseHTTPRequestHandler) -> None:
        """Pass one request on, unless the network is down (then close its connection unanswered)."""
        with self._lock:
            down = time.monotonic() < self._down_until
            if down:
                self.dropped += 1
        length = int(req.headers.get("content-length") or 0)
        body = req.rfile.read(length) if length else None
        if down:
            req.close_connection = True
            return
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            conn.request(req.command, req.path, body=body, headers=dict(req.headers.items()))
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if req.command == "PUT" and "/_versions/" in req.path and resp.status < 300:
            with self._lock:
                if self.armed:
                    self.armed = False
                    self._down_until = time.monotonic() + self.outage_s
        self.relay(req, resp, data)
