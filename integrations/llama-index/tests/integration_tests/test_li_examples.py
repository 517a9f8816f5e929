"""The LlamaIndex examples run as the README says (offline, real model, temporary store)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

OFFLINE = ("MEMORY_RETRIEVERS_LLAMA_LLM",)


@pytest.mark.integration
def test_query_engine_example(run_example: Callable[..., str]) -> None:
    out = run_example("llama_index_query_engine.py", unset=OFFLINE)
    sources = out[out.index("sources:") : out.index("answer:")]
    assert "Alice moved from Paris to Berlin in March 2024." in sources


@pytest.mark.integration
def test_chat_memory_example_recalls_across_sessions(run_example: Callable[..., str]) -> None:
    out = run_example("llama_index_chat_memory.py", unset=OFFLINE)
    friday = out[out.index("[friday] memory recalled") :]
    assert "user: My sister Carla lives in Lisbon." in friday
    assert "stored messages: 4" in out
