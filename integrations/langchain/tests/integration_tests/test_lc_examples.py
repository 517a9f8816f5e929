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
