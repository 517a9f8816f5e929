"""The inspector's actions: confirmation pages (GET) and changes (POST, CSRF-checked, then a 303 redirect).

Memory actions: ``pin``, ``unpin``, ``edit`` (field ``text``: a new memory that supersedes this
one), ``forget``/``delete`` (``store.delete``: hidden from every read at once, bytes on disk until
purge). Namespace actions: ``forget-namespace`` (``store.forget``), ``purge`` (``store.admin.purge``,
store-wide) and ``merge-duplicates`` (fields ``keep`` and ``drop``: each dropped memory is folded
into the kept one as the formation review does it: links and tags move over, the dropped one is
archived with ``metadata.duplicate_of``, nothing is deleted). Destructive ones need the word their
confirmation page shows typed into the ``confirm`` field.

The review scans (``POST /ns/{namespace}/review``) change nothing, but read the whole namespace
and cost O(n²) in the worst case: they too are a POST carrying the form token, so that no other
site (an ``<img>`` pointing here) can start one; unlike the actions, a read-only inspector runs them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memory_retrievers.errors import InvalidInputError, NotFoundError
from memory_retrievers.ui.links import ns_url, path_for
from memory_retrievers.ui.reads import EVERY_ROW, columns, get_many, get_one, namespace_version
from memory_retrievers.ui.routes_pages import error_page, render
from memory_retrievers.ui.scans import run_scan
from memory_retrievers.ui.security import check_csrf

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = [
    "WORD_CHARS",
    "confirm_memory",
    "confirm_namespace",
    "confirm_word",
    "memory_action",
    "memory_word",
    "namespace_action",
    "scan",
]

MEMORY_ACTIONS = ("pin", "unpin", "edit", "forget", "delete")
NAMESPACE_ACTIONS = ("forget-namespace", "purge", "merge-duplicates")
_CONFIRMED_MEMORY = ("forget", "delete")
_CONFIRMED_NAMESPACE = ("forget-namespace", "purge")


#: How many of a memory id's first characters its forget confirmation asks for (more only when needed).
WORD_CHARS = 8


def confirm_word(action: str, namespace: str, memory_id: str | None = None, others: Iterable[str] = ()) -> str:
    """The word a confirmation page asks for: the memory id's first 8 characters, the namespace, or ``purge``.

    A memory id is asked for by its first :data:`WORD_CHARS` characters, or by as many more as it
    takes to tell it from every id in ``others`` (the namespace's other ids that start with the same
    8: ``note-0001`` and ``note-0002`` are asked for whole): the word typed for one memory never
    confirms another's removal.
    """
    if action == "purge":
        return "purge"
    if memory_id is None:
        return namespace
    shared = max((_common_prefix(memory_id, o) for o in others if o != memory_id), default=0)
    return memory_id[: max(WORD_CHARS, shared + 1)]


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


async def memory_word(store: MemoryStore, namespace: str, action: str, memory_id: str) -> str:
    """:func:`confirm_word` of a memory, against the ids of its namespace that share its first 8 characters."""
    ids = (await columns(store, namespace, ["id"])).column("id")
    alike = ids.filter(pc.starts_with(ids, pattern=memory_id[:WORD_CHARS])).to_pylist()
    return confirm_word(action, namespace, memory_id, alike)


def _check_action(action: str, valid: tuple[str, ...]) -> None:
    if action not in valid:
        raise InvalidInputError(f"action must be one of {', '.join(valid)}, got {action!r}")


def _store(request: Request) -> MemoryStore:
    store: MemoryStore = request.app.state.store
    return store


async def confirm_memory(request: Request) -> Response:
    """What forgetting one memory removes, and which older memory becomes live again."""
    ns, memory_id, action = (request.path_params[k] for k in ("namespace", "id", "action"))
    _check_action(action, _CONFIRMED_MEMORY)
    store = _store(request)
    memory = await get_one(store, ns, memory_id)
    revived = None
    # The store makes live again whatever this memory superseded, even when a newer one supersedes
    # this memory in turn (forgetting the middle of a chain leaves two live memories).
    if memory.supersedes is not None:
        try:
            older = await get_one(store, ns, memory.supersedes)
        except NotFoundError:
            older = None
        revived = older if older is not None and older.superseded_by == memory.id else None
    ctx = {"action": action, "m": memory, "revived": revived, "word": await memory_word(store, ns, action, memory_id)}
    return render(request, "confirm.html", ctx)


async def confirm_namespace(request: Request) -> Response:
    """What forgetting a namespace or purging the store removes."""
    ns, action = request.path_params["namespace"], request.path_params["action"]
    _check_action(action, _CONFIRMED_NAMESPACE)
    store = _store(request)
    ctx: dict[str, Any] = {"action": action, "word": confirm_word(action, ns)}
    if action == "forget-namespace":
        ctx["rows"] = await store.acount(ns, filter=EVERY_ROW)  # every row forget removes
        if ctx["rows"] == 0:
            raise NotFoundError(f"namespace {ns!r} holds no memory", [ns])
    else:
        ctx["stats"] = await store.admin.astats()
    return render(request, "confirm.html", ctx)


async def _form(request: Request) -> FormData | Response:
    """The request's form when its CSRF token is right, else the 403 page."""
    form = await request.form()
    if not check_csrf(request.app.state.csrf_token, form.get("csrf_token")):
        return error_page(request, 403, "Refused", "the form's csrf_token is missing or wrong: reload the page")
    return form


def _back(request: Request, url: str, message: str) -> RedirectResponse:
    key = request.app.state.flashes.add(message)
    sep = "&" if "?" in url else "?"
    return RedirectResponse(f"{url}{sep}flash={key}", status_code=303)


def _confirmed(form: FormData, word: str) -> None:
    if form.get("confirm") != word:
        raise InvalidInputError(f"confirm must be the exact word {word!r}; nothing was changed")


async def memory_action(request: Request) -> Response:
    """Run ``pin``, ``unpin``, ``edit``, ``forget`` or ``delete`` on one memory."""
    ns, memory_id, action = (request.path_params[k] for k in ("namespace", "id", "action"))
    _check_action(action, MEMORY_ACTIONS)
    form = await _form(request)
    if isinstance(form, Response):
        return form
    store = _store(request)
    if action in ("pin", "unpin"):
        await store.aupdate(memory_id, namespace=ns, pinned=action == "pin")
        return _back(request, ns_url(request, "memory", ns, id=memory_id), f"{action}ned {memory_id}")
    if action == "edit":
        text = form.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("text must be the new, non-empty text of the memory")
        new = await store.asupersede(memory_id, text, namespace=ns)
        message = f"{memory_id} superseded by {new.id}" + (f" ({new.reason})" if new.reason else "")
        return _back(request, ns_url(request, "memory", ns, id=new.id), message)
    _confirmed(form, await memory_word(store, ns, action, memory_id))
    deleted = await store.adelete([memory_id], namespace=ns)
    request.app.state.summaries.clear()
    message = f"forgot {deleted} memory ({memory_id}); its bytes stay on disk until purge"
    return _back(request, ns_url(request, "namespace", ns), message)


async def namespace_action(request: Request) -> Response:
    """Run ``forget-namespace``, ``purge`` or ``merge-duplicates``."""
    ns, action = request.path_params["namespace"], request.path_params["action"]
    _check_action(action, NAMESPACE_ACTIONS)
    form = await _form(request)
    if isinstance(form, Response):
        return form
    store = _store(request)
    if action == "merge-duplicates":
        return await _merge(request, store, ns, form)
    _confirmed(form, confirm_word(action, ns))
    request.app.state.summaries.clear()
    if action == "purge":
        await store.admin.apurge()
        return _back(request, path_for(request, "namespaces"), "purged: deleted and forgotten memories are off disk")
    count = await store.aforget(ns)
    request.app.state.scans.drop(ns)
    return _back(request, path_for(request, "namespaces"), f"forgot namespace {ns!r}: {count} memories")


async def scan(request: Request) -> Response:
    """Run the review scans of a namespace, then show them (a POST with the form token, see the module docstring)."""
    ns = request.path_params["namespace"]
    form = await _form(request)
    if isinstance(form, Response):
        return form
    store = _store(request)
    version = await namespace_version(store, ns)  # read first: a write during the scan makes it "older"
    if await store.acount(ns, filter=EVERY_ROW) == 0:
        raise NotFoundError(f"namespace {ns!r} holds no memory", [ns])
    found = await run_scan(store, ns, version)
    request.app.state.scans.put(found)
    message = f"scanned {found.memories} knowledge memories in {found.seconds:.2f} s"
    return _back(request, ns_url(request, "review", ns), message)


async def _merge(request: Request, store: MemoryStore, ns: str, form: FormData) -> Response:
    from memory_retrievers.formation.review import _fold  # the review's own fold, one group at a time

    keep_id = form.get("keep")
    drops = [d for d in form.getlist("drop") if isinstance(d, str) and d]
    if not isinstance(keep_id, str) or not keep_id or not drops:
        raise InvalidInputError("merge-duplicates needs keep (the id kept) and at least one drop (an id to fold in)")
    if keep_id in drops:
        raise InvalidInputError(f"drop must not name the kept memory {keep_id!r}")
    # Every id is read before anything changes: an id of another namespace (or a gone one) is a 404
    # that leaves the group as it was, not half merged.
    dropped = await get_many(store, ns, [keep_id, *drops])
    for drop in dropped[1:]:
        keep = await get_one(store, ns, keep_id)  # re-read: the previous fold changed its links/tags
        await _fold(store, ns, keep, drop)
    message = f"merged {len(drops)} duplicate(s) into {keep_id}: archived, not deleted"
    return _back(request, ns_url(request, "review", ns), message)
