from datetime import datetime, timezone

import pytest

from memory_retrievers import FilterError, InvalidInputError, MemoryFilter, MemoryKind
from memory_retrievers.filters import build_where, coerce_filter, sql_literal


def test_namespace_clause_first_and_superseded_excluded_by_default() -> None:
    assert build_where("alice") == "(namespace = 'alice') AND (superseded_by IS NULL)"


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("x' OR '1'='1", "'x'' OR ''1''=''1'"),
        ("it's", "'it''s'"),
        ("back\\slash", "'back\\slash'"),
        ("'; DROP TABLE memories; --", "'''; DROP TABLE memories; --'"),
    ],
)
def test_hostile_values_become_single_escaped_literals(value: str, literal: str) -> None:
    assert sql_literal(value) == literal
    assert build_where(value).startswith(f"(namespace = {literal})")


def test_every_filter_field_renders() -> None:
    flt = MemoryFilter(
        kinds=["fact", MemoryKind.EVENT],
        session_ids="s'1",
        projects=["p"],
        topics=["t"],
        tags_any=["a", "b"],
        tags_all=["c"],
        entities_any=["Alice"],
        pinned=True,
        created_after=datetime(2024, 1, 1, tzinfo=timezone.utc),
        created_before=datetime(2024, 2, 1, tzinfo=timezone.utc),
        include_superseded=True,
    )
    where = build_where("ns", flt, ids=["i1", "i'2"])
    assert where == (
        "(namespace = 'ns') AND (id IN ('i1', 'i''2')) AND (kind IN ('fact', 'event'))"
        " AND (session_id IN ('s''1')) AND (project IN ('p')) AND (topic IN ('t'))"
        " AND (array_has_any(tags, ['a', 'b'])) AND (array_has_all(tags, ['c']))"
        " AND (array_has_any(entities, ['alice'])) AND (pinned = true)"
        " AND (created_at >= CAST('2024-01-01 00:00:00' AS TIMESTAMP))"
        " AND (created_at < CAST('2024-02-01 00:00:00' AS TIMESTAMP))"
    )


def test_non_utc_datetimes_are_converted_before_rendering() -> None:
    from datetime import timedelta

    flt = MemoryFilter(created_after=datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))))
    assert "CAST('2024-01-01 00:00:00' AS TIMESTAMP)" in build_where("ns", flt)


def test_empty_id_list_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="ids is empty"):
        build_where("ns", ids=[])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"tag": ["a"]}, "unknown filter key 'tag'"),
        ({"tags_any": []}, "empty list"),
        ({"tags_any": [1]}, "tags_any"),
        ({"tags_any": ["a\x00"]}, "NUL"),
        ({"kinds": ["opinion"]}, "kinds"),
        ({"created_after": datetime(2024, 1, 1)}, "timezone-aware"),
        ({"pinned": "yes"}, "pinned"),
        ("namespace = 'x'", "must be a MemoryFilter or a dict"),
    ],
)
def test_malformed_filters_raise_filter_error(raw: object, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        coerce_filter(raw)  # type: ignore[arg-type]


def test_coerce_filter_accepts_instances_mappings_and_none() -> None:
    flt = MemoryFilter(projects=["p"])
    assert coerce_filter(flt) is flt
    assert coerce_filter({"projects": "p"}) == flt
    assert coerce_filter(None) == MemoryFilter()
