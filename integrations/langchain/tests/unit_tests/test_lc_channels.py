"""A user's recall channel through every LangChain adapter that recalls (issue 41 item 4).

``MemoryRetriever(store, channels=[...])`` took plug-in channels; the adapters built their core
retriever without them and refused a weight naming one. Each adapter now takes ``channels=``.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import ValidationError

from langchain_memory_retrievers import MemoryMiddleware, MemoryStoreLangGraph, RecallRetriever
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


def _channels_of(doc: Any) -> set[str]:
    return {c["channel"] for c in doc.metadata["explanation"]["channels"]}


def test_the_retriever_recalls_through_its_channels_and_explains_them(zoo: MemoryStore) -> None:
    zebra = WordChannel()
    retriever = RecallRetriever(store=zoo, namespace="alice", channels=[zebra], recall_config=WEIGHTED)
    docs = retriever.invoke(QUESTION)
    assert [d.page_content for d in docs if "zebra" in _channels_of(d)] == [ZEBRA]  # alice's only
    assert zebra.searches == 1
    retriever.invoke(QUESTION, recall_config={"weights": {"zebra": 0.0}})  # off for one call
    assert zebra.searches == 1
    assert "zebra" in retriever.memory_retriever.channels  # the core retriever it hands out has it too


def test_the_retriever_refuses_a_weight_for_a_channel_it_does_not_have(zoo: MemoryStore) -> None:
    with pytest.raises(ValidationError, match=r"unknown channel\(s\) \['zebra'\]"):
        RecallRetriever(store=zoo, namespace="alice", recall_config=WEIGHTED)


def test_a_retriever_with_channels_refuses_pickle_and_langchain_dumps(zoo: MemoryStore) -> None:
    retriever = RecallRetriever(store=zoo, namespace="alice", channels=[WordChannel()])
    for serialise in (pickle.dumps, dumps):
        with pytest.raises(ConfigError, match="with channels set cannot be serialised"):
            serialise(retriever)


def test_the_middleware_recalls_through_its_channels(zoo: MemoryStore) -> None:
    zebra = WordChannel()
    middleware = MemoryMiddleware(zoo, namespace="alice", channels=[zebra], recall_config=WEIGHTED, remember="off")
    model = FakeMessagesListChatModel(responses=[AIMessage("Green tea.")])
    create_agent(model, tools=[], middleware=[middleware]).invoke({"messages": [HumanMessage(QUESTION)]})
    assert zebra.searches == 1
    with pytest.raises(ConfigError, match="channels must be a list of Channel"):
        MemoryMiddleware(zoo, namespace="alice", channels=zebra)  # type: ignore[arg-type]


def test_the_langgraph_store_searches_through_its_channels_when_a_query_is_given(store: MemoryStore) -> None:
    zebra = WordChannel()
    graph_store = MemoryStoreLangGraph(store, channels=[zebra], recall_config=WEIGHTED)
    graph_store.put(("memories", "alice"), "tea", {"text": "Alice drinks green tea every morning"})
    graph_store.put(("memories", "alice"), "zoo", {"text": ZEBRA})
    graph_store.search(("memories", "alice"), limit=5)  # a listing, no recall
    assert zebra.searches == 0
    found = graph_store.search(("memories", "alice"), query=QUESTION, limit=5)
    assert zebra.searches == 1 and {item.key for item in found} == {"tea", "zoo"}
