"""MemoryMiddleware on the chat traffic of issue 26, with the real model and its calibration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_memory_retrievers import MemoryMiddleware, RecallRetriever
from memory_retrievers import MemoryStore, SentenceTransformerEmbedder


class SpyModel(FakeMessagesListChatModel):
    """A fake chat model that records the system message of every call."""

    seen: list[str]

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.seen.append(str(messages[0].text) if messages and messages[0].type == "system" else "")
        return super()._generate(messages, stop, run_manager, **kw)


@pytest.fixture
def store(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> Iterator[MemoryStore]:
    opened = MemoryStore(tmp_path / "db", embedder=minilm)
    yield opened
    opened.close()


def agent_with_memory(store: MemoryStore, answers: int) -> tuple[Any, SpyModel]:
    model = SpyModel(responses=[AIMessage("You're welcome! Anything else?")] * answers, seen=[])
    return create_agent(model, tools=[], middleware=[MemoryMiddleware(store, namespace="alice", k=10)]), model


def lines(system: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in system.splitlines() if line.startswith("- [")]


def test_after_eight_thanks_the_block_holds_the_fact_not_the_thanks(store: MemoryStore) -> None:
    agent, model = agent_with_memory(store, 11)
    agent.invoke({"messages": [HumanMessage("my daughter Mia starts school in September")]})
    for _ in range(8):
        agent.invoke({"messages": [HumanMessage("thanks!")]})
    agent.invoke({"messages": [HumanMessage("when does Mia start school?")]})
    got = lines(model.seen[-1])
    assert got[0] == "user: my daughter Mia starts school in September"
    assert "user: thanks!" not in got


def test_an_off_topic_question_adds_no_block_on_any_turn(store: MemoryStore) -> None:
    agent, model = agent_with_memory(store, 4)
    agent.invoke({"messages": [HumanMessage("My sister Carla lives in Lisbon.")]})
    agent.invoke({"messages": [HumanMessage("I am allergic to peanuts.")]})
    for _ in range(2):
        agent.invoke({"messages": [HumanMessage("What is the boiling point of tungsten?")]})
        assert model.seen[-1] == ""  # no memory block at all in the system message


def test_the_answer_outranks_the_earlier_question(store: MemoryStore) -> None:
    agent, model = agent_with_memory(store, 5)
    agent.invoke({"messages": [HumanMessage("What is my secret code?")]})  # asked first, stored
    agent.invoke({"messages": [HumanMessage("My secret code is 4471.")]})
    agent.invoke({"messages": [HumanMessage("I like green tea in the morning.")]})
    for question in ("What is my secret code?", "what's my secret code again?"):
        agent.invoke({"messages": [HumanMessage(question)]})
        got = lines(model.seen[-1])
        assert got[0] == "user: My secret code is 4471."
        assert "user: What is my secret code?" not in got[:1]


def test_relevance_scores_follow_langchain_conventions(store: MemoryStore) -> None:
    store.add("My secret code is 4471.", namespace="alice")
    store.add("Alice likes green tea.", namespace="alice")
    docs = RecallRetriever(store=store, namespace="alice").invoke("What is my secret code?")
    scores = [d.metadata["relevance_score"] for d in docs]
    assert docs[0].page_content == "My secret code is 4471." and scores[0] >= 0.3
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
