"""LangChain's standard retriever suite, on a real store with the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

import functools
import shutil
import tempfile
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_memory_retrievers import RecallRetriever
from memory_retrievers import MemoryStore, SentenceTransformerEmbedder

FACTS = [
    "Alice prefers the dark theme in every editor",
    "Alice's dog is called Rex",
    "Alice moved to Berlin in March",
    "Alice drinks green tea every morning",
    "Alice is learning to play jazz piano",
    "Alice works as a data engineer at Acme",
]


@functools.cache
def _store() -> MemoryStore:
    # The suite builds retrievers from a property, not a fixture, so the store is made once per
    # process in its own temporary folder (removed at exit by the fixture below).
    store = MemoryStore(tempfile.mkdtemp(prefix="lc-standard-"), embedder=SentenceTransformerEmbedder())
    store.add_many([{"text": t} for t in FACTS], namespace="alice")
    return store


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Any:
    yield
    if _store.cache_info().currsize:
        store = _store()
        store.close()
        shutil.rmtree(store.uri, ignore_errors=True)
        _store.cache_clear()


@pytest.mark.integration
class TestRecallRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RecallRetriever]:
        return RecallRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": _store(), "namespace": "alice", "recall_config": {"record_access": False}}

    @property
    def retriever_query_example(self) -> str:
        return "What does Alice like to drink?"


@pytest.mark.integration
def test_minilm_recall_answers_semantic_questions() -> None:
    # Questions sharing no word with their answer, asked in the third person of memories written in
    # the first: MiniLM puts them as far from their answers as off-topic questions (cosine about
    # 0.2), so by default recall abstains on them (docs/explanation/agent-context.md). This checks the ranking.
    config = {"record_access": False, "relevance": {"abstain_below": 0.0}}
    retriever = RecallRetriever(**{"store": _store(), "namespace": "alice", "recall_config": config})
    assert retriever.invoke("Which city does she live in?", k=1)[0].page_content == "Alice moved to Berlin in March"
    assert retriever.invoke("What is her pet's name?", k=1)[0].page_content == "Alice's dog is called Rex"
    assert retriever.invoke("What does she do for a living?", k=1)[0].page_content.endswith("at Acme")
