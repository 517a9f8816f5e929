"""The LangChain adapters on a sharded store: each user's memories come from that user's shard only."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.runnables import ConfigurableField

from langchain_memory_retrievers import MemoryChatMessageHistory, MemoryStoreLangGraph, RecallRetriever
from memory_retrievers import HashEmbedder, ShardedMemoryStore, shard_of

USERS = {"alice": "Alice drinks green tea", "bob": "Bob drinks black coffee", "carol": "Carol drinks mint tea"}


@pytest.fixture
def sharded(tmp_path: Path) -> Iterator[ShardedMemoryStore]:
    store = ShardedMemoryStore([tmp_path / "s0", tmp_path / "s1", tmp_path / "s2"], embedder=HashEmbedder(32))
    assert len({shard_of(user, 3) for user in USERS}) > 1  # the users really are on different shards
    for user, text in USERS.items():
        store.add(text, namespace=user)
    yield store
    store.close()


def test_a_retriever_recalls_each_user_from_their_shard(sharded: ShardedMemoryStore) -> None:
    retriever = RecallRetriever(store=sharded, namespace="alice", recall_config={"record_access": False})
    chain = retriever.configurable_fields(namespace=ConfigurableField(id="user_id"))
    for user, text in USERS.items():
        docs = chain.invoke("drink", config={"configurable": {"user_id": user}})
        assert [d.page_content for d in docs] == [text]


def test_a_pickled_retriever_reopens_the_same_shards(sharded: ShardedMemoryStore) -> None:
    data = pickle.dumps(RecallRetriever(store=sharded, namespace="bob", recall_config={"record_access": False}))
    sharded.close()  # the live store is gone: loading must reopen the shards, not one table
    loaded = pickle.loads(data)
    assert isinstance(loaded.store, ShardedMemoryStore) and loaded.store.locations == sharded.locations
    assert [d.page_content for d in loaded.invoke("drink")] == [USERS["bob"]]
    loaded.store.close()


def test_the_langgraph_store_and_the_chat_history_route_by_namespace(sharded: ShardedMemoryStore) -> None:
    lg = MemoryStoreLangGraph(sharded)
    lg.put(("memories", "dave"), "pet", {"text": "Dave has a cat called Miso"})
    assert [h.key for h in lg.search(("memories", "dave"), query="what pet?")] == ["pet"]
    assert lg.search(("memories", "erin"), query="what pet?") == []
    history = MemoryChatMessageHistory(sharded, namespace="erin", session_id="s1")
    history.add_user_message("My dog is called Rex")
    assert [m.content for m in history.messages] == ["My dog is called Rex"]
    assert sharded.count("erin") == 1 and any("dave" in ns for ns in sharded.namespaces())
