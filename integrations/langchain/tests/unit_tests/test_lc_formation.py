"""Memory formation through the LangChain adapters: turns stored at once, facts formed off the hot path."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_memory_retrievers import MemoryChatMessageHistory, MemoryMiddleware
from memory_retrievers import ConfigError, HashEmbedder, MemoryStore
from memory_retrievers.formation import MemoryFormer


class GatedExtractor:
    """An extraction LLM that answers only once the test opens the gate (a slow model)."""

    def __init__(self, fact: str) -> None:
        self.fact = fact
        self.gate = threading.Event()
        self.asked = threading.Event()

    def complete(self, prompt: str) -> str:
        if not prompt.startswith("Extract"):
            return '{"action": "ADD"}'
        self.asked.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return json.dumps({"facts": [{"text": self.fact, "sources": [1], "confidence": "explicit"}]})

    async def acomplete(self, prompt: str) -> str:
        import asyncio

        return await asyncio.to_thread(self.complete, prompt)


def facts(store: MemoryStore, namespace: str) -> list[Any]:
    return store.list(namespace, filter={"kinds": ["fact"]})


def test_the_agent_answers_before_extraction_and_the_fact_links_to_the_turn(store: MemoryStore) -> None:
    llm = GatedExtractor("Alice's sister Carla lives in Lisbon.")
    former = MemoryFormer(store, llm=llm)
    model = FakeMessagesListChatModel(responses=[AIMessage("Noted.")])
    agent = create_agent(model, tools=[], middleware=[MemoryMiddleware(store, namespace="alice", former=former)])
    out = agent.invoke(
        {"messages": [HumanMessage("My sister Carla lives in Lisbon")]}, {"configurable": {"thread_id": "t"}}
    )

    assert out["messages"][-1].text == "Noted."  # returned while the extractor is still blocked
    assert llm.asked.wait(10) and facts(store, "alice") == []
    (turn,) = store.list("alice", filter={"kinds": ["message"]})  # the turn is stored already
    llm.gate.set()
    former.flush(timeout=30)
    (fact,) = facts(store, "alice")
    assert fact.text == "Alice's sister Carla lives in Lisbon." and fact.links == (turn.id,)
    assert fact.session_id == "t"
    former.close()


def test_chat_history_hands_each_stored_batch_to_the_former(store: MemoryStore) -> None:
    llm = GatedExtractor("Bob is allergic to peanuts.")
    llm.gate.set()
    former = MemoryFormer(store, llm=llm)
    history = MemoryChatMessageHistory(store, namespace="bob", session_id="s1", former=former)
    history.add_messages([HumanMessage("I'm allergic to peanuts"), AIMessage("I'll remember that.")])
    former.flush(timeout=30)
    (fact,) = facts(store, "bob")
    first = history.messages[0]
    assert first.text == "I'm allergic to peanuts"
    source = store.get(fact.links[0], namespace="bob")
    assert source.session_id == "s1" and "peanuts" in source.text
    former.close()


def test_a_failing_extractor_costs_no_turn_and_never_reaches_the_caller(store: MemoryStore) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("model down")

    former = MemoryFormer(store, llm=broken)
    history = MemoryChatMessageHistory(store, namespace="bob", session_id="s1", former=former)
    history.add_messages([HumanMessage("I moved to Porto")])
    former.flush(timeout=30)
    assert [m.text for m in history.messages] == ["I moved to Porto"] and facts(store, "bob") == []
    former.close()


def test_a_former_must_write_to_the_adapters_store(store: MemoryStore, tmp_path: Any) -> None:
    with MemoryStore(tmp_path / "other", embedder=HashEmbedder(16)) as other:
        with pytest.raises(ConfigError, match="same store"):
            MemoryMiddleware(store, namespace="a", former=MemoryFormer(other))
        with pytest.raises(ConfigError, match="same store"):
            MemoryChatMessageHistory(store, namespace="a", session_id="s", former=MemoryFormer(other))
    with pytest.raises(ConfigError, match="remember"):
        MemoryMiddleware(store, namespace="a", remember="off", former=MemoryFormer(store))
    with pytest.raises(ConfigError, match="MemoryFormer"):
        MemoryMiddleware(store, namespace="a", former=object())


def test_a_re_pointed_history_forms_facts_in_its_new_namespace(store: MemoryStore) -> None:
    llm = GatedExtractor("The user is allergic to peanuts.")
    llm.gate.set()
    former = MemoryFormer(store, llm=llm)
    history = MemoryChatMessageHistory(store, namespace="bob", session_id="s1", former=former)
    history.add_messages([HumanMessage("Hi")])
    history.namespace, history.session_id = "carol", "s9"
    history.add_messages([HumanMessage("I'm allergic to peanuts")])
    former.flush(timeout=30)
    carol = facts(store, "carol")
    assert {f.session_id for f in carol} == {"s9"} and len(carol) == 1
    (source,) = carol[0].links
    assert store.get(source, namespace="carol").text.endswith("I'm allergic to peanuts")
    assert all(store.get(link, namespace="bob") for f in facts(store, "bob") for link in f.links)
    former.close()
