"""One retriever serving many namespaces: ``recall(..., namespace=...)`` (issue 28)."""

from __future__ import annotations

import asyncio

import pytest

from memory_retrievers import InvalidInputError, MemoryRetriever, MemoryStore


@pytest.fixture
def two_users(store: MemoryStore) -> MemoryStore:
    store.add("alice likes green tea", namespace="alice")
    store.add("bob likes black coffee", namespace="bob")
    store.flush()
    return store


def test_one_retriever_reads_the_namespace_each_call_names(two_users: MemoryStore) -> None:
    shared = MemoryRetriever(two_users)
    assert shared.namespace is None
    alice = shared.recall("what does the user like to drink?", namespace="alice")
    bob = shared.recall("what does the user like to drink?", namespace="bob")
    assert [m.text for m in alice.memories] == ["alice likes green tea"]
    assert [m.text for m in bob.memories] == ["bob likes black coffee"]


def test_a_call_namespace_overrides_the_default_and_the_default_stays(two_users: MemoryStore) -> None:
    retriever = MemoryRetriever(two_users, namespace="alice")
    assert [m.text for m in retriever.recall("drink", namespace="bob").memories] == ["bob likes black coffee"]
    assert [m.text for m in retriever.recall("drink").memories] == ["alice likes green tea"]
    assert retriever.namespace == "alice"


def test_access_statistics_go_to_the_namespace_of_the_call(two_users: MemoryStore) -> None:
    shared = MemoryRetriever(two_users)
    found = shared.recall("drink", namespace="bob").memories
    two_users.admin.flush_access()
    assert two_users.get(found[0].id, namespace="bob").access_count == 1
    alice = two_users.list(namespace="alice")
    assert [m.access_count for m in alice] == [0]


def test_without_any_namespace_the_call_fails_and_names_the_fix(two_users: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match=r"namespace is required.*namespace='user-1'"):
        MemoryRetriever(two_users).recall("drink")


@pytest.mark.parametrize("bad", ["", " alice", "a\x00b", 7])
def test_a_bad_call_namespace_is_refused_like_a_bad_constructor_one(two_users: MemoryStore, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        MemoryRetriever(two_users).recall("drink", namespace=bad)  # type: ignore[arg-type]


def test_async_calls_for_different_users_at_once_stay_apart(two_users: MemoryStore) -> None:
    shared = MemoryRetriever(two_users)

    async def both() -> list[list[str]]:
        results = await asyncio.gather(
            *(shared.arecall("drink", namespace=ns) for ns in ("alice", "bob", "alice", "bob"))
        )
        return [[m.text for m in r.memories] for r in results]

    got = asyncio.run(both())
    assert got == [["alice likes green tea"], ["bob likes black coffee"]] * 2
