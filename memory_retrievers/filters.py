r"""The one place that turns user values into LanceDB filter strings.

LanceDB filters are SQL strings without bind parameters. Every user string goes through
:func:`sql_literal`, which does not *escape* it but *hex-encodes* it: the literal is
``arrow_cast(decode('<hex>', 'hex'), 'Utf8')``, whose only user-derived characters are
``[0-9a-f]``, so no value can end the literal early. DataFusion folds the expression into a
constant before planning, so scalar indexes are still used (same plan and speed as a quoted
literal).

Why not quote-doubling: LanceDB 0.40's SQL parser treats ``\'`` as an escaped quote while its own
``lit(...).to_sql()`` only doubles quotes, so the namespace ``\' OR 1=1 --`` rendered that way
matches *every* row (see ``tests/unit/test_filters.py::test_backslash_quote_cannot_inject``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict, PrivateAttr, StrictBool, field_validator

from memory_retrievers.config import CheckedModel, validated
from memory_retrievers.errors import FilterError, InvalidInputError, MemoryRetrieversError
from memory_retrievers.models import MemoryKind
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.validation import check_key, to_utc

if TYPE_CHECKING:
    from memory_retrievers.models import Memory

__all__ = [
    "MemoryFilter",
    "build_where",
    "coerce_filter",
    "created_within",
    "expiry_cutoff",
    "hides_archived",
    "matches",
    "sql_in",
    "sql_list",
    "sql_literal",
]

_MAX_FILTER_CHARS = 512


def sql_literal(value: str | bool | datetime) -> str:
    """A SQL literal for ``value`` that no content can break out of (see the module docstring)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        # Rendered from the datetime's fields, never from user text; columns hold UTC.
        utc = to_utc(value, "datetime")
        return f"CAST('{utc:%Y-%m-%d %H:%M:%S.%f}' AS TIMESTAMP)"
    if isinstance(value, str):
        return f"arrow_cast(decode('{value.encode('utf-8').hex()}', 'hex'), 'Utf8')"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def sql_list(values: Iterable[str]) -> str:
    """A SQL list ``['a', 'b']`` of escaped string literals."""
    return "[" + ", ".join(sql_literal(v) for v in values) + "]"


def sql_in(column: str, values: Sequence[str]) -> str:
    """``column IN (...)`` over escaped literals; ``values`` must not be empty (``IN ()`` is a SQL error)."""
    if not values:
        raise InvalidInputError(f"an empty list for {column} matches nothing; pass at least one value")
    return f"{column} IN ({', '.join(sql_literal(v) for v in values)})"


class MemoryFilter(CheckedModel):
    """Metadata prefilter applied inside LanceDB, before ranking.

    Lists mean "any of" (``tags_all`` means "all of"). ``None`` means no constraint. Superseded
    memories are excluded unless ``include_superseded`` is true. ``ids`` restricts a search to the
    given memories (e.g. those an application already selected by its own criteria), so ranking
    happens among them only; ``links_any`` to the memories whose ``links`` name any of the given
    ids (e.g. the facts formed from a chat turn). Expired memories (``expires_at`` at or before ``live_at``) are
    excluded unless ``include_expired`` is true; the store sets ``live_at`` to its clock's now on
    every read that does not set it. On those reads archived memories (``lifecycle="archived"``)
    are excluded too, unless ``include_archived`` is true.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    error_type: ClassVar[type[MemoryRetrieversError]] = FilterError
    error_key: ClassVar[str] = "filter key"

    ids: tuple[str, ...] | None = None
    kinds: tuple[MemoryKind, ...] | None = None
    session_ids: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    topics: tuple[str, ...] | None = None
    tags_any: tuple[str, ...] | None = None
    tags_all: tuple[str, ...] | None = None
    entities_any: tuple[str, ...] | None = None
    links_any: tuple[str, ...] | None = None
    pinned: StrictBool | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_superseded: StrictBool = False
    include_expired: StrictBool = False
    include_archived: StrictBool = False
    live_at: datetime | None = None
    _id_set: frozenset[str] = PrivateAttr(default=frozenset())

    def model_post_init(self, context: Any, /) -> None:
        """Keep ``ids`` as a set too: the in-Python form tests every row of a view against it."""
        self._id_set = frozenset(self.ids or ())

    @field_validator(
        "ids", "session_ids", "projects", "topics", "tags_any", "tags_all", "entities_any", "links_any", mode="before"
    )
    @classmethod
    def _strings(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            value = (value,)
        if not isinstance(value, Iterable):
            raise ValueError(f"expected a str or a list of str, got {type(value).__name__}")
        items = tuple(value)
        if not items:
            raise ValueError("an empty list matches nothing; omit the key instead")
        for item in items:
            try:
                check_key(item, field="filter value", max_chars=_MAX_FILTER_CHARS)
            except InvalidInputError as exc:
                raise ValueError(str(exc)) from None
        return items

    @field_validator("kinds", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (str, MemoryKind)):
            value = (value,)
        items = tuple(value)
        if not items:
            raise ValueError("an empty list matches nothing; omit the key instead")
        return items

    @field_validator("created_after", "created_before", "live_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("must be timezone-aware, e.g. datetime(2024, 1, 1, tzinfo=timezone.utc)")
        try:
            to_utc(value, "the datetime")  # the SQL literal is rendered in UTC: it must exist there
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None
        return value


def coerce_filter(value: MemoryFilter | Mapping[str, Any] | None) -> MemoryFilter:
    """Accept a :class:`MemoryFilter`, a mapping of its fields, or ``None``.

    Raises:
        FilterError: Unknown keys or wrong value types, with the valid keys listed.
    """
    return validated(MemoryFilter, value, "filter", error=FilterError, key="filter key")  # type: ignore[no-any-return]


def is_unconstrained(flt: MemoryFilter) -> bool:
    """True when ``flt`` sets nothing but ``include_superseded`` (every live memory passes)."""
    return not flt.model_dump(
        exclude_defaults=True, exclude={"include_superseded", "include_expired", "include_archived", "live_at"}
    )


def hides_archived(flt: MemoryFilter) -> bool:
    """Whether archived memories are left out: on a caller's read (``live_at`` set), unless asked for.

    The store's own reads (duplicates aside) set no ``live_at`` and see every row.
    """
    return flt.live_at is not None and not flt.include_archived


def expiry_cutoff(flt: MemoryFilter) -> datetime | None:
    """The time at or before which an ``expires_at`` excludes a memory (``None``: expiry not applied)."""
    return None if flt.include_expired else flt.live_at


def created_within(spans: Sequence[DateSpan]) -> str:
    """The SQL predicate "created within any of ``spans``" (start included, end excluded)."""
    if not spans:
        raise InvalidInputError("spans is empty; pass at least one DateSpan")
    return (
        "("
        + " OR ".join(f"(created_at >= {sql_literal(s.start)} AND created_at < {sql_literal(s.end)})" for s in spans)
        + ")"
    )


def build_where(
    namespace: str | Sequence[str], flt: MemoryFilter | None = None, *, ids: Sequence[str] | None = None
) -> str:
    """The SQL predicate for one namespace (or a list of them) plus a filter; the namespace clause is always first.

    Args:
        namespace: Already validated namespace, or a non-empty list of them (an administrative read).
        flt: Optional metadata filter.
        ids: Optional id restriction (an empty list is rejected: ``id IN ()`` is a SQL error and
            would mean "nothing" anyway).
    """
    clauses = [
        f"namespace = {sql_literal(namespace)}" if isinstance(namespace, str) else sql_in("namespace", namespace)
    ]
    if ids is not None:
        if not ids:
            raise InvalidInputError("ids is empty; pass at least one id")
        clauses.append(sql_in("id", ids))
    flt = flt or MemoryFilter()
    if flt.ids:
        clauses.append(sql_in("id", flt.ids))
    if not flt.include_superseded:
        clauses.append("superseded_by IS NULL")
    if flt.kinds:
        clauses.append(sql_in("kind", [k.value for k in flt.kinds]))
    for column, values in (("session_id", flt.session_ids), ("project", flt.projects), ("topic", flt.topics)):
        if values:
            clauses.append(sql_in(column, values))
    if flt.tags_any:
        clauses.append(f"array_has_any(tags, {sql_list(flt.tags_any)})")
    if flt.tags_all:
        clauses.append(f"array_has_all(tags, {sql_list(flt.tags_all)})")
    if flt.entities_any:
        clauses.append(f"array_has_any(entities, {sql_list(e.strip().casefold() for e in flt.entities_any)})")
    if flt.links_any:
        clauses.append(f"array_has_any(links, {sql_list(flt.links_any)})")
    if flt.pinned is not None:
        clauses.append(f"pinned = {sql_literal(flt.pinned)}")
    if flt.created_after is not None:
        clauses.append(f"created_at >= {sql_literal(flt.created_after)}")
    if flt.created_before is not None:
        clauses.append(f"created_at < {sql_literal(flt.created_before)}")
    cutoff = expiry_cutoff(flt)
    if cutoff is not None:
        clauses.append(f"expires_at IS NULL OR expires_at > {sql_literal(cutoff)}")
    if hides_archived(flt):
        clauses.append("lifecycle IS NULL OR lifecycle <> 'archived'")
    return " AND ".join(f"({c})" for c in clauses)


def recency_slot(namespace: str, flt: MemoryFilter) -> str:
    """The same filter at any moment: what a recency search remembers its cutoff under.

    The predicate of ``flt`` without the moment expiry is judged at (``live_at``), which changes
    on every search.
    """
    return build_where(namespace, flt.model_copy(update={"live_at": None}))


def matches(memory: Memory, flt: MemoryFilter) -> bool:
    """The same predicate as :func:`build_where` (namespace aside), evaluated in Python.

    Used where memories are already in hand: recall's in-memory namespace views and memories
    reached through links. Keep the two side by side: a clause added to one belongs in the other
    (``tests/unit/test_filters.py`` checks they agree).
    """
    if not flt.include_superseded and memory.superseded_by is not None:
        return False
    if flt.ids is not None and memory.id not in flt._id_set:
        return False
    if flt.kinds is not None and memory.kind not in flt.kinds:
        return False
    for values, value in (
        (flt.session_ids, memory.session_id),
        (flt.projects, memory.project),
        (flt.topics, memory.topic),
    ):
        if values is not None and value not in values:
            return False
    if flt.tags_any is not None and not set(flt.tags_any) & set(memory.tags):
        return False
    if flt.tags_all is not None and not set(flt.tags_all) <= set(memory.tags):
        return False
    if flt.entities_any is not None and not {e.strip().casefold() for e in flt.entities_any} & set(memory.entities):
        return False
    if flt.links_any is not None and not set(flt.links_any) & set(memory.links):
        return False
    if flt.pinned is not None and memory.pinned != flt.pinned:
        return False
    cutoff = expiry_cutoff(flt)
    if cutoff is not None and memory.expires_at is not None and memory.expires_at <= cutoff:
        return False
    if hides_archived(flt) and memory.lifecycle == "archived":
        return False
    created = memory.created_at or datetime.min.replace(tzinfo=timezone.utc)
    if flt.created_after is not None and created < flt.created_after:
        return False
    return not (flt.created_before is not None and created >= flt.created_before)
