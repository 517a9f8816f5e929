"""The LlamaIndex adapters on the chat traffic of issue 26, with the real model and its calibration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index.memory_retrievers import MemoryDBChatStore, RecallMemory, RecallMemoryBlock, RecallRetriever
from memory_retrievers import MemoryStore, SentenceTransformerEmbedder


@pytest.fixture
def store(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> Iterator[MemoryStore]:
    opened = MemoryStore(tmp_path / "db", embedder=minilm)
    yield opened
    opened.close()


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def test_a_similarity_cutoff_keeps_an_exact_answer(store: MemoryStore) -> None:
    store.add("My secret code is 4471.", namespace="alice")
    store.add("Alice likes green tea.", namespace="alice")
    store.add("Alice moved to Berlin in March.", namespace="alice")
    retriever = RecallRetriever(store, namespace="alice")
    nodes = retriever.retrieve("What is my secret code?")
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    engine = RetrieverQueryEngine.from_args(
        retriever, llm=MockLLM(max_tokens=8), node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.3)]
    )
    response = engine.query("What is my secret code?")
    assert [n.node.get_content() for n in response.source_nodes] == ["My secret code is 4471."]
    assert str(response) != "Empty Response"


def test_memory_block_neither_echoes_the_window_nor_fills_an_off_topic_turn(store: MemoryStore) -> None:
    store.add("Alice's cat Miso likes tuna.", namespace="alice")
    memory = Memory.from_defaults(
        session_id="chat",
        chat_store=MemoryDBChatStore(store=store, namespace="alice"),
        memory_blocks=[RecallMemoryBlock(store=store, namespace="alice", k=10)],
    )
    memory.put_messages([user("Miso is my cat."), ChatMessage(role=MessageRole.ASSISTANT, content="Lovely name!")])
    messages = memory.get(input="what does my cat Miso like?")
    block = next(str(m.content) for m in messages if "<recalled_memories>" in str(m.content))
    recalled = block.split("<recalled_memories>")[1].split("</recalled_memories>")[0]
    assert "likes tuna" in recalled and "Miso is my cat" not in recalled and "Lovely name" not in recalled
    off_topic = memory.get(input="What is the boiling point of tungsten?")
    assert not any("recalled_memories" in str(m.content) for m in off_topic)


def test_resets_keep_the_long_term_memories(store: MemoryStore) -> None:
    memory = RecallMemory.from_defaults(store=store, namespace="alice", session_id="s")
    engine = SimpleChatEngine.from_defaults(memory=memory, llm=MockLLM(max_tokens=4))
    engine.chat("My sister Carla lives in Lisbon.")
    before = store.count("alice")
    engine.reset()
    assert store.count("alice") == before == 2 and memory.get_all() == []
    recalled = memory.get("where does my sister live?")
    assert recalled[0].role == MessageRole.SYSTEM and "Carla lives in Lisbon" in str(recalled[0].content)
