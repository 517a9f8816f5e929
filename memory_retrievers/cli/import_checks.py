"""Checking import records before anything is written: every bad record is one rejected line.

A record is rejected with its position ("line 12") when it fails the write path's validation,
names another namespace than the ``-n`` given, or carries a ``vector`` that is not a list of finite
numbers of the store's width; nesting too deep to walk is a rejected line too, never a crash.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from memory_retrievers.cli.formats import Item

__all__ = ["check_records", "check_widths"]


Rejected = list[tuple[str, str]]
"""(where, why) of each rejected record."""


def check_records(
    items: list[Item], kind: str, store_config: Any, namespace: str | None, forced: str | None, rejected: Rejected
) -> list[tuple[str, Any]]:
    """Validate every record before anything is written; rejected ones are listed with their position.

    ``namespace`` is the default for records naming none; ``forced`` is the ``-n`` given on the
    command line: a record naming another namespace is refused (an import never writes where it
    was not told to).
    """
    good: list[tuple[str, Any]] = []
    for item in items:
        if item.record is None:
            problem: str | None = item.error or "unreadable"
        else:
            problem = _record_problem(item.record, kind, store_config, namespace, forced)
        if problem is not None:
            rejected.append((item.where, problem))
            continue
        good.append((item.where, item.record))
    return good


def _record_problem(
    record: dict[str, Any], kind: str, store_config: Any, namespace: str | None, forced: str | None
) -> str | None:
    """Why a record cannot be imported (checked before the store is opened), or ``None``."""
    from memory_retrievers.errors import InvalidInputError
    from memory_retrievers.storage.transfer import parse_restore_record
    from memory_retrievers.validation import validate_record

    if namespace is None and not record.get("namespace"):
        return 'no namespace: add "namespace" to the record or pass -n NAME'
    problem = _vector_problem(record.get("vector"), None)  # first: a restore reads it as an array
    if problem is not None:
        return problem
    try:
        if kind == "export":
            parse_restore_record(record, store_config, namespace=namespace)
        else:
            validate_record(record, store_config, namespace=namespace)
    except InvalidInputError as exc:
        return str(exc)
    except RecursionError:  # a field nested deeper than any check can walk
        return "a field is nested too deeply to read; flatten it"
    named = record.get("namespace")
    # The record validated above, so its namespace obeys the namespace rule: compare canonical forms
    # (an NFD spelling of -n's namespace is that namespace).
    same = named is None or forced is None or _canonical(named) == _canonical(forced)
    if not same:
        return (
            f"names namespace {named!r} but -n is {forced!r}: an import writes only into the namespace it is "
            f"given; drop -n to import it into its own, or pass --into-namespace {forced!r} instead of -n to "
            "copy it there"
        )
    return None


# float32's largest finite value: a larger number is stored as infinity.
_FLOAT32_MAX = 3.4028234663852886e38


def _vector_problem(vector: Any, dimension: int | None) -> str | None:
    """Why a record's ``vector`` cannot be stored (not a list of finite numbers, wrong width), or ``None``."""
    if vector is None:
        return None
    fix = "leave vector out to embed the text"
    if not isinstance(vector, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
        return f"vector must be a JSON list of numbers, got {type(vector).__name__}; {fix}"
    if not all(abs(x) <= _FLOAT32_MAX and x == x for x in vector):  # x == x is False for NaN
        return f"vector must hold finite numbers within float32's range; {fix}"
    if dimension is not None and len(vector) != dimension:
        return f"vector has {len(vector)} numbers but the store's embedder gives {dimension}; {fix}"
    return None


def check_widths(records: list[tuple[str, Any]], dimension: int, rejected: Rejected) -> list[tuple[str, Any]]:
    """Records whose vector (if any) has the store's width; the others are rejected by position, before any write."""
    good = []
    for where, record in records:
        problem = _vector_problem(record.get("vector"), dimension)
        if problem is None:
            good.append((where, record))
        else:
            rejected.append((where, problem))
    return good


def _canonical(namespace: Any) -> Any:
    return unicodedata.normalize("NFC", namespace) if isinstance(namespace, str) else namespace
