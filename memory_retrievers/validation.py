"""Checks that turn user values into storable ones, or raise a typed error that says what to do.

Nothing here touches storage: a record is fully validated before any write starts, so a bad
record never leaves a table half-written.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from memory_retrievers.config import StoreConfig
from memory_retrievers.errors import InvalidInputError
from memory_retrievers.models import MemoryKind
from memory_retrievers.storage.fields import WRITABLE_FIELDS

__all__ = [
    "LIFECYCLE_TIERS",
    "MAX_QUERY_CHARS",
    "WRITABLE_FIELDS",
    "check_key",
    "check_text",
    "content_hash",
    "normalise_for_hash",
    "parse_kind",
    "to_utc",
    "validate_record",
]

#: Longest query any search or recall accepts, in characters (one limit everywhere; adapters cut a
#: chat message to it before recalling for it). Long BM25 queries are slow, and the default model
#: reads only its first 256 word pieces.
MAX_QUERY_CHARS = 4_000

PRIORITY_RANGE = (0.0, 10.0)
IMPORTANCE_RANGE = (0.0, 1.0)

_INNER_WS = re.compile(r"(?<=\S)[ \t\u00a0]+(?=\S)")

#: The lifecycle tiers of a formed memory, in order (see :mod:`memory_retrievers.formation.lifecycle`).
LIFECYCLE_TIERS: tuple[str, ...] = ("candidate", "validated", "archived")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_text(value: Any, *, field: str = "text", max_chars: int, allow_empty: bool = False) -> str:
    """Return ``value`` if it is storable text, else raise :class:`InvalidInputError`.

    Valid text is stored verbatim (no trimming, no Unicode rewriting).
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a str, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InvalidInputError(f"{field} is empty or whitespace only; pass the text to remember")
    if len(value) > max_chars:
        raise InvalidInputError(
            f"{field} has {len(value):,} characters, over the limit of {max_chars:,}; split it into "
            f"smaller memories or raise StoreConfig.max_text_chars / max_context_chars"
        )
    if "\x00" in value:
        raise InvalidInputError(f"{field} contains a NUL character (\\x00); remove it before storing")
    if _has_surrogate(value):
        raise InvalidInputError(
            f"{field} contains a lone UTF-16 surrogate and is not valid Unicode; decode the source "
            f"bytes with errors='replace' or fix the text"
        )
    return value


def check_key(value: Any, *, field: str, max_chars: int) -> str:
    """Validate an identifier-like value (namespace, id, session, tag...).

    Quotes, SQL fragments and any Unicode are fine: these values always reach LanceDB as escaped
    literals, never spliced into a filter.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a non-empty str, got {type(value).__name__}")
    if not value or not value.strip():
        raise InvalidInputError(f"{field} must be a non-empty str, got {value!r}")
    return check_text(value, field=field, max_chars=max_chars)


# Characters that render as nothing (or as a line break) inside an otherwise identical-looking
# namespace: C0/C1 controls are caught by category, these by name.
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u2028\u2029")


def check_namespace(value: Any, *, max_chars: int) -> str:
    """Validate a namespace and bring it to its one canonical form.

    The rule, applied at every entry point (store, retrievers, adapters, records): a namespace is
    compared exactly, case included (``"Alice"`` and ``"alice"`` are two tenants, as user ids are in
    LangGraph and most identity systems; folding case could merge two real users). Unicode is
    normalised to NFC, so the composed and decomposed spellings of ``"émile"`` (which look and are
    the same text) name one namespace. What only looks like another namespace is refused rather than
    silently made a new tenant: leading or trailing whitespace, control characters (a newline, a
    tab) and invisible characters (zero-width spaces, a byte-order mark).

    Returns:
        The namespace in NFC.

    Raises:
        InvalidInputError: Naming the namespace and the fix.
    """
    ns = check_key(value, field="namespace", max_chars=max_chars)
    if ns != ns.strip():
        raise InvalidInputError(
            f"namespace {ns!r} has leading or trailing whitespace, so it would be another tenant than "
            f"{ns.strip()!r}; strip it (namespaces are compared exactly)"
        )
    bad = next((c for c in ns if c in _INVISIBLE or unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise InvalidInputError(
            f"namespace {ns!r} contains the control or invisible character U+{ord(bad):04X}; remove it "
            "(it makes a namespace that looks like another one but is not)"
        )
    return unicodedata.normalize("NFC", ns)


def _optional_key(value: Any, field: str, max_chars: int) -> str | None:
    return None if value is None else check_key(value, field=field, max_chars=max_chars)


def _key_list(value: Any, field: str, max_chars: int, *, lower: bool = False) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidInputError(
            f"{field} must be a list of str, got {type(value).__name__}"
            + (f"; wrap it: {field}=[{value!r}]" if isinstance(value, str) else "")
        )
    out: list[str] = []
    seen: set[str] = set()
    for item in value:
        key = check_key(item, field=f"{field} item", max_chars=max_chars)
        key = key.strip()
        if lower:
            key = key.casefold()
        if key not in seen:  # a tag listed twice is one tag
            seen.add(key)
            out.append(key)
    return out


def _number(value: Any, field: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a number in [{low}, {high}], got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise InvalidInputError(f"{field} must be a number in [{low}, {high}], got {value!r}")
    return number


def parse_kind(value: Any) -> MemoryKind:
    """Accept a :class:`MemoryKind` or its string value."""
    if isinstance(value, MemoryKind):
        return value
    try:
        return MemoryKind(value)
    except ValueError:
        valid = ", ".join(k.value for k in MemoryKind)
        raise InvalidInputError(f"unknown kind {value!r}; valid kinds are: {valid}") from None


def to_utc(value: Any, field: str) -> datetime:
    """A timezone-aware UTC datetime; naive datetimes are rejected (their zone is a guess)."""
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{field} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        raise InvalidInputError(f"{field} is a naive datetime; pass an aware one, e.g. datetime.now(timezone.utc)")
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidInputError(
            f"{field} {value.isoformat()} falls outside years 1-9999 once converted to UTC; pass a time in range"
        ) from None


def _metadata(value: Any) -> str:
    if value is None:
        return "{}"
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"metadata must be a dict, got {type(value).__name__}")
    if not all(isinstance(k, str) for k in value):
        raise InvalidInputError("metadata keys must all be str")
    try:
        encoded = json.dumps(dict(value), ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"metadata must be JSON-serialisable (str, numbers, bools, None, lists, dicts; no NaN): {exc}"
        ) from None
    except RecursionError:
        raise InvalidInputError("metadata is nested too deeply to store; flatten it (a few levels at most)") from None
    check_text(encoded, field="metadata", max_chars=1_000_000, allow_empty=True)
    return encoded


def normalise_for_hash(text: str) -> str:
    """The form two texts share when they are exact duplicates.

    Only whitespace that no reader would call a difference is folded: runs of spaces and tabs
    between words become one space, trailing spaces and blank lines at either end go. Case, Unicode
    forms and a line's indentation (code!) are kept: ``Hunter2`` is not ``hunter2``.
    """
    lines = [_INNER_WS.sub(" ", line.rstrip()) for line in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def content_hash(text: str) -> str:
    """sha256 hex digest of :func:`normalise_for_hash` (the exact-duplicate key).

    Memories written by 0.1 carry a key that also folded case and Unicode forms; a new write that
    repeats one of them exactly is still found, as a near duplicate (cosine 1.0, same words).
    """
    return hashlib.sha256(normalise_for_hash(text).encode("utf-8")).hexdigest()


def validate_record(raw: Any, config: StoreConfig, *, namespace: str | None = None) -> dict[str, Any]:
    """Validate one write record and return a normalised dict of the caller's fields.

    Args:
        raw: A mapping of writable fields (``text`` required).
        config: Limits to apply.
        namespace: Used when the record does not name its own.

    Raises:
        InvalidInputError: On the first problem found, naming the field and the fix.
    """
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"a record must be a dict of fields, got {type(raw).__name__}")
    unknown = set(raw) - WRITABLE_FIELDS
    if unknown:
        raise InvalidInputError(
            f"unknown field(s) {sorted(map(str, unknown))}; writable fields are: {', '.join(sorted(WRITABLE_FIELDS))}"
        )
    ns = raw.get("namespace", namespace)
    if ns is None:
        raise InvalidInputError("namespace is required: pass namespace='<user or tenant id>'")
    keys = config.max_key_chars
    out: dict[str, Any] = {
        "namespace": check_namespace(ns, max_chars=keys),
        "text": check_text(raw.get("text"), max_chars=config.max_text_chars),
        "kind": parse_kind(raw.get("kind", MemoryKind.FACT)),
        "session_id": _optional_key(raw.get("session_id"), "session_id", keys),
        "project": _optional_key(raw.get("project"), "project", keys),
        "topic": _optional_key(raw.get("topic"), "topic", keys),
        "tags": _key_list(raw.get("tags"), "tags", keys),
        "entities": _key_list(raw.get("entities"), "entities", keys, lower=True),
        "links": _key_list(raw.get("links"), "links", keys),
        "priority": _number(raw.get("priority", 1.0), "priority", *PRIORITY_RANGE),
        "importance": _number(raw.get("importance", 0.5), "importance", *IMPORTANCE_RANGE),
        "metadata": _metadata(raw.get("metadata")),
        "supersedes": _optional_key(raw.get("supersedes"), "supersedes", keys),
    }
    pinned = raw.get("pinned", False)
    if not isinstance(pinned, bool):
        raise InvalidInputError(f"pinned must be a bool, got {type(pinned).__name__}")
    out["pinned"] = pinned
    out.update(_fields_without_default(raw, config))
    # Which fields the caller set (a dedup "update" replaces only those).
    out["_given"] = frozenset(str(k) for k in raw)
    return out


def _fields_without_default(raw: Mapping[str, Any], config: StoreConfig) -> dict[str, Any]:
    """The fields a record may leave out altogether (``None`` counts as left out), checked."""
    out: dict[str, Any] = {}
    if raw.get("id") is not None:
        out["id"] = check_key(raw["id"], field="id", max_chars=config.max_key_chars)
    if raw.get("created_at") is not None:
        out["created_at"] = to_utc(raw["created_at"], "created_at")
    if raw.get("expires_at") is not None:
        out["expires_at"] = to_utc(raw["expires_at"], "expires_at")
    if raw.get("lifecycle") is not None:
        if raw["lifecycle"] not in LIFECYCLE_TIERS:
            raise InvalidInputError(
                f"lifecycle must be one of {', '.join(LIFECYCLE_TIERS)} or None, got {raw['lifecycle']!r}"
            )
        out["lifecycle"] = raw["lifecycle"]
    if raw.get("context") is not None:
        out["context"] = check_text(
            raw["context"], field="context", max_chars=config.max_context_chars, allow_empty=True
        )
    if raw.get("vector") is not None:
        out["vector"] = raw["vector"]  # shape and values are checked against the table's dimension
    return out
