"""The LangChain examples run as the README says (offline, real model, temporary store)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

OFFLINE = ("MEMORY_RETRIEVERS_CHAT_MODEL",)


@pytest.mark.integration
def test_rag_chain_example(run_example: Callable[..., str]) -> None:
    out = run_example("langchain_rag_chain.py", unset=OFFLINE)
    assert "- Alice moved from Paris to Berlin in March 2024." in out
    assert "answer: You live in Berlin" in out


@pytest.mark.integration
def test_agent_example_recalls_across_threads(run_example: Callable[..., str]) -> None:
    out = run_example("langchain_agent_memory.py", unset=OFFLINE)
    friday = out[out.index("[thread friday] user") :]
    assert "- [" in friday and "user: My sister Carla lives in Lisbon." in friday
    assert "stored memories (the user's turns): 2" in out  # the assistant's replies are not kept by default


@pytest.mark.integration
def test_chat_history_example_keeps_the_conversation_both_ways(run_example: Callable[..., str]) -> None:
    out = run_example("langchain_chat_history.py", unset=OFFLINE)
    runnable, graph = out.split("2. LangGraph (current)")
    for part, session in [(runnable, "runnable-chat"), (graph, "graph-chat")]:
        # the second question reaches the model after the system message and the first turn
        assert part.count("(the model sees 2 messages)") == 1 and part.count("(the model sees 4 messages)") == 1
        assert f"session {session!r} holds 4 messages: ['human', 'ai', 'human', 'ai']" in part
