"""Memory formation through LlamaIndex's memory block: flushed messages stored, facts formed in the background."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import Memory

from llama_index.memory_retrievers import RecallMemoryBlock
from memory_retrievers import ConfigError, HashEmbedder, MemoryStore
from memory_retrievers.formation import MemoryFormer


def extractor(prompt: str) -> str:
    if not prompt.startswith("Extract"):
        return '{"action": "ADD"}'
    return json.dumps(
        {"facts": [{"text": "Alice adopted a cat named Miso.", "sources": [1], "confidence": "explicit"}]}
    )


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


async def test_flushed_messages_become_facts_linked_to_them(store: MemoryStore) -> None:
    former = MemoryFormer(store, llm=extractor)
    block = RecallMemoryBlock(store=store, namespace="alice", former=former)
    await block.aput([user("I adopted a cat named Miso")], from_short_term_memory=True, session_id="old")
    former.flush(timeout=30)
    (turn,) = store.list("alice", filter={"kinds": ["message"]})
    (fact,) = store.list("alice", filter={"kinds": ["fact"]})
    assert fact.text == "Alice adopted a cat named Miso." and fact.links == (turn.id,) and fact.session_id == "old"
    # Recall shows the source turn, the fact folded into it.
    content = await block.aget([user("What is my cat called?")])
    assert "I adopted a cat named Miso" in content
    former.close()


async def test_inside_llama_index_memory(store: MemoryStore) -> None:
    former = MemoryFormer(store, llm=extractor)
    block = RecallMemoryBlock(store=store, namespace="alice", former=former)
    memory = Memory.from_defaults(
        session_id="chat", token_limit=60, memory_blocks=[block], chat_history_token_ratio=0.5
    )
    for i in range(8):  # enough to flush the oldest messages out of short-term memory
        await memory.aput_messages([user(f"Message {i}: I adopted a cat named Miso and she is {i} months old")])
    former.flush(timeout=30)
    assert store.count("alice", filter={"kinds": ["fact"]}) >= 1
    await memory.sql_store._async_engine.dispose()  # LlamaIndex's default SQLite chat store
    former.close()


def test_a_block_with_a_former_is_shared_on_copy_and_refuses_pickle(store: MemoryStore, tmp_path: Path) -> None:
    former = MemoryFormer(store)
    block = RecallMemoryBlock(store=store, namespace="alice", former=former)
    assert copy.deepcopy(block).former is former
    with pytest.raises(ConfigError, match="former"):
        pickle.dumps(block)
    # A pydantic model: the adapter's ConfigError arrives as its ValidationError (also a ValueError).
    with (
        MemoryStore(tmp_path / "other", embedder=HashEmbedder(16)) as other,
        pytest.raises(ValueError, match="same store"),
    ):
        RecallMemoryBlock(store=store, namespace="alice", former=MemoryFormer(other))


async def test_recall_memory_forms_facts_from_its_messages_in_the_background(store: MemoryStore) -> None:
    from llama_index.memory_retrievers import RecallMemory

    former = MemoryFormer(store, llm=extractor)
    memory = RecallMemory.from_defaults(store=store, namespace="alice", session_id="monday", former=former)
    await memory.aput_messages([user("I adopted a cat named Miso")])
    former.flush(timeout=30)
    (turn,) = store.list("alice", filter={"kinds": ["message"]})
    (fact,) = store.list("alice", filter={"kinds": ["fact"]})
    assert fact.links == (turn.id,) and fact.session_id == "monday"
    assert [m.content for m in await memory.aget_all()] == ["I adopted a cat named Miso"]
    with pytest.raises(ConfigError, match="former"):
        pickle.dumps(memory)
    former.close()
