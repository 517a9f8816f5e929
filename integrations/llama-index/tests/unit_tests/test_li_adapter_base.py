"""Every LlamaIndex adapter is built on the core adapter base: a store binding, one core retriever for all users."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from llama_index.memory_retrievers import (
    MemoryChatStore,
    MemoryDBChatStore,
    RecallMemory,
    RecallMemoryBlock,
    RecallRetriever,
    using_namespace,
)
from memory_retrievers import ConfigError, InvalidInputError, MemoryStore
from memory_retrievers.integration import AdapterModel, RecallBinding

QUIET = {"record_access": False}


@pytest.fixture
def two_users(store: MemoryStore) -> MemoryStore:
    store.add("Alice drinks green tea", namespace="alice")
    store.add("Bob drinks black coffee", namespace="bob")
    return store


@pytest.mark.parametrize("cls", [RecallMemoryBlock, RecallMemory, MemoryChatStore, MemoryDBChatStore])
def test_the_pydantic_adapters_are_adapter_models(cls: type) -> None:
    assert issubclass(cls, AdapterModel)


def test_the_retriever_holds_a_recall_binding_and_refuses_what_is_not_a_store(store: MemoryStore) -> None:
    assert isinstance(RecallRetriever(store, namespace="alice")._binding, RecallBinding)
    with pytest.raises(ConfigError, match="store must be a MemoryStore, got str"):
        RecallRetriever("./memories", namespace="alice")  # type: ignore[arg-type]


def test_one_retriever_serves_every_user_through_one_core_retriever(two_users: MemoryStore) -> None:
    retriever = RecallRetriever(two_users, namespace=None, recall_config=QUIET)
    shared = retriever._binding.retriever
    for user, text in [("bob", "Bob drinks black coffee"), ("alice", "Alice drinks green tea")] * 2:
        with using_namespace(user):
            assert [n.node.get_content() for n in retriever.retrieve("drink")] == [text]
            assert retriever.memory_retriever.namespace == user  # the public view reads the call's user
    assert retriever._binding.retriever is shared and shared.namespace is None


async def test_a_block_and_a_memory_repointed_keep_their_binding_and_read_the_new_user(two_users: MemoryStore) -> None:
    block = RecallMemoryBlock(store=two_users, namespace="alice", recall_config=QUIET)
    memory = RecallMemory(store=two_users, namespace="alice", session_id="s", recall_config=QUIET)
    question = ChatMessage(role=MessageRole.USER, content="what do I drink?")
    assert "green tea" in await block.aget([question])
    assert "green tea" in str((await memory.aget("what do I drink?"))[0].content)
    bindings = block.recall_binding(), memory.recall_binding()
    block.namespace = memory.namespace = "bob"
    content = await block.aget([question])
    assert "black coffee" in content and "green tea" not in content
    recalled = str((await memory.aget("what do I drink?"))[0].content)
    assert "black coffee" in recalled and "green tea" not in recalled
    assert block.recall_binding() is bindings[0] and memory.recall_binding() is bindings[1]
    assert memory.chat_store.namespace == "bob" and block.memory_retriever.namespace == "bob"


@pytest.mark.parametrize("call", ["retrieve_with", "recall"])
def test_a_call_cannot_name_another_namespace(two_users: MemoryStore, call: str) -> None:
    retriever = RecallRetriever(two_users, namespace="alice")
    with pytest.raises(InvalidInputError, match=r"namespace is not a per-call argument.*using_namespace"):
        getattr(retriever, call)("drink", namespace="bob")


@pytest.mark.parametrize("cls", [RecallMemoryBlock, RecallMemory, MemoryChatStore])
def test_an_adapter_pickled_by_an_earlier_version_still_loads(store: MemoryStore, cls: type) -> None:
    import pickle
    from typing import Any

    from llama_index.memory_retrievers import chat_store
    from memory_retrievers.integration import register, store_spec

    class Earlier:  # what an earlier version's __reduce__ wrote: chat_store.restore and the fields
        def __reduce__(self) -> tuple[Any, ...]:
            return (
                chat_store.restore,
                (cls, {"store": store_spec(store, cls.__name__), "namespace": "alice"}),
            )  # codemod: keep

    register(store)  # the live store of the process, as an adapter built on it would have made it
    loaded = pickle.loads(pickle.dumps(Earlier()))
    assert isinstance(loaded, cls) and (loaded.store, loaded.namespace) == (store, "alice")
