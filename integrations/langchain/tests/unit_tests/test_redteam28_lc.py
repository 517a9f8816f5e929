"""Red-team tests of the issue 28 refactor, LangChain adapter side."""

from __future__ import annotations

import pytest

from langchain_memory_retrievers import RecallRetriever
from memory_retrievers import ConfigError, MemoryStore


def test_a_misspelled_channel_weight_is_refused_when_the_retriever_is_built(store: MemoryStore) -> None:
    # At c4d7fc4, RecallRetriever(recall_config={"weights": {"vectr": 2}}) raised at construction
    # (ChannelWeights refused unknown names). Now ChannelWeights takes any name (plug-in weights)
    # and the AdapterModel builds its RecallBinding lazily, so the typo passes construction and the
    # first invoke in production raises instead.
    with pytest.raises((ConfigError, ValueError), match="vectr"):
        RecallRetriever(store=store, namespace="alice", recall_config={"weights": {"vectr": 2.0}})


# At c4d7fc4 MemoryChatMessageHistory and MemoryStoreLangGraph refused a non-store with
# InvalidInputError (their docstrings' Raises); the adapter base now raises ConfigError, which is
# not an InvalidInputError (both are ValueErrors): an `except InvalidInputError` written against
# the release before no longer catches it, and nothing warned.


def test_chat_history_still_refuses_a_non_store_with_invalid_input_error() -> None:
    from langchain_memory_retrievers import MemoryChatMessageHistory
    from memory_retrievers import InvalidInputError

    with pytest.raises(InvalidInputError, match="MemoryStore"):
        MemoryChatMessageHistory("./not-a-store", namespace="alice", session_id="s1")  # type: ignore[arg-type]


def test_langgraph_store_still_refuses_a_non_store_with_invalid_input_error() -> None:
    from langchain_memory_retrievers import MemoryStoreLangGraph
    from memory_retrievers import InvalidInputError

    with pytest.raises(InvalidInputError, match="MemoryStore"):
        MemoryStoreLangGraph("./not-a-store")  # type: ignore[arg-type]
