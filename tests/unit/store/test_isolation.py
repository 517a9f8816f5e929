"""Tenant isolation: no read API ever returns a memory of another namespace, whatever the strings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_retrievers import HashEmbedder, InvalidInputError, MemoryStore, NotFoundError
from memory_retrievers.validation import check_namespace

SQLISH = [
    "x' OR '1'='1",
    "' OR 1=1 --",
    "a'; DELETE FROM memories; --",
    "\\' OR '1'='1",
    "namespace",
    "%",
    "_",
    "*",
    "') OR ('a'='a",
    '" OR ""="',
    "victim",
    "vic tim",
    "VICTIM",
    "victim' --",
]

# Any valid text: no NUL, no lone surrogates (those are rejected, tested elsewhere).
names = st.one_of(
    st.sampled_from(SQLISH),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40).filter(
        lambda s: s.strip() != ""
    ),
    st.builds(lambda a, b: a + b, st.sampled_from(SQLISH), st.text(max_size=5).filter(lambda s: "\x00" not in s)),
)


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    store = MemoryStore(Path(tmp_path_factory.mktemp("iso")) / "db", embedder=HashEmbedder(32))
    store.add_many(
        [
            {"text": "victim secret memory one", "tags": ["secret"], "entities": ["secret"], "project": "p"},
            {"text": "victim secret memory two", "tags": ["secret"], "entities": ["secret"], "session_id": "s"},
        ],
        namespace="victim",
    )
    return store


def _valid(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value and value.strip() != ""


def _valid_namespace(value: str) -> bool:
    try:
        check_namespace(value, max_chars=10_000)
    except InvalidInputError:
        return False
    return True


def store_add(store: MemoryStore, ns: str) -> None:
    store.add("refused", namespace=ns)


@pytest.mark.long
# 40 cases here: tests/reliability/test_isolation_property.py runs the same rule at 300 (2,000 deep).
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ns=names, filter_value=names)
def test_no_read_api_leaks_across_namespaces(shared_store: MemoryStore, ns: str, filter_value: str) -> None:
    if ns == "victim" or not _valid(filter_value):
        return
    if not _valid_namespace(ns):  # refused by the namespace rule: by every API, and nothing changes
        for refused in (
            lambda: store_add(shared_store, ns),
            lambda: shared_store.list(ns),
            lambda: shared_store.count(ns),
        ):
            with pytest.raises(InvalidInputError, match="namespace"):
                refused()
        return
    store = shared_store
    own = store.add(f"own secret memory {len(ns)}", namespace=ns, tags=["secret"], entities=["secret"], dedup=False)
    allowed = {m.id for m in store.list(ns, limit=10_000)}
    assert own.id in allowed
    victim_ids = {m.id for m in store.list("victim")}
    filters = [
        None,
        {"tags_any": [filter_value, "secret"]},
        {"projects": [filter_value]},
        {"session_ids": [filter_value, "s"]},
        {"entities_any": [filter_value, "secret"]},
        {"include_superseded": True},
    ]
    for flt in filters:
        for hits in (
            store.fts_search("secret memory", namespace=ns, filter=flt, k=50),
            store.vector_search("victim secret memory", namespace=ns, filter=flt, k=50),
            store.entity_search(["secret", filter_value], namespace=ns, filter=flt, k=50),
            store.recency_search(namespace=ns, filter=flt, k=50),
        ):
            assert {h.id for h in hits} <= allowed
        assert {m.id for m in store.list(ns, filter=flt, limit=1000)} <= allowed
        assert store.count(ns, filter=flt) <= len(allowed)
    # ids of the victim are unknown in this namespace for every by-id API
    some_victim = next(iter(victim_ids))
    with pytest.raises(NotFoundError):
        store.get(some_victim, namespace=ns)
    with pytest.raises(NotFoundError):
        store.delete([some_victim], namespace=ns)
    with pytest.raises(NotFoundError):
        store.update(some_victim, namespace=ns, text="pwned")
    with pytest.raises(NotFoundError):
        store.supersede(some_victim, "pwned", namespace=ns)
    assert {m.id for m in store.list("victim")} == victim_ids
    assert [m.text for m in store.list("victim", newest_first=False)] == [
        "victim secret memory one",
        "victim secret memory two",
    ]


def test_forget_with_hostile_namespace_deletes_only_itself(store: MemoryStore) -> None:
    store.add("keep", namespace="victim")
    for ns in SQLISH:
        if ns != "victim":
            store.add(f"doomed {ns}", namespace=ns)
    for ns in SQLISH:
        if ns != "victim":
            assert store.forget(ns) == 1
    assert [m.text for m in store.list("victim")] == ["keep"]


def test_same_caller_id_cannot_overwrite_another_namespace(store: MemoryStore) -> None:
    store.add("victim data", namespace="victim", id="m1")
    store.add("attacker data", namespace="x' OR '1'='1", id="m1")
    assert store.get("m1", namespace="victim").text == "victim data"


def test_namespace_is_required_everywhere(store: MemoryStore) -> None:
    with pytest.raises(TypeError):
        store.get("x")  # type: ignore[call-overload]
    with pytest.raises(InvalidInputError, match="namespace"):
        store.add_many([{"text": "no namespace"}])
