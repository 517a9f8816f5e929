"""MemoryDBChatStore: the short-term side of LlamaIndex's ``Memory`` in the memory store.

The first tests follow the scenarios of LlamaIndex's own tests for its SQLAlchemy chat store
(``llama-index-core/tests/storage/chat_store/test_sql.py``), written for this store (``delete_message``
takes a position here, not a row id); the rest run ``Memory.from_defaults`` over it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus

from llama_index.memory_retrievers import MemoryChatStore, MemoryDBChatStore, RecallMemoryBlock
from memory_retrievers import MemoryStore


def msg(role: str, content: str) -> ChatMessage:
    return ChatMessage(role=role, content=content)


THREE = [msg("user", "oldest"), msg("assistant", "middle"), msg("user", "newest")]


@pytest.fixture
def chat_store(store: MemoryStore) -> MemoryDBChatStore:
    return MemoryDBChatStore(store=store, namespace="alice")


# ---------------------------------------------------------------- the AsyncDBChatStore contract
async def test_add_and_get_messages(chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_message("u1", msg("user", "hello"))
    await chat_store.add_message("u1", msg("assistant", "world"))
    messages = await chat_store.get_messages("u1")
    assert [(m.role.value, m.content) for m in messages] == [("user", "hello"), ("assistant", "world")]
    assert await chat_store.get_messages("nonexistent") == []


async def test_add_messages_in_one_batch_and_count(chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_messages("b", [msg("user", "hello"), msg("assistant", "world"), msg("user", "how are you?")])
    assert [m.content for m in await chat_store.get_messages("b")] == ["hello", "world", "how are you?"]
    assert await chat_store.count_messages("b") == 3
    assert await chat_store.count_messages("nonexistent") == 0


async def test_set_messages_replaces_the_session(chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_message("r", msg("user", "initial"))
    await chat_store.set_messages("r", [msg("user", "replaced1"), msg("assistant", "replaced2")])
    assert [m.content for m in await chat_store.get_messages("r")] == ["replaced1", "replaced2"]


async def test_delete_one_and_all_messages(chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_messages("d", [msg("user", "message1"), msg("assistant", "message2"), msg("user", "message3")])
    deleted = await chat_store.delete_message("d", 1)
    assert deleted is not None and deleted.content == "message2"
    assert [m.content for m in await chat_store.get_messages("d")] == ["message1", "message3"]
    assert await chat_store.delete_message("d", 5) is None
    await chat_store.add_message("other", msg("user", "stays"))
    await chat_store.delete_messages("d")
    assert await chat_store.get_messages("d") == []
    assert [m.content for m in await chat_store.get_messages("other")] == ["stays"]


async def test_delete_and_archive_the_oldest_messages(chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_messages("o", THREE)
    assert [m.content for m in await chat_store.delete_oldest_messages("o", 1)] == ["oldest"]
    assert [m.content for m in await chat_store.get_messages("o")] == ["middle", "newest"]
    await chat_store.add_messages("a", THREE)
    assert [m.content for m in await chat_store.archive_oldest_messages("a", 1)] == ["oldest"]
    assert [m.content for m in await chat_store.get_messages("a", status=MessageStatus.ACTIVE)] == ["middle", "newest"]
    assert [m.content for m in await chat_store.get_messages("a", status=MessageStatus.ARCHIVED)] == ["oldest"]
    assert [m.content for m in await chat_store.get_messages("a", status=None)] == ["oldest", "middle", "newest"]
    await chat_store.delete_messages("a", status=MessageStatus.ARCHIVED)
    assert await chat_store.count_messages("a", status=None) == 2


async def test_limit_offset_and_keys(chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_messages("p", [msg("user", f"message{i}") for i in range(1, 6)])
    assert [m.content for m in await chat_store.get_messages("p", limit=2)] == ["message1", "message2"]
    assert [m.content for m in await chat_store.get_messages("p", offset=2)] == ["message3", "message4", "message5"]
    assert [m.content for m in await chat_store.get_messages("p", limit=2, offset=1)] == ["message2", "message3"]
    await chat_store.add_message("k2", msg("user", "x"))
    assert set(await chat_store.get_keys()) == {"p", "k2"}


async def test_it_reads_the_same_sessions_as_the_chat_store(store: MemoryStore, chat_store: MemoryDBChatStore) -> None:
    await chat_store.add_messages("s", THREE)
    await chat_store.archive_oldest_messages("s", 1)
    assert [m.content for m in await MemoryChatStore(store=store, namespace="alice").aget_messages("s")] == [
        "oldest",
        "middle",
        "newest",
    ]


# ---------------------------------------------------------------- Memory.from_defaults over it
async def test_memory_keeps_its_short_term_chat_across_a_restart(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    memory = Memory.from_defaults(session_id="chat-1", chat_store=MemoryDBChatStore(store=store, namespace="alice"))
    await memory.aput_messages([msg("user", "My sister Carla lives in Lisbon"), msg("assistant", "Noted!")])
    assert [m.content for m in await memory.aget()] == ["My sister Carla lives in Lisbon", "Noted!"]
    await store.aclose()

    # A restart: new objects over the same folder.
    again = Memory.from_defaults(
        session_id="chat-1", chat_store=MemoryDBChatStore(store=make_store(), namespace="alice")
    )
    assert [m.content for m in await again.aget()] == ["My sister Carla lives in Lisbon", "Noted!"]
    assert [m.content for m in await again.aget_all()] == ["My sister Carla lives in Lisbon", "Noted!"]


async def test_memory_archives_into_the_store_and_the_block_does_not_store_twice(store: MemoryStore) -> None:
    chat_store = MemoryDBChatStore(store=store, namespace="alice")
    block = RecallMemoryBlock(store=store, namespace="alice", token_budget=200)
    memory = Memory.from_defaults(
        session_id="s", chat_store=chat_store, memory_blocks=[block], token_limit=60, token_flush_size=10
    )
    turns = [
        msg("user" if i % 2 == 0 else "assistant", f"turn {i}: the garden needs water on day {i}") for i in range(8)
    ]
    for turn in turns:
        await memory.aput(turn)
    archived = await chat_store.get_messages("s", status=MessageStatus.ARCHIVED)
    assert archived, "the token limit should have flushed some messages"
    active = await chat_store.get_messages("s", status=MessageStatus.ACTIVE)
    assert [m.content for m in archived + active] == [t.content for t in turns]
    # Each message is one memory: the block saw the flushed ones were already here.
    assert store.count("alice") == len(turns)
    got = await memory.aget()
    assert any("garden" in str(m.content) for m in got)


async def test_a_longmemeval_length_reply_is_stored_whole_and_recalled_by_its_passage(
    chat_store: MemoryDBChatStore, store: MemoryStore
) -> None:
    from llama_index.memory_retrievers import RecallRetriever

    # One LongMemEval assistant turn is 77k characters: stored whole, as its memory's text too.
    reply = "The build ran its checks. " * 800 + "The nightly export runs on worker-3. " + "Done. " * 9_400
    assert len(reply) > 77_000
    await chat_store.add_messages("s1", [msg("user", "How did last night's build go?"), msg("assistant", reply)])
    assert [m.content for m in await chat_store.get_messages("s1")] == ["How did last night's build go?", reply]
    assert f"assistant: {reply}" in {m.text for m in await store.alist("alice")}

    nodes = await RecallRetriever(store=store, namespace="alice", similarity_top_k=3).aretrieve(
        "which worker runs the nightly export?"
    )
    assert nodes and nodes[0].node.metadata["session_id"] == "s1" and "The build ran" in nodes[0].node.text
    excerpt = nodes[0].node.metadata["excerpt"]
    assert "The nightly export runs on worker-3." in excerpt and len(excerpt) <= 1_202
    assert "excerpt" not in nodes[0].node.get_content(metadata_mode="llm")  # the LLM sees the text, not the key
