"""One tenant per request: one query engine, the namespace picked per call with ``using_namespace``."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from llama_index.core.llms.mock import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index.memory_retrievers import RecallRetriever, current_namespace, using_namespace
from memory_retrievers import InvalidInputError, MemoryStore

USERS = [f"user{i}" for i in range(6)]


@pytest.fixture
def tenants(store: MemoryStore) -> MemoryStore:
    for user in USERS:
        store.add_many([{"text": f"{user}'s secret number is {n}"} for n in range(3)], namespace=user)
    return store


def _engine(store: MemoryStore) -> RetrieverQueryEngine:
    retriever = RecallRetriever(store, namespace=None, recall_config={"record_access": False})
    return RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))


def _owners(response: object) -> set[str]:
    return {n.node.get_content().split("'")[0] for n in response.source_nodes}  # type: ignore[attr-defined]


def test_users_interleaved_through_one_engine_never_see_each_other(tenants: MemoryStore) -> None:
    engine = _engine(tenants)

    def ask(user: str) -> set[str]:
        with using_namespace(user):
            return _owners(engine.query("secret number"))

    order = USERS * 5
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(ask, order))
    assert results == [{user} for user in order]


async def test_interleaved_async_queries_never_see_each_other(tenants: MemoryStore) -> None:
    engine = _engine(tenants)

    async def ask(user: str) -> set[str]:
        with using_namespace(user):
            await asyncio.sleep(0)  # let the other tasks run in between
            return _owners(await engine.aquery("secret number"))

    order = USERS * 5
    assert await asyncio.gather(*(ask(u) for u in order)) == [{u} for u in order]


def test_a_query_outside_using_namespace_fails_instead_of_sharing_a_namespace(tenants: MemoryStore) -> None:
    assert current_namespace() is None
    with pytest.raises(InvalidInputError, match="no namespace"):
        _engine(tenants).query("secret number")
    with pytest.raises(InvalidInputError, match="namespace"), using_namespace(""):
        pass


def test_using_namespace_nests_and_restores(tenants: MemoryStore) -> None:
    with using_namespace("user1"):
        with using_namespace("user2"):
            assert current_namespace() == "user2"
        assert current_namespace() == "user1"
    assert current_namespace() is None
