"""RecallRetriever against the real LangChain BaseRetriever machinery (hash embedder)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from pydantic import ValidationError

from langchain_memory_retrievers import LangChainLLM, RecallRetriever
from memory_retrievers import ConfigError, InvalidInputError, MemoryStore
from memory_retrievers.llm import hyde_prompt
from memory_retrievers.recall.calibration import FEATURES

QUIET = {"record_access": False}


def test_documents_carry_id_fields_score_and_explanation(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", recall_config=QUIET)
    docs = retriever.invoke("What is the name of Alice's dog?")
    assert docs and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.page_content == "Alice's dog is called Rex"
    assert top.id == filled.list("alice", filter={"kinds": ["fact"]}, limit=10)[-1].id  # the first fact stored
    assert top.metadata["namespace"] == "alice" and top.metadata["kind"] == "fact"
    assert "text" not in top.metadata and "vector" not in top.metadata
    explanation = top.metadata["explanation"]
    assert {c["channel"] for c in explanation["channels"]} & {"vector", "bm25", "context"}
    # The calibrated score, under LangChain's name too: in [0, 1], and the documents come in its order.
    scores = [d.metadata["relevance_score"] for d in docs]
    assert scores == [d.metadata["score"] for d in docs] and all(0 <= s <= 1 for s in scores)
    assert explanation["calibrated_by"] and set(explanation["calibration"]) == set(FEATURES)
    assert len({d.id for d in docs}) == len(docs)
    assert scores == sorted(scores, reverse=True)


def test_k_as_field_and_as_invoke_kwarg(filled: MemoryStore) -> None:
    assert len(RecallRetriever(store=filled, namespace="alice", k=2).invoke("Alice")) == 2
    retriever = RecallRetriever(store=filled, namespace="alice", k=2)
    assert len(retriever.invoke("Alice", k=4)) == 4
    assert len(retriever.invoke("Alice", k=1)) == 1
    with pytest.raises(InvalidInputError, match="k must be"):
        retriever.invoke("Alice", k=0)


def test_never_returns_another_namespace(filled: MemoryStore) -> None:
    docs = RecallRetriever(store=filled, namespace="bob", k=10).invoke("Alice theme tea dog")
    assert [d.page_content for d in docs] == ["Bob prefers the light theme"]
    assert RecallRetriever(store=filled, namespace="bob' OR '1'='1", k=10).invoke("theme") == []


def test_filters_default_and_per_call(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", k=10, filters={"kinds": ["preference"]})
    assert {d.metadata["kind"] for d in retriever.invoke("Alice")} == {"preference"}
    # per call wins over the default
    assert {d.metadata["kind"] for d in retriever.invoke("Alice", kinds=["event"])} == {"event"}


def test_token_budget_and_recall_config_per_call(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", k=6, recall_config=QUIET)
    full = retriever.invoke("Alice")
    assert len(full) == 6
    tight = retriever.invoke("Alice", token_budget=60)
    assert 1 <= len(tight) < 6
    assert sum(d.metadata["explanation"]["tokens"] for d in tight) <= 60
    # A RecallConfig override per call: only the BM25 channel contributes.
    weights = {"vector": 0, "context": 0, "entity": 0, "recency": 0, "links": 0, "hyde": 0, "bm25": 1}
    docs = retriever.invoke("green tea", recall_config={"weights": weights, "mode": "hybrid"})
    assert docs[0].page_content == "Alice drinks green tea every morning"
    assert {c["channel"] for d in docs for c in d.metadata["explanation"]["channels"]} == {"bm25"}


def test_recall_gives_the_context_block(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", k=2)
    block = retriever.recall("dog").to_context()
    assert block.startswith("Relevant memories") and "Rex" in block


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"kinds": ["nope"]}, InvalidInputError, "kind"),
        ({"tag_any": ["x"]}, InvalidInputError, "unknown recall argument"),
        ({"recall_config": {"mmr_lambada": 0.5}}, ConfigError, "mmr_lambada"),
        ({"token_budget": -1}, InvalidInputError, "token_budget"),
    ],
)
def test_invalid_per_call_arguments_raise_typed_errors(
    filled: MemoryStore, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice")
    with pytest.raises(error, match=message):
        retriever.invoke("Alice", **kwargs)


def test_invalid_construction(filled: MemoryStore) -> None:
    with pytest.raises(ValidationError, match="namespace"):
        RecallRetriever(store=filled, namespace="")
    with pytest.raises(ValidationError, match="k"):
        RecallRetriever(store=filled, namespace="alice", k=0)
    with pytest.raises(ValidationError, match="mmr_lambada"):
        RecallRetriever(store=filled, namespace="alice", recall_config={"mmr_lambada": 1})
    with pytest.raises(ValidationError, match="store"):
        RecallRetriever(store="./memories", namespace="alice")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="llm"):
        RecallRetriever(store=filled, namespace="alice", llm=42)


async def test_ainvoke_matches_invoke_and_never_uses_the_default_executor(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", recall_config=QUIET)
    assert type(retriever)._aget_relevant_documents is not BaseRetriever._aget_relevant_documents

    class NoThreads(concurrent.futures.ThreadPoolExecutor):
        def submit(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("ainvoke hopped to a thread: the default async path is blocking code")

    asyncio.get_running_loop().set_default_executor(NoThreads())
    docs = await retriever.ainvoke("Did Alice move to Berlin?")
    assert docs[0].page_content == "Alice moved to Berlin in March"


def test_async_and_sync_agree(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", recall_config=QUIET)
    sync = retriever.invoke("Where does Alice live?")  # ties everywhere: only "Alice" matches
    async_ = asyncio.run(retriever.ainvoke("Where does Alice live?"))
    assert [d.id for d in sync] == [d.id for d in async_]
    assert [d.metadata["score"] for d in sync] == pytest.approx([d.metadata["score"] for d in async_])


def test_ls_params_name_the_store_and_model(filled: MemoryStore) -> None:
    params = RecallRetriever(store=filled, namespace="alice")._get_ls_params()
    assert params["ls_retriever_name"] == "recall"
    assert params["ls_vector_store_provider"] == "lancedb"
    assert params["ls_embedding_model"] == filled.embedder.name


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.retriever_runs: list[UUID] = []
        self.model_parents: list[UUID | None] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.retriever_runs.append(run_id)

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.model_parents.append(kwargs.get("parent_run_id"))


class StageFakeChatModel(FakeListChatModel):
    """``FakeListChatModel`` whose answer depends on the prompt, not on call order.

    Expansion and HyDE call the model concurrently (each in an executor thread for a
    ``SimpleChatModel``), so cycling through a list would hand the answers out in a racy order.
    """

    hyde_for: str
    hyde_answer: str

    def _call(self, messages: list[Any], *args: Any, **kwargs: Any) -> str:
        if messages[-1].content == hyde_prompt(self.hyde_for):
            return self.hyde_answer
        return super()._call(messages, *args, **kwargs)


@pytest.mark.parametrize("use_async", [False, True])
def test_fake_chat_model_drives_expansion_and_hyde_nested_in_the_run(filled: MemoryStore, use_async: bool) -> None:
    query = "Which city does Alice live in now?"
    model = StageFakeChatModel(
        responses=["1. city Alice moved to\n2. Alice moved in March\n3. Alice relocation"],
        hyde_for=query,
        hyde_answer="I moved to Berlin in March.",
    )
    retriever = RecallRetriever(store=filled, namespace="alice", llm=model, recall_config=QUIET)
    recorder = Recorder()
    without_llm = RecallRetriever(store=filled, namespace="alice", recall_config=QUIET).invoke(query)
    assert without_llm[0].page_content != "Alice moved to Berlin in March"  # so the model's rewrites matter
    config = {"callbacks": [recorder]}
    docs = asyncio.run(retriever.ainvoke(query, config)) if use_async else retriever.invoke(query, config)
    assert docs[0].page_content == "Alice moved to Berlin in March"
    labels = {c["label"] for d in docs for c in d.metadata["explanation"]["channels"]}
    assert any(label.endswith("rewrite 1") for label in labels)
    assert "hyde" in labels
    # two model calls (rewrites, HyDE), both children of the retriever run
    assert recorder.model_parents == [recorder.retriever_runs[0]] * 2


def test_langchain_llm_bridge_contract() -> None:
    llm = LangChainLLM(FakeListChatModel(responses=["a", "b"]))
    assert llm.complete("hi") == "a"
    assert asyncio.run(llm.acomplete("hi")) == "b"
    with pytest.raises(ConfigError, match="Runnable"):
        LangChainLLM(lambda p: p)  # type: ignore[arg-type]


def test_exclude_ids_per_call(filled: MemoryStore) -> None:
    retriever = RecallRetriever(store=filled, namespace="alice", k=2, recall_config=QUIET)
    query = "What is the name of Alice's dog?"
    top, second = retriever.invoke(query)
    docs = retriever.invoke(query, exclude_ids=[top.id])
    assert [d.id for d in docs] == [second.id, docs[1].id] and top.id not in {d.id for d in docs}


def test_a_misspelled_channel_weight_is_refused_when_the_retriever_is_built(store: MemoryStore) -> None:
    # At c4d7fc4, RecallRetriever(recall_config={"weights": {"vectr": 2}}) raised at construction
    # (ChannelWeights refused unknown names). Now ChannelWeights takes any name (plug-in weights)
    # and the AdapterModel builds its RecallBinding lazily, so the typo passes construction and the
    # first invoke in production raises instead.
    with pytest.raises((ConfigError, ValueError), match="vectr"):
        RecallRetriever(store=store, namespace="alice", recall_config={"weights": {"vectr": 2.0}})
