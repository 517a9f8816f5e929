"""Every LangChain adapter is built on the core adapter base: a store binding, one core retriever for all namespaces."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import ConfigurableField

from langchain_memory_retrievers import (
    MemoryChatMessageHistory,
    MemoryMiddleware,
    MemoryStoreLangGraph,
    RecallRetriever,
)
from memory_retrievers import ConfigError, InvalidInputError, MemoryStore
from memory_retrievers.integration import AdapterModel, RecallBinding, StoreBinding

PLAIN: dict[str, Callable[[Any], Any]] = {
    "MemoryChatMessageHistory": lambda store: MemoryChatMessageHistory(store, namespace="alice", session_id="s"),
    "MemoryMiddleware": lambda store: MemoryMiddleware(store, namespace="alice"),
    "MemoryStoreLangGraph": lambda store: MemoryStoreLangGraph(store),
}


def test_the_pydantic_adapter_is_an_adapter_model() -> None:
    assert issubclass(RecallRetriever, AdapterModel)


@pytest.mark.parametrize("build", PLAIN.values(), ids=PLAIN.keys())
def test_each_plain_adapter_holds_a_store_binding(store: MemoryStore, build: Callable[[Any], Any]) -> None:
    adapter = build(store)
    assert isinstance(adapter._binding, StoreBinding) and adapter.store is store


@pytest.mark.parametrize("build", PLAIN.values(), ids=PLAIN.keys())
def test_each_plain_adapter_refuses_what_is_not_a_store_alike(build: Callable[[Any], Any]) -> None:
    # One check for all (the history and the LangGraph store raised InvalidInputError before issue 28).
    with pytest.raises(ConfigError, match="store must be a MemoryStore, got str"):
        build("./memories")


@pytest.mark.parametrize("build", PLAIN.values(), ids=PLAIN.keys())
def test_each_plain_adapter_deep_copies_sharing_its_store(store: MemoryStore, build: Callable[[Any], Any]) -> None:
    # copy.deepcopy of the middleware and the LangGraph store raised ForkedStoreError: the copy
    # tried to pickle the store, which cannot leave its process. A copy shares the store and its
    # binding (handles, not data) and keeps its own state (the middleware's turn cache, the sweeper).
    adapter = build(store)
    twin = copy.deepcopy(adapter)
    assert twin is not adapter and twin.store is store and twin._binding is adapter._binding
    for own in ("_turns", "_turns_lock", "_sweeper"):
        if hasattr(adapter, own):
            assert getattr(twin, own) is not getattr(adapter, own), own


def test_a_deep_copied_langgraph_store_and_middleware_still_work(store: MemoryStore) -> None:
    lg = copy.deepcopy(MemoryStoreLangGraph(store))
    lg.put(("memories", "alice"), "tea", {"text": "Alice drinks green tea"})
    assert [h.key for h in lg.search(("memories", "alice"), query="what does she drink?")] == ["tea"]
    middleware = copy.deepcopy(MemoryMiddleware(store, namespace="alice", remember="user"))
    model = FakeMessagesListChatModel(responses=[AIMessage("Green tea.")])
    create_agent(model, tools=[], middleware=[middleware]).invoke({"messages": [HumanMessage("What do I drink?")]})
    assert "user: What do I drink?" in {m.text for m in store.list("alice", filter={"kinds": ["message"]})}


def test_the_langgraph_store_searches_every_namespace_through_one_core_retriever(store: MemoryStore) -> None:
    lg = MemoryStoreLangGraph(store)
    lg.put(("memories", "alice"), "tea", {"text": "Alice drinks green tea"})
    lg.put(("memories", "bob"), "coffee", {"text": "Bob drinks black coffee"})
    binding = lg._binding
    assert isinstance(binding, RecallBinding)
    shared = binding.retriever
    assert [h.key for h in lg.search(("memories", "alice"), query="what does she drink?")] == ["tea"]
    assert [h.key for h in lg.search(("memories", "bob"), query="what does he drink?")] == ["coffee"]
    assert lg._binding is binding and binding.retriever is shared and shared.namespace is None


def test_a_retriever_recalls_other_users_per_call_and_keeps_its_own(store: MemoryStore) -> None:
    store.add("Alice drinks green tea", namespace="alice")
    store.add("Bob drinks black coffee", namespace="bob")
    retriever = RecallRetriever(store=store, namespace="alice", recall_config={"record_access": False})
    shared = retriever.recall_binding().retriever
    chain = retriever.configurable_fields(namespace=ConfigurableField(id="user_id"))
    for user, text in [("bob", "Bob drinks black coffee"), ("alice", "Alice drinks green tea")]:
        docs: list[Document] = chain.invoke("drink", config={"configurable": {"user_id": user}})
        assert [d.page_content for d in docs] == [text]
    # LangChain builds a new retriever per configured call; the one it was built from is untouched.
    assert retriever.namespace == "alice"
    assert [d.page_content for d in retriever.invoke("drink")] == ["Alice drinks green tea"]
    assert retriever.recall_binding().retriever is shared and shared.namespace is None


@pytest.mark.parametrize("call", ["invoke", "recall"])
def test_a_call_cannot_name_another_namespace(store: MemoryStore, call: str) -> None:
    store.add("Bob drinks black coffee", namespace="bob")
    retriever = RecallRetriever(store=store, namespace="alice")
    with pytest.raises(InvalidInputError, match=r"namespace is not a per-call argument.*configurable"):
        getattr(retriever, call)("drink", namespace="bob")


def test_a_retriever_pickled_by_an_earlier_version_still_loads(store: MemoryStore) -> None:
    import pickle

    from langchain_memory_retrievers import retrievers
    from memory_retrievers.integration import register, store_spec

    class Earlier:  # what an earlier version's __reduce__ wrote: its module's _restore and the fields
        def __reduce__(self) -> tuple[Any, ...]:
            state = {"store": store_spec(store, "RecallRetriever"), "namespace": "alice", "k": 3}
            return (retrievers._restore, (RecallRetriever, state))

    register(store)  # the live store of the process, as an adapter built on it would have made it
    loaded = pickle.loads(pickle.dumps(Earlier()))
    assert isinstance(loaded, RecallRetriever)
    assert (loaded.store, loaded.namespace, loaded.k) == (store, "alice", 3)
