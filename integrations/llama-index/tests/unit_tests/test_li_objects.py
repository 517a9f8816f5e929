"""The adapter objects as values: no stale tenant, no lost session, no dropped argument, serialisation.

First written as regressions found by the trust review.
"""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.embeddings import MockEmbedding
from pydantic import ValidationError

from llama_index.memory_retrievers import (
    LlamaIndexEmbedder,
    MemoryChatStore,
    RecallMemory,
    RecallMemoryBlock,
    RecallRetriever,
)
from memory_retrievers import ConfigError, InvalidInputError, MemoryStore

QUIET = {"record_access": False}


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


@pytest.fixture
def two_tenants(store: MemoryStore) -> MemoryStore:
    store.add("alice's secret: the vault code is 1234", namespace="alice")
    store.add("bob's secret: the vault code is 9876", namespace="bob")
    return store


# ---------------------------------------------------------------- a copy keeps the old tenant
def _reassign(obj: Any) -> Any:
    obj.namespace = "bob"
    return obj


def _model_copy(obj: Any) -> Any:
    return obj.model_copy(update={"namespace": "bob"})


def _deepcopy(obj: Any) -> Any:
    return _reassign(copy.deepcopy(obj))


def _copy(obj: Any) -> Any:
    return _reassign(copy.copy(obj))


@pytest.mark.parametrize("switch", [_reassign, _model_copy, _copy, _deepcopy])
async def test_a_copied_memory_block_keeps_the_old_tenant(two_tenants: MemoryStore, switch: Callable[..., Any]) -> None:
    block = RecallMemoryBlock(store=two_tenants, namespace="alice", recall_config=QUIET)
    assert "1234" in await block.aget([user("vault code secret")])
    other = switch(block)
    content = await other.aget([user("vault code secret")])
    assert "9876" in content and "1234" not in content
    assert other.store is two_tenants


@pytest.mark.parametrize("switch", [_reassign, _model_copy, _copy, _deepcopy])
async def test_a_copied_agent_memory_keeps_the_old_tenant(two_tenants: MemoryStore, switch: Callable[..., Any]) -> None:
    memory = RecallMemory.from_defaults(store=two_tenants, namespace="alice", session_id="s", recall_config=QUIET)
    await memory.aput(user("what is the vault code secret?"))
    assert "1234" in (await memory.aget())[0].content
    other = switch(memory)
    got = await other.aget("what is the vault code secret?")
    assert "9876" in got[0].content and "1234" not in got[0].content
    assert [m.content for m in await other.aget_all()] == []  # bob's session "s" is empty


def test_a_retriever_with_a_reassigned_namespace_reads_the_new_tenant(two_tenants: MemoryStore) -> None:
    retriever = RecallRetriever(two_tenants, namespace="alice", recall_config=QUIET)
    assert [n.node.get_content() for n in retriever.retrieve("vault code")] == [
        "alice's secret: the vault code is 1234"
    ]
    retriever.namespace = "bob"
    assert [n.node.get_content() for n in retriever.retrieve("vault code")] == ["bob's secret: the vault code is 9876"]
    with pytest.raises(InvalidInputError, match="namespace"):
        retriever.namespace = ""
    assert retriever.namespace == "bob"


def test_a_rejected_assignment_leaves_the_block_as_it_was(two_tenants: MemoryStore) -> None:
    block = RecallMemoryBlock(store=two_tenants, namespace="alice", k=5)  # k's default is None (recall_config.k)
    with pytest.raises(ValidationError, match="namespace"):
        block.namespace = ""
    with pytest.raises(ValidationError, match="k"):
        block.k = True  # type: ignore[assignment]
    assert (block.namespace, block.k) == ("alice", 5)


# ---------------------------------------------------------------- a rejected replacement wipes a session
def _too_big(store: MemoryStore) -> ChatMessage:
    return user("x" * 5_000_000)  # over the store's 1 MB metadata limit: the store refuses it


def _lone_surrogate(store: MemoryStore) -> ChatMessage:
    return user("broken \ud800 text")


REJECTED = [_too_big, _lone_surrogate]


@pytest.mark.parametrize("bad", REJECTED)
def test_a_rejected_replacement_wipes_a_chat_session(store: MemoryStore, bad: Callable[..., ChatMessage]) -> None:
    chats = MemoryChatStore(store=store, namespace="alice")
    chats.set_messages("s", [user("one"), user("two")])
    with pytest.raises(InvalidInputError):
        chats.set_messages("s", [user("new"), bad(store)])
    assert [m.content for m in chats.get_messages("s")] == ["one", "two"]
    with pytest.raises(InvalidInputError):
        chats.add_message("s", bad(store), idx=0)
    assert [m.content for m in chats.get_messages("s")] == ["one", "two"]


@pytest.mark.parametrize("bad", REJECTED)
def test_a_rejected_message_leaves_the_agent_memory_session(
    store: MemoryStore, bad: Callable[..., ChatMessage]
) -> None:
    memory = RecallMemory.from_defaults(store=store, namespace="alice", session_id="s")
    memory.put_messages([user("one"), user("two")])
    with pytest.raises(InvalidInputError):
        memory.set([user("new"), bad(store)])
    with pytest.raises(InvalidInputError):
        memory.put(bad(store))
    assert [m.content for m in memory.get_all()] == ["one", "two"]


def test_set_messages_is_one_commit(store: MemoryStore) -> None:
    chats = MemoryChatStore(store=store, namespace="alice")
    chats.set_messages("s", [user("one"), user("two")])
    store.flush()  # index builds after the first write run in the background: let them finish
    before = store.admin.stats().version
    chats.set_messages("s", [user("three"), user("four")])
    store.flush()
    assert store.admin.stats().version == before + 1  # readers saw the old session or the new one
    assert [m.content for m in chats.get_messages("s")] == ["three", "four"]
    assert store.count("alice") == 2


@pytest.mark.parametrize("writers", [2, 20])
async def test_concurrent_inserts_at_the_front_all_land(store: MemoryStore, writers: int) -> None:
    chats = MemoryChatStore(store=store, namespace="alice")
    await chats.aset_messages("s", [user("original")])
    await asyncio.gather(*(chats.async_add_message("s", user(f"inserted {i}"), idx=0) for i in range(writers)))
    messages = [m.content for m in await chats.aget_messages("s")]
    assert len(messages) == writers + 1
    assert messages[-1] == "original" and sorted(messages[:-1]) == sorted(f"inserted {i}" for i in range(writers))


def test_inserts_land_at_their_position_and_fall_back_when_no_stamp_fits(store: MemoryStore) -> None:
    chats = MemoryChatStore(store=store, namespace="alice")
    chats.set_messages("s", [user("a"), user("c")])
    chats.add_message("s", user("b"), idx=1)
    chats.add_message("s", user("end"), idx=99)
    chats.add_message("s", user("before end"), idx=-1)
    assert [m.content for m in chats.get_messages("s")] == ["a", "b", "c", "before end", "end"]
    # Two neighbours whose stamps are adjacent leave no stamp between them: the session is
    # rewritten in one replace, in the right order.
    memories = asyncio.run(chats.amemories("s"))
    first, second = memories[0], memories[1]
    store.update(
        second.id,
        namespace="alice",
        metadata={**second.metadata, "llama_index_seq": first.metadata["llama_index_seq"] + 1},
    )
    chats.add_message("s", user("a2"), idx=1)
    assert [m.content for m in chats.get_messages("s")] == ["a", "a2", "b", "c", "before end", "end"]


async def test_two_concurrent_deletes_of_the_last_message_delete_two_messages(store: MemoryStore) -> None:
    chats = MemoryChatStore(store=store, namespace="alice")
    await chats.aset_messages("s", [user("m0"), user("m1"), user("m2")])
    first, second = await asyncio.gather(chats.adelete_last_message("s"), chats.adelete_last_message("s"))
    assert first is not None and second is not None
    assert {first.content, second.content} == {"m1", "m2"}
    assert [m.content for m in await chats.aget_messages("s")] == ["m0"]


# ---------------------------------------------------------------- arguments silently dropped
def test_from_defaults_seeds_the_chat_history(store: MemoryStore) -> None:
    memory = RecallMemory.from_defaults(
        store=store, namespace="alice", session_id="s", chat_history=[user("hello"), user("again")]
    )
    assert [m.content for m in memory.get_all()] == ["hello", "again"]
    assert [
        m.content for m in RecallMemory.from_defaults(store=store, namespace="alice", session_id="s").get_all()
    ] == [
        "hello",
        "again",
    ]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda s: RecallMemory.from_defaults(store=s, namespace="a", tokn_limit=5),
            r"'tokn_limit' \(did you mean 'token_limit'\?\)",
        ),
        (lambda s: RecallMemory(store=s, namespace="a", tokn_limit=5), r"did you mean 'token_limit'"),
        (
            lambda s: RecallMemoryBlock(store=s, namespace="a", similarity_top_k=2),
            r"'similarity_top_k'.*valid arguments are: .*\bk\b",
        ),
        (
            lambda s: MemoryChatStore(store=s, namespace="a", key="s"),
            r"'key'.*valid arguments are: class_name, namespace, store",
        ),
    ],
)
def test_misspelt_arguments_raise_a_typed_error_naming_the_valid_ones(
    store: MemoryStore, build: Callable[[MemoryStore], Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build(store)


@pytest.mark.parametrize(
    "build",
    [
        lambda s: RecallMemory(store=s, namespace="a", token_limit=True),
        lambda s: RecallMemory(store=s, namespace="a", k=True),
        lambda s: RecallMemoryBlock(store=s, namespace="a", k=True),
        lambda s: RecallMemoryBlock(store=s, namespace="a", token_budget=True),
    ],
)
def test_true_is_not_an_int(store: MemoryStore, build: Callable[[MemoryStore], Any]) -> None:
    with pytest.raises(ValidationError, match="valid integer"):
        build(store)
    with pytest.raises(ConfigError, match="similarity_top_k"):
        RecallRetriever(store, namespace="a", similarity_top_k=True)
    with pytest.raises(ConfigError, match="token_budget"):
        RecallRetriever(store, namespace="a", token_budget=True)


def test_an_over_long_chat_key_names_max_key_chars(store: MemoryStore) -> None:
    chats = MemoryChatStore(store=store, namespace="alice")
    long_key = "k" * (store.config.max_key_chars + 1)
    with pytest.raises(InvalidInputError, match="max_key_chars") as raised:
        chats.get_messages(long_key)
    assert "max_text_chars" not in str(raised.value)
    with pytest.raises(ValidationError, match="max_key_chars"):
        RecallMemory(store=store, namespace="alice", session_id=long_key)


# ---------------------------------------------------------------- serialisation
def test_adapters_round_trip_through_json_model_dump_and_pickle(two_tenants: MemoryStore) -> None:
    chats = MemoryChatStore(store=two_tenants, namespace="alice")
    chats.set_messages("s", [user("hi")])
    restored = MemoryChatStore.from_json(chats.to_json())
    assert restored.store is two_tenants and restored.get_messages("s") == chats.get_messages("s")
    assert pickle.loads(pickle.dumps(chats)).get_messages("s") == chats.get_messages("s")

    memory = RecallMemory.from_defaults(store=two_tenants, namespace="alice", session_id="s", k=2, recall_config=QUIET)
    data = json.loads(memory.to_json())
    assert data["store"]["uri"] == two_tenants.uri and data["k"] == 2
    again = RecallMemory.from_dict(data)
    assert (again.store, again.k, again.recall_config) == (two_tenants, 2, memory.recall_config)
    assert [m.content for m in again.get_all()] == ["hi"]
    assert pickle.loads(pickle.dumps(memory)).get_all() == memory.get_all()

    block = RecallMemoryBlock(store=two_tenants, namespace="alice", k=2)
    assert RecallMemoryBlock.model_validate(block.model_dump(mode="json")).k == 2
    unpickled = pickle.loads(pickle.dumps(block))
    assert (unpickled.store, unpickled.namespace, unpickled.k) == (two_tenants, "alice", 2)


def test_serialisation_refuses_what_cannot_be_rebuilt(tmp_path: Any, store: MemoryStore) -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=4), dimension=4)
    with MemoryStore(tmp_path / "wrapped", embedder=embedder) as wrapped:
        memory = RecallMemory(store=wrapped, namespace="alice")
        with pytest.raises(ConfigError, match="cannot be rebuilt from its name"):
            memory.to_json()
        with pytest.raises(ConfigError, match="cannot be rebuilt from its name"):
            pickle.dumps(memory)
        with pytest.raises(ConfigError, match="cannot be rebuilt from its name"):
            pickle.dumps(MemoryChatStore(store=wrapped, namespace="alice"))
    with pytest.raises(ConfigError, match="llm"):
        pickle.dumps(RecallMemoryBlock(store=store, namespace="alice", llm=lambda prompt: prompt))
