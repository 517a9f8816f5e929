"""A user's recall channel through every LlamaIndex adapter that recalls (issue 41 item 4).

``MemoryRetriever(store, channels=[...])`` took plug-in channels; the adapters built their core
retriever without them and refused a weight naming one. Each adapter now takes ``channels=``.
"""

from __future__ import annotations

import pickle

import pytest
from llama_index.core.llms import ChatMessage
from pydantic import ValidationError

from llama_index.memory_retrievers import RecallMemory, RecallMemoryBlock, RecallRetriever
from memory_retrievers import (
    ConfigError,
    MemoryStore,
)
from testing.channels import WordChannel

ZEBRA = "the zebra at the zoo is called Stripes"
QUESTION = "What does Alice drink in the morning?"
WEIGHTED = {"record_access": False, "weights": {"zebra": 3.0}}


@pytest.fixture
def zoo(store: MemoryStore) -> MemoryStore:
    store.add_many([{"text": "Alice drinks green tea every morning"}, {"text": ZEBRA}], namespace="alice")
    store.add("Bob's zebra is a plush toy", namespace="bob")
    return store


def test_the_retriever_recalls_through_its_channels_and_explains_them(zoo: MemoryStore) -> None:
    zebra = WordChannel()
    retriever = RecallRetriever(zoo, namespace="alice", channels=[zebra], recall_config=WEIGHTED)
    nodes = retriever.retrieve(QUESTION)
    lists = {n.node.get_content(): {c["channel"] for c in n.node.metadata["explanation"]["channels"]} for n in nodes}
    found = [text for text, channels in lists.items() if "zebra" in channels]
    assert found == [ZEBRA] and zebra.searches == 1  # alice's zebra only
    with pytest.raises(ConfigError, match=r"unknown channel\(s\) \['zebra'\]"):
        RecallRetriever(zoo, namespace="alice", recall_config=WEIGHTED)


async def test_the_memory_block_recalls_through_its_channels(zoo: MemoryStore) -> None:
    zebra = WordChannel()
    block = RecallMemoryBlock(store=zoo, namespace="alice", channels=[zebra], recall_config=WEIGHTED)
    assert "Alice drinks green tea" in await block.aget([ChatMessage(role="user", content=QUESTION)])
    assert zebra.searches == 1
    assert "zebra" in block.memory_retriever.channels
    with pytest.raises(ValidationError, match=r"unknown channel\(s\) \['zebra'\]"):
        block.channels = None  # its weight would name no channel: refused, the block unchanged
    assert block.channels is not None and block.channels[0] is zebra
    with pytest.raises(ConfigError, match="with channels set cannot be serialised"):
        pickle.dumps(block)


def test_the_memory_recalls_through_its_channels(zoo: MemoryStore) -> None:
    zebra = WordChannel()
    memory = RecallMemory(store=zoo, namespace="alice", session_id="s", channels=[zebra], recall_config=WEIGHTED)
    memory.put(ChatMessage(role="user", content=QUESTION))
    memory.get(input=QUESTION)
    assert zebra.searches == 1
