from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_retrievers import FilterError, InvalidInputError, MemoryFilter, MemoryKind
from memory_retrievers.filters import build_where, coerce_filter, matches, sql_literal


def lit(value: str) -> str:
    return f"arrow_cast(decode('{value.encode('utf-8').hex()}', 'hex'), 'Utf8')"


def test_namespace_clause_first_and_superseded_excluded_by_default() -> None:
    assert build_where("alice") == f"(namespace = {lit('alice')}) AND (superseded_by IS NULL)"


@pytest.mark.parametrize(
    "value",
    ["x' OR '1'='1", "it's", "back\\slash", "\\' OR 1=1 --", "'; DROP TABLE memories; --", "日本 🎉", "\n"],
)
def test_user_strings_become_hex_literals(value: str) -> None:
    literal = sql_literal(value)
    assert literal == lit(value)
    hex_part = literal.split("'")[1]
    assert set(hex_part) <= set("0123456789abcdef")
    assert bytes.fromhex(hex_part).decode("utf-8") == value


def test_backslash_quote_cannot_inject(store) -> None:
    # Regression: LanceDB's lit("\\' OR 1=1 --").to_sql() gives '\\'' OR 1=1 --' which its own
    # parser reads as a one-char string followed by OR 1=1: every row matched.
    from lancedb.expr import lit as lancedb_lit

    hostile = "\\' OR 1=1 --"
    store.add("victim memory", namespace="victim")
    store.add("attacker memory", namespace=hostile)
    import lancedb

    tbl = lancedb.connect(store.uri).open_table(store.table_name)
    leaky = tbl.search().where(f"namespace = {lancedb_lit(hostile).to_sql()}").to_list()
    assert len(leaky) == 2  # the upstream behaviour this module works around
    assert [m.text for m in store.list(hostile)] == ["attacker memory"]
    assert tbl.count_rows(build_where(hostile)) == 1


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
        include_archived=True,
        live_at=datetime(2024, 3, 1, tzinfo=timezone.utc),
    )
    where = build_where("ns", flt, ids=["i1", "i'2"])
    i2, s1 = lit("i'2"), lit("s'1")
    assert where == (
        f"(namespace = {lit('ns')}) AND (id IN ({lit('i1')}, {i2})) AND (kind IN ({lit('fact')}, {lit('event')}))"
        f" AND (session_id IN ({s1})) AND (project IN ({lit('p')})) AND (topic IN ({lit('t')}))"
        f" AND (array_has_any(tags, [{lit('a')}, {lit('b')}])) AND (array_has_all(tags, [{lit('c')}]))"
        f" AND (array_has_any(entities, [{lit('alice')}])) AND (pinned = true)"
        " AND (created_at >= CAST('2024-01-01 00:00:00.000000' AS TIMESTAMP))"
        " AND (created_at < CAST('2024-02-01 00:00:00.000000' AS TIMESTAMP))"
        " AND (expires_at IS NULL OR expires_at > CAST('2024-03-01 00:00:00.000000' AS TIMESTAMP))"
    )


def test_non_utc_datetimes_are_converted_before_rendering() -> None:
    from datetime import timedelta

    flt = MemoryFilter(created_after=datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))))
    assert "CAST('2024-01-01 00:00:00.000000' AS TIMESTAMP)" in build_where("ns", flt)


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


# ---------------------------------------------------------------- the SQL and the Python form agree
_KINDS = ["fact", "preference", "event", "message"]
_TAGS = ["a", "b", "c"]
_AGREE_RECORDS = [
    {
        "text": f"memory {i}",
        "kind": _KINDS[i % 4],
        "session_id": ["s1", "s2", None][i % 3],
        "project": ["p1", None][i % 2],
        "topic": ["t1", "t2", None][i % 3],
        "tags": _TAGS[: i % 4],
        "entities": ["Alice", "Bob"][: i % 3],
        "links": [f"m{j}" for j in range(i % 3)],
        "pinned": i % 5 == 0,
        "created_at": datetime(2024, 1, 1 + i, tzinfo=timezone.utc),
        "expires_at": [None, datetime(2024, 2, 5, tzinfo=timezone.utc), datetime(2024, 2, 10, tzinfo=timezone.utc)][
            i % 3
        ],
        "lifecycle": [None, "candidate", "validated", "archived"][(i // 2) % 4],
    }
    for i in range(12)
]

_filters = st.fixed_dictionaries(
    # live_at always given: otherwise the store sets it to its clock and the Python form cannot know.
    {"live_at": st.sampled_from([datetime(2024, 2, d, tzinfo=timezone.utc) for d in (1, 5, 7, 10, 20)])},
    optional={
        "include_expired": st.booleans(),
        "include_archived": st.booleans(),
        "ids": st.lists(st.sampled_from([f"m{i}" for i in range(14)]), min_size=1, max_size=5),
        "kinds": st.lists(st.sampled_from(_KINDS), min_size=1, max_size=2),
        "session_ids": st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=1, max_size=2),
        "projects": st.lists(st.sampled_from(["p1", "p2"]), min_size=1, max_size=2),
        "topics": st.lists(st.sampled_from(["t1", "t2"]), min_size=1, max_size=2),
        "tags_any": st.lists(st.sampled_from(_TAGS), min_size=1, max_size=2),
        "tags_all": st.lists(st.sampled_from(_TAGS), min_size=1, max_size=2),
        "entities_any": st.lists(st.sampled_from(["alice", "BOB", "carol"]), min_size=1, max_size=2),
        "links_any": st.lists(st.sampled_from(["m0", "m1", "m9"]), min_size=1, max_size=2),
        "pinned": st.booleans(),
        "created_after": st.sampled_from([datetime(2024, 1, d, tzinfo=timezone.utc) for d in (1, 5, 9)]),
        "created_before": st.sampled_from([datetime(2024, 1, d, tzinfo=timezone.utc) for d in (3, 7, 13)]),
        "include_superseded": st.booleans(),
    },
)


@pytest.fixture(scope="module")
def agree_store(tmp_path_factory: pytest.TempPathFactory):
    from memory_retrievers import HashEmbedder, MemoryStore

    store = MemoryStore(tmp_path_factory.mktemp("agree") / "db", embedder=HashEmbedder(16))
    added = store.add_many([{**r, "id": f"m{i}"} for i, r in enumerate(_AGREE_RECORDS)], namespace="u", dedup=False)
    store.supersede(added[3].id, "memory 3, corrected", namespace="u")
    yield store
    store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=_filters)
def test_the_python_form_of_a_filter_agrees_with_the_sql_form(agree_store, raw: dict) -> None:
    flt = MemoryFilter(**raw)
    everything = agree_store.list(
        "u", filter={"include_superseded": True, "include_expired": True, "include_archived": True}, limit=1000
    )
    by_sql = {m.id for m in agree_store.list("u", filter=flt, limit=1000)}
    by_python = {m.id for m in everything if matches(m, flt)}
    assert by_python == by_sql
