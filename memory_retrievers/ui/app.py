"""The inspector's Starlette app: :func:`create_app` over an open store, :data:`ROUTES`, the error pages.

Every handler uses the store's async API on the server's event loop; reads are paged or bounded
(see :mod:`.inventory`). Errors become pages: a missing memory or namespace a 404, a bad
parameter a 400 naming it, a store failure a 500 with the typed error's message (never a
traceback).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from memory_retrievers.errors import ConfigError, InvalidInputError, MemoryRetrieversError, NotFoundError
from memory_retrievers.storage.stats import human_bytes
from memory_retrievers.ui import routes_actions, routes_ask, routes_pages
from memory_retrievers.ui.links import ns_url, path_for
from memory_retrievers.ui.routes_pages import error_page
from memory_retrievers.ui.scans import ScanCache
from memory_retrievers.ui.security import Guard, check_bind

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["ROUTES", "create_app"]

HERE = Path(__file__).resolve().parent

#: Every route of the inspector (the ask page first: ``/ns/{namespace}/{action}`` would take its path).
ROUTES: list[BaseRoute] = [
    *routes_ask.ROUTES,
    Route("/", routes_pages.namespaces, name="namespaces"),
    Route("/ns/{namespace:ns}", routes_pages.namespace, name="namespace"),
    Route("/ns/{namespace:ns}/review", routes_pages.review, name="review"),
    Route("/ns/{namespace:ns}/review", routes_actions.scan, methods=["POST"], name="scan"),
    Route("/ns/{namespace:ns}/m/{id:key}", routes_pages.memory, name="memory"),
    Route("/ns/{namespace:ns}/m/{id:key}/confirm/{action}", routes_actions.confirm_memory, name="confirm"),
    Route("/ns/{namespace:ns}/confirm/{action}", routes_actions.confirm_namespace, name="confirm_namespace"),
    Route(
        "/ns/{namespace:ns}/m/{id:key}/{action}", routes_actions.memory_action, methods=["POST"], name="memory_action"
    ),
    Route("/ns/{namespace:ns}/{action}", routes_actions.namespace_action, methods=["POST"], name="namespace_action"),
    Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
]

#: Flash messages kept for the redirect after an action (the oldest are dropped past this).
_FLASHES_KEPT = 200


class Flashes:
    """Messages shown once after an action's redirect, referred to by a random key in the URL."""

    def __init__(self) -> None:
        self._messages: OrderedDict[str, str] = OrderedDict()

    def add(self, message: str) -> str:
        """Keep ``message``; returns its key (``?flash=<key>``)."""
        key = secrets.token_urlsafe(8)
        self._messages[key] = message
        while len(self._messages) > _FLASHES_KEPT:
            self._messages.popitem(last=False)
        return key

    def get(self, key: str | None) -> str | None:
        """The message of ``key``, if any."""
        return self._messages.get(key) if key else None


def _context(request: Request) -> dict[str, Any]:
    state = request.app.state
    return {
        "read_only": state.read_only,
        "csrf_token": state.csrf_token,
        "namespace": request.path_params.get("namespace"),
        "flash": state.flashes.get(request.query_params.get("flash")),
    }


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"), context_processors=[_context])
    templates.env.globals.update(ns_url=ns_url, path_for=path_for)
    templates.env.filters["when"] = lambda value: value.strftime("%Y-%m-%d %H:%M UTC") if value else "—"
    templates.env.filters["bytes"] = _human_bytes
    return templates


def _human_bytes(n: int | None) -> str:
    return "—" if n is None else human_bytes(n)


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_page(request, 404, "Not found", str(exc) or "no such page")


async def _bad_request(request: Request, exc: Exception) -> Response:
    return error_page(request, 400, "Bad request", str(exc))


async def _store_error(request: Request, exc: Exception) -> Response:
    return error_page(request, 500, "The store failed", f"{type(exc).__name__}: {exc}")


async def _unexpected(request: Request, exc: Exception) -> Response:
    # A bug, not the store: say what broke, never the traceback (the server's log has it).
    return error_page(request, 500, "Unexpected error", f"{type(exc).__name__}: {exc}")


async def _http_error(request: Request, exc: Exception) -> Response:
    status = int(getattr(exc, "status_code", 500))
    return error_page(request, status, "Not found" if status == 404 else "Error", str(getattr(exc, "detail", exc)))


def create_app(
    store: MemoryStore,
    *,
    read_only: bool = False,
    token: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
) -> Starlette:
    """The memory inspector over ``store``, as an ASGI app (serve it, or mount it in your own app).

    Args:
        store: An open :class:`~memory_retrievers.MemoryStore` (local folder or ``s3://``); the app
            never closes it.
        read_only: Refuse every change (POST answers 403) and render no action.
        token: When set, every request must carry it (``Authorization: Bearer``, or the cookie
            set by a first visit with ``?token=``). Needed to serve beyond loopback.
        allowed_hosts: Host names the ``Host`` header may carry besides the loopback names (the
            name people reach the app by).

    Returns:
        A Starlette app; ``app.state`` holds ``store``, ``read_only``, ``templates``, ``csrf_token``.

    Raises:
        ConfigError: ``token`` is not a non-empty string, or ``allowed_hosts`` is a single string.
    """
    if token is not None:
        check_bind("127.0.0.1", token)
    if isinstance(allowed_hosts, str):
        raise ConfigError(f"allowed_hosts must be a list of host names, got the string {allowed_hosts!r}")
    hosts = list(allowed_hosts or [])
    guard = Middleware(Guard, token=token, read_only=bool(read_only), hosts=hosts)
    handlers: dict[Any, Any] = {
        NotFoundError: _not_found,
        InvalidInputError: _bad_request,
        ConfigError: _bad_request,
        MemoryRetrieversError: _store_error,
        Exception: _unexpected,
        404: _http_error,
        405: _http_error,
    }
    app = Starlette(routes=list(ROUTES), middleware=[guard], exception_handlers=handlers)
    app.state.store = store
    app.state.read_only = bool(read_only)
    app.state.templates = _templates()
    app.state.csrf_token = secrets.token_urlsafe(32)
    app.state.scans = ScanCache()
    app.state.flashes = Flashes()
    app.state.summaries = {}
    return app
