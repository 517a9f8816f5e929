"""An HTTP proxy in front of a loopback S3 server that counts requests and bytes and adds latency.

Why: a capacity plan needs what one operation costs in object-store requests, bytes and waiting,
and a loopback server answers in well under a millisecond where a real region takes 20-50 ms per
request. The proxy sleeps ``latency_ms`` before forwarding each request (requests LanceDB issues in
parallel still overlap, as they would in a region) and counts every request by type.

Requests through it are unsigned (``skip_signature``): start the server with ``anonymous=True``.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from testing.race_proxy import LoopbackProxy

KINDS = ("GET", "PUT", "LIST", "HEAD", "DELETE", "POST")


def request_kind(method: str, path: str) -> str:
    """GET, PUT, LIST, HEAD, DELETE or POST (multipart create/complete) for one S3 request."""
    query = path.partition("?")[2]
    if method == "GET" and ("list-type=" in query or "prefix=" in query or "delimiter=" in query):
        return "LIST"
    return method


@dataclass
class Usage:
    """Requests by kind and bytes moved during one measured operation, and its wall time."""

    requests: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0  # response bodies (GET, LIST)
    bytes_written: int = 0  # request bodies (PUT, POST)
    ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: every kind listed (zeros included), a total, bytes and milliseconds."""
        kinds = {k: self.requests.get(k, 0) for k in KINDS}
        return {
            "requests": kinds,
            "total_requests": sum(kinds.values()),
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "ms": round(self.ms, 2),
        }


class MeteredProxy(LoopbackProxy):
    """Forwards to ``127.0.0.1:upstream_port``, counting and delaying every request.

    Args:
        upstream_port: The S3 server's port.
        latency_ms: Added before each request is forwarded; change it between measurements.
    """

    def __init__(self, upstream_port: int, latency_ms: float = 0.0) -> None:
        self.latency_ms = latency_ms
        self._lock = threading.Lock()
        self._total = Usage()
        self.abandoned = 0  # answers the client hung up on before they were sent
        self._local = threading.local()  # one keep-alive upstream connection per proxy thread
        # Every upstream connection opened, closed by close(): a thread-local one left to the garbage
        # collector warns (ResourceWarning) inside whatever runs next, a test under filterwarnings=error.
        self._opened: list[http.client.HTTPConnection] = []
        super().__init__(upstream_port)

    def close(self) -> None:
        """Stop serving and close every upstream connection."""
        super().close()
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()

    @contextmanager
    def measure(self) -> Iterator[Usage]:
        """Usage of the ``with`` body: requests and bytes counted by the proxy, wall time around it."""
        usage = Usage()
        before = self._copy()
        t0 = time.perf_counter()
        try:
            yield usage
        finally:
            usage.ms = (time.perf_counter() - t0) * 1000
            after = self._copy()
            usage.requests = after.requests - before.requests
            usage.bytes_read = after.bytes_read - before.bytes_read
            usage.bytes_written = after.bytes_written - before.bytes_written

    def _copy(self) -> Usage:
        with self._lock:
            t = self._total
            return Usage(Counter(t.requests), t.bytes_read, t.bytes_written)

    def _upstream(self, body: bytes | None, req: BaseHTTPRequestHandler) -> tuple[http.client.HTTPResponse, bytes]:
        for attempt in (0, 1):  # a kept-alive connection the server closed meanwhile: reconnect once
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
                with self._lock:
                    self._opened.append(conn)
            try:
                conn.request(req.command, req.path, body=body, headers=dict(req.headers.items()))
                resp = conn.getresponse()
                return resp, resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def forward(self, req: BaseHTTPRequestHandler) -> None:
        """Delay, forward on this thread's kept-alive connection, count, and relay the answer."""
        length = int(req.headers.get("content-length") or 0)
        body = req.rfile.read(length) if length else None
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)  # the round trip a region adds, paid by this request only
        resp, data = self._upstream(body, req)
        with self._lock:
            self._total.requests[request_kind(req.command, req.path)] += 1
            self._total.bytes_written += length
            self._total.bytes_read += len(data)
        try:
            self.relay(req, resp, data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up on this answer (a timeout, or a read it no longer needs): it was
            # still counted, as the object store would have served and billed it.
            with self._lock:
                self.abandoned += 1
