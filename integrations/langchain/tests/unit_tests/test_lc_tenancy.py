"""One tenant per request: one chain, the namespace picked per call through its config."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import ConfigurableField, RunnableLambda

from langchain_memory_retrievers import RecallRetriever
from memory_retrievers import InvalidInputError, MemoryStore

USERS = [f"user{i}" for i in range(6)]


@pytest.fixture
def tenants(store: MemoryStore) -> MemoryStore:
    for user in USERS:
        store.add_many([{"text": f"{user}'s secret number is {n}"} for n in range(3)], namespace=user)
    return store


def _chain(store: MemoryStore):  # type: ignore[no-untyped-def]
    retriever = RecallRetriever(store=store, namespace=None, recall_config={"record_access": False})
    configurable = retriever.configurable_fields(namespace=ConfigurableField(id="user_id", name="Whose memories"))
    return configurable | RunnableLambda(lambda docs: [d.page_content for d in docs])


def _owners(texts: list[str]) -> set[str]:
    return {t.split("'")[0] for t in texts}


def test_two_users_interleaved_through_one_chain_never_see_each_other(tenants: MemoryStore) -> None:
    chain = _chain(tenants)
    order = USERS * 5
    configs = [{"configurable": {"user_id": user}} for user in order]
    # batch() runs the calls concurrently on a thread pool: interleaved for real.
    results = chain.batch(["secret number"] * len(order), config=configs)  # type: ignore[arg-type]
    for user, texts in zip(order, results, strict=True):
        assert texts and _owners(texts) == {user}


async def test_interleaved_async_calls_never_see_each_other(tenants: MemoryStore) -> None:
    chain = _chain(tenants)
    order = USERS * 5
    results = await asyncio.gather(
        *(chain.ainvoke("secret number", config={"configurable": {"user_id": user}}) for user in order)
    )
    for user, texts in zip(order, results, strict=True):
        assert texts and _owners(texts) == {user}


def test_a_call_that_names_no_user_fails_instead_of_sharing_a_namespace(tenants: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="no namespace"):
        _chain(tenants).invoke("secret number")


def test_a_retriever_with_a_default_namespace_can_still_be_overridden_per_call(tenants: MemoryStore) -> None:
    retriever = RecallRetriever(store=tenants, namespace="user0").configurable_fields(
        namespace=ConfigurableField(id="user_id")
    )
    docs: list[Document] = retriever.invoke("secret", config={"configurable": {"user_id": "user3"}})
    assert _owners([d.page_content for d in docs]) == {"user3"}
    assert _owners([d.page_content for d in retriever.invoke("secret")]) == {"user0"}
