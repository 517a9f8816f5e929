"""The argument checks of a store call, run before any I/O.

A :class:`~memory_retrievers.ShardedMemoryStore` runs them before it opens the shard a call is
routed to: opening a shard creates its table (and folder), so a call refused only by the shard
itself left a new, empty shard behind. They are the plain store's own checks (``StoreBase._ns``,
``_check_int``, ``_records``... and :mod:`~memory_retrievers.validation`), looked up by parameter
name: every public method of the store names the same thing the same way (``namespace``, ``k``,
``filter``, ``ids``...). :func:`checker` refuses a method with a parameter no check knows, when
the class is built: a new routed method cannot skip them silently.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.filters import build_where, coerce_filter
from memory_retrievers.models import FtsField
from memory_retrievers.store.base import MAX_PAGE, MAX_QUERY_K
from memory_retrievers.validation import MAX_QUERY_CHARS, check_key, check_text, to_utc

if TYPE_CHECKING:
    from memory_retrievers.store.base import StoreBase

__all__ = ["Checker", "check_batch_size", "check_progress", "checker"]

#: ``(store, arguments by name)``; may replace an argument by its checked form (a one-shot iterator
#: of records by a list, so the checks do not use it up before the call).
Check = Callable[["StoreBase", dict[str, Any]], None]

#: ``(store, args, kwargs)`` -> the same call's ``(args, kwargs)``, checked.
Checker = Callable[["StoreBase", tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]


def check_batch_size(size: Any) -> None:
    """Refuse a ``batch_size`` that is not a positive int (``add_many``'s check)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInputError(f"batch_size must be a positive int, got {size!r}")


def check_progress(progress: Any) -> None:
    """Refuse a ``progress`` that is not True, False or None (``add_many``'s check)."""
    if progress is not None and not isinstance(progress, bool):
        raise InvalidInputError(f"progress must be True, False or None, got {progress!r}")


def _namespace(store: StoreBase, a: dict[str, Any]) -> None:
    store._ns(a["namespace"])


def _filter(store: StoreBase, a: dict[str, Any]) -> None:
    build_where(store._ns(a["namespace"]), coerce_filter(a["filter"]))


def _int(name: str, low: int, high: int, *, optional: bool = False) -> Check:
    def check(store: StoreBase, a: dict[str, Any]) -> None:
        if a[name] is not None or not optional:
            store._check_int(a[name], name, low, high)

    return check


def _ids(store: StoreBase, a: dict[str, Any]) -> None:
    store._ids(a["ids"])


def _dedup(store: StoreBase, a: dict[str, Any]) -> None:
    store._check_dedup(a["dedup"])


def _key(name: str) -> Check:
    def check(store: StoreBase, a: dict[str, Any]) -> None:
        check_key(a[name], field=name, max_chars=store.config.max_key_chars)

    return check


def _record(store: StoreBase, a: dict[str, Any]) -> None:
    store._records([{**a["fields"], "text": a["text"], "namespace": a["namespace"]}], None)


def _changed_fields(store: StoreBase, a: dict[str, Any]) -> None:
    """``update``'s fields: the store's checks, and each value as a record would have it."""
    fields = a["fields"]
    if not fields:
        raise InvalidInputError("update() needs at least one field to change")
    for fixed in ("id", "namespace"):
        if fixed in fields:
            raise InvalidInputError(f"{fixed} cannot be changed by update(); add a new memory instead")
    # The memory's own text stands in when the update leaves it: each field is checked on its own.
    store._records([{"text": "unchanged", **fields, "namespace": a["namespace"]}], None)


def _new(store: StoreBase, a: dict[str, Any]) -> None:
    """``supersede``'s new record: a text, or fields with a text (the text is never inherited)."""
    new = a["new"]
    if isinstance(new, str):
        check_text(new, max_chars=store.config.max_text_chars)
        return
    if not isinstance(new, Mapping):
        raise InvalidInputError(f"new must be a text or a dict of fields with 'text', got {type(new).__name__}")
    store._records([{**new, "supersedes": a["old_id"], "namespace": a["namespace"]}], None)
    if new.get("id") is not None and new["id"] == a["old_id"]:
        raise InvalidInputError("the new memory needs an id different from old_id")


def _one_namespace(method: str) -> Check:
    """Records of a call that writes one namespace: every one valid and of that namespace."""

    def check(store: StoreBase, a: dict[str, Any]) -> None:
        if isinstance(a["records"], Iterator):
            a["records"] = list(a["records"])
        ns = store._ns(a["namespace"])
        other = next((r["namespace"] for r in store._records(a["records"], ns) if r["namespace"] != ns), None)
        if other is not None:
            raise InvalidInputError(f"{method}() writes one namespace ({ns!r}); a record names {other!r}")

    return check


_records = _one_namespace("replace")


def _text_query(store: StoreBase, a: dict[str, Any]) -> None:
    check_text(a["query"], field="query", max_chars=MAX_QUERY_CHARS)


def _any_query(store: StoreBase, a: dict[str, Any]) -> None:
    if isinstance(a["query"], str):
        _text_query(store, a)
    else:
        store._vectors.given(a["query"], source="the query vector")


def _entities(store: StoreBase, a: dict[str, Any]) -> None:
    entities = a["entities"]
    if isinstance(entities, str):
        raise InvalidInputError(f"entities must be a list of str; wrap it: [{entities!r}]")
    if not isinstance(entities, Iterable):
        raise InvalidInputError(f"entities must be a list of str, got {type(entities).__name__}")
    a["entities"] = entities = list(entities)  # a generator checked here would reach the shard empty
    for entity in entities:
        check_key(entity, field="entity", max_chars=store.config.max_key_chars)


def _field(store: StoreBase, a: dict[str, Any]) -> None:
    try:
        FtsField(a["field"])
    except ValueError:
        valid = ", ".join(f.value for f in FtsField)
        raise InvalidInputError(f"field must be one of {valid}, got {a['field']!r}") from None


def _at(store: StoreBase, a: dict[str, Any]) -> None:
    if a["at"] is not None:
        to_utc(a["at"], "at")


def _max_age(store: StoreBase, a: dict[str, Any]) -> None:
    age = a["max_age_s"]
    if isinstance(age, bool) or not isinstance(age, (int, float)):
        raise InvalidInputError(f"max_age_s must be a number of seconds, got {age!r}")


def _unchecked(store: StoreBase, a: dict[str, Any]) -> None:
    """Any value is taken (a flag read for its truth)."""


#: The check of each parameter, by name (a method's own meaning of a name: see ``_BY_METHOD``).
_BY_NAME: dict[str, Check] = {
    "namespace": _namespace,
    "filter": _filter,
    "k": _int("k", 1, MAX_QUERY_K),
    "limit": _int("limit", 1, MAX_PAGE),
    "offset": _int("offset", 0, MAX_PAGE),
    "ids": _ids,
    "id": _key("id"),
    "old_id": _key("old_id"),
    "dedup": _dedup,
    "new": _new,
    "records": _records,
    "entities": _entities,
    "field": _field,
    "at": _at,
    "max_age_s": _max_age,
    "missing_ok": _unchecked,
    "include_vector": _unchecked,
    "include_vectors": _unchecked,
    "newest_first": _unchecked,
}

_BY_METHOD: dict[tuple[str, str], Check] = {
    ("aadd", "text"): _record,
    ("aadd", "fields"): _unchecked,  # with the text, as one record
    ("add_later", "text"): _record,
    ("add_later", "fields"): _unchecked,
    ("add_many_later", "records"): _one_namespace("add_many_later"),
    ("aexport", "limit"): _int("limit", 1, MAX_PAGE, optional=True),  # None: every memory
    ("aupdate", "fields"): _changed_fields,
    ("avector_search", "query"): _any_query,
    ("afts_search", "query"): _text_query,
}


def checker(method: Callable[..., Any]) -> Checker:
    """The checks of a store method's arguments, to run before the call does any I/O.

    Args:
        method: A method of the store (``self`` first), e.g. ``ReadAPI.alist``.

    Returns:
        A function of ``(store, args, kwargs)`` that raises what the store raises for bad input,
        and returns the call's arguments (a one-shot iterator of records made a list).

    Raises:
        TypeError: ``method`` has a parameter no check knows (add one here).
    """
    signature = inspect.signature(method)
    params = list(signature.parameters.values())[1:]
    signature = signature.replace(parameters=params)
    name = method.__name__
    checks = []
    for param in params:
        check = _BY_METHOD.get((name, param.name)) or _BY_NAME.get(param.name)
        if check is None:
            raise TypeError(f"no argument check for {param.name!r} of {method.__qualname__}: add one to _call_checks")
        checks.append(check)

    def run(store: StoreBase, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        bound = signature.bind(*args, **kwargs)  # a missing or unknown argument: the call's own TypeError
        bound.apply_defaults()
        for check in checks:
            check(store, bound.arguments)
        return bound.args, bound.kwargs

    return run
