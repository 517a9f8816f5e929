"""The inspector's read pages: namespaces, one namespace, a memory's life, the review queues."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.ui.inventory import NamespaceSummary, memory_page, namespace_summary, namespaces_page
from memory_retrievers.ui.life import memory_life
from memory_retrievers.ui.reads import namespace_version
from memory_retrievers.ui.timeline import bucket_timeline, timeline_svg

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["error_page", "int_param", "memory", "namespace", "namespaces", "review"]

#: Namespace summaries kept per app (each keyed by namespace and store version).
_SUMMARIES_KEPT = 64


def int_param(request: Request, name: str, default: int) -> int:
    """A whole-number query parameter.

    Raises:
        InvalidInputError: The parameter is not a whole number (the message names it).
    """
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidInputError(f"{name} must be a whole number, got {raw!r}") from None


def _flag(request: Request, name: str) -> bool:
    """A ``1``-or-absent query parameter.

    Raises:
        InvalidInputError: Any other value (the message names the parameter).
    """
    raw = request.query_params.get(name)
    if raw not in (None, "", "0", "1"):
        raise InvalidInputError(f"{name} must be 1 or absent, got {raw!r}")
    return raw == "1"


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    """Render a page with the app's templates."""
    response: Response = request.app.state.templates.TemplateResponse(request, template, context, status_code=status)
    return response


def error_page(request: Request, status: int, title: str, message: str) -> Response:
    """An HTML error page (the message is escaped by the template)."""
    return render(request, "error.html", {"status": status, "title": title, "message": message}, status)


def _store(request: Request) -> MemoryStore:
    store: MemoryStore = request.app.state.store
    return store


async def namespaces(request: Request) -> Response:
    """Every namespace, 50 per page, with counts, size, dates, pending maintenance and scan flags."""
    prefix = request.query_params.get("prefix", "")
    view = await namespaces_page(
        _store(request), page=int_param(request, "page", 1), prefix=prefix, scans=request.app.state.scans.all()
    )
    return render(request, "namespaces.html", {"view": view})


async def _summary(request: Request, ns: str) -> NamespaceSummary:
    """The namespace's summary, read once per store version."""
    store = _store(request)
    cache: dict[tuple[str, int], NamespaceSummary] = request.app.state.summaries
    version = await namespace_version(store, ns)
    found = cache.get((ns, version))
    if found is None:
        found = await namespace_summary(store, ns)
        if len(cache) >= _SUMMARIES_KEPT:
            cache.pop(next(iter(cache)))
        cache[(ns, found.version)] = found
    return found


async def namespace(request: Request) -> Response:
    """A namespace: summary, timeline, and its memories 50 per page (filter by kind and text)."""
    ns = request.path_params["namespace"]
    summary = await _summary(request, ns)
    page = await memory_page(
        _store(request),
        ns,
        page=int_param(request, "page", 1),
        kind=request.query_params.get("kind"),
        q=request.query_params.get("q", "").strip() or None,  # a blank filter box filters nothing
        hidden=_flag(request, "hidden"),
    )
    timeline = bucket_timeline(summary.daily)
    scan = request.app.state.scans.get(ns)
    ctx = {
        "summary": summary,
        "summary_now": _store(request).clock(),
        "page": page,
        "timeline": timeline,
        "timeline_svg": timeline_svg(timeline),
        "scan": scan,
    }
    return render(request, "namespace.html", ctx)


async def memory(request: Request) -> Response:
    """A memory's life: text and fields, supersession chain, links, provenance, access, lifecycle."""
    ns, memory_id = request.path_params["namespace"], request.path_params["id"]
    life = await memory_life(_store(request), ns, memory_id, scan=request.app.state.scans.get(ns))
    return render(request, "memory.html", {"life": life, "m": life.memory})


async def review(request: Request) -> Response:
    """The duplicate and contradiction queues of a namespace, as its last scan found them (scans are POSTs)."""
    ns = request.path_params["namespace"]
    if "scan" in request.query_params:  # the scans read the whole namespace: never from a link or an <img>
        raise InvalidInputError("scan: the scans run from this page's button (a POST with its form token), not a link")
    summary = await _summary(request, ns)  # a 404 for an empty namespace
    version = await namespace_version(_store(request), ns)
    scan = request.app.state.scans.get(ns)
    ctx = {"summary": summary, "scan": scan, "current": scan is not None and scan.version == version}
    return render(request, "review.html", ctx)
