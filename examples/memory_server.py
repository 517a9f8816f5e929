"""A tiny memory service for several worker processes: add and recall over HTTP, no web framework.

Why this example: app servers run several worker processes, and pre-forking ones (gunicorn,
Celery's prefork pool) copy a parent process into each. A store must then be opened in each worker,
never inherited: ``PerProcess`` opens it on a worker's first request. Every worker reads with the
default ``read_consistency_interval`` (0), so a memory added through one worker is found by the
next request, whichever worker serves it. The same functions are served as WSGI (``app``) and
ASGI (``asgi_app``):

    cd examples
    gunicorn --workers 3 --preload --bind 127.0.0.1:8000 memory_server:app
    uvicorn --workers 3 --port 8000 memory_server:asgi_app
    curl -s -X POST localhost:8000/add -d '{"namespace": "alice", "text": "Alice prefers tea"}'
    curl -s 'localhost:8000/recall?namespace=alice&q=what+does+alice+drink'

Environment: ``MEMORY_SERVER_STORE`` (folder, default ``./memories``); ``MEMORY_SERVER_EMBEDDER=hash``
swaps the model for the hash test double (fast tests); ``MEMORY_SERVER_OPEN_IN_PARENT=1`` opens the
store at import, i.e. in gunicorn's parent with ``--preload``, the pattern the library guards against
(each worker then still opens its own store; see docs/how-to/deploy.md).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore, PerProcess


def _open() -> MemoryStore:
    embedder = HashEmbedder(32) if os.environ.get("MEMORY_SERVER_EMBEDDER") == "hash" else None
    return MemoryStore(os.environ.get("MEMORY_SERVER_STORE", "./memories"), embedder=embedder)


stores = PerProcess(_open)  # opened in each worker on its first request, never inherited

if os.environ.get("MEMORY_SERVER_OPEN_IN_PARENT") == "1":
    stores.get().add("opened in the parent process", namespace="server-parent")


def handle(method: str, path: str, query: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    """One request: ``POST /add``, ``GET /recall``, ``GET /list`` or ``GET /health``."""
    store = stores.get()
    if method == "POST" and path == "/add":
        data = json.loads(body or b"{}")
        added = store.add(data["text"], namespace=data["namespace"], id=data.get("id"), dedup=False)
        return 200, {"id": added.id, "action": added.action.value}
    if method == "GET" and path == "/recall":
        result = MemoryRetriever(store, namespace=query["namespace"]).recall(query["q"], k=int(query.get("k", "5")))
        return 200, {"memories": [{"id": m.id, "text": m.text} for m in result.memories]}
    if method == "GET" and path == "/list":
        return 200, {"ids": [m.id for m in store.list(query["namespace"], limit=10_000)]}
    if method == "GET" and path == "/health":
        return 200, {"ok": True}
    return 404, {"error": f"no route {method} {path}"}


def _respond(method: str, path: str, raw_query: str, body: bytes) -> tuple[int, bytes]:
    query = {k: v[0] for k, v in parse_qs(raw_query).items()}
    try:
        status, payload = handle(method, path, query, body)
    except Exception as exc:  # the client sees the typed error's message
        status, payload = 500, {"error": f"{type(exc).__name__}: {exc}"}
    payload["pid"] = os.getpid()  # which worker served it
    return status, json.dumps(payload).encode()


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The WSGI entry point (gunicorn)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    status, out = _respond(environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("QUERY_STRING", ""), body)
    start_response(f"{status} {'OK' if status == 200 else 'Error'}", [("Content-Type", "application/json")])
    return [out]


async def asgi_app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    """The ASGI entry point (uvicorn): the sync handler runs on a thread, so the event loop keeps serving."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    query = scope.get("query_string", b"").decode()
    status, out = await asyncio.to_thread(_respond, scope["method"], scope["path"], query, body)
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": out})
