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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


class MeteredProxy:
    """Forwards to ``127.0.0.1:upstream_port``, counting and delaying every request.

    Args:
        upstream_port: The S3 server's port.
        latency_ms: Added before each request is forwarded; change it between measurements.
    """

    def __init__(self, upstream_port: int, latency_ms: float = 0.0) -> None:
        self.upstream_port = upstream_port
        self.latency_ms = latency_ms
        self._lock = threading.Lock()
        self._total = Usage()
        self.abandoned = 0  # answers the client hung up on before they were sent
        self._local = threading.local()  # one keep-alive upstream connection per proxy thread
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the client's connection pool expects

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                proxy._forward(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def storage_options(self) -> dict[str, str]:
        """LanceDB ``storage_options`` that send every request through this proxy."""
        port = self._server.server_address[1]
        return {
            "endpoint": f"http://127.0.0.1:{port}",
            "allow_http": "true",
            "skip_signature": "true",
            "region": "us-east-1",
        }

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

    def _forward(self, req: BaseHTTPRequestHandler) -> None:
        length = int(req.headers.get("content-length") or 0)
        body = req.rfile.read(length) if length else None
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)  # the round trip a region adds, paid by this request only
        resp, data = self._upstream(body, req)
        with self._lock:
            self._total.requests[request_kind(req.command, req.path)] += 1
            self._total.bytes_written += length
            self._total.bytes_read += len(data)
        req.send_response(resp.status, resp.reason)
        for key, value in resp.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                req.send_header(key, value)
        # A HEAD answer has no body but must keep the object's length.
        size = resp.getheader("content-length") if req.command == "HEAD" else str(len(data))
        req.send_header("content-length", size or "0")
        req.end_headers()
        if req.command != "HEAD":
            try:
                req.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up on this answer (a timeout, or a read it no longer needs): it was
                # still counted, as the object store would have served and billed it.
                with self._lock:
                    self.abandoned += 1

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
