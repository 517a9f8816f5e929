"""RecallRetriever against the real LlamaIndex base classes, query engine and fusion retriever."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, ClassVar

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core.llms.mock import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index.memory_retrievers import LlamaIndexEmbedder, LlamaIndexLLM, RecallRetriever
from memory_retrievers import ConfigError, DimensionMismatchError, InvalidInputError, MemoryStore

QUIET = {"record_access": False}


def test_nodes_carry_memory_id_metadata_and_score(filled: MemoryStore) -> None:
    nodes = RecallRetriever(filled, namespace="alice", recall_config=QUIET).retrieve("What is the dog called?")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    top = nodes[0]
    assert top.node.get_content() == "Alice's dog is called Rex"
    assert filled.get(top.node.id_, namespace="alice").text == "Alice's dog is called Rex"
    assert top.node.metadata["kind"] == "fact" and top.node.metadata["namespace"] == "alice"
    # The calibrated score: in [0, 1], what the explanation says, and the nodes come in its order.
    assert top.score is not None and 0 <= top.score <= 1
    assert top.node.metadata["explanation"]["calibrated_by"]
    # ids, hashes and the explanation never reach the LLM prompt
    llm_view = top.node.get_content(metadata_mode="llm")
    assert "explanation" not in llm_view and "content_hash" not in llm_view and "kind: fact" in llm_view
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


class PromptSpy(MockLLM):
    """A MockLLM that keeps every prompt it completes (the text the LLM would read)."""

    prompts: ClassVar[list[str]] = []

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        type(self).prompts.append(prompt)
        return super().complete(prompt, formatted=formatted, **kwargs)


def test_the_query_engine_shows_the_llm_no_empty_or_internal_metadata(store: MemoryStore) -> None:
    """Issue 40 item 10: every memory reached the LLM under "session_id: None / tags: [] / entities: []"."""
    store.add("Alice prefers the dark theme", namespace="alice", kind="preference", session_id="chat-7")
    store.add("Alice uses Neovim at work", namespace="alice", kind="fact", project="work", tags=["editor"])
    engine = RetrieverQueryEngine.from_args(RecallRetriever(store, namespace="alice"), llm=PromptSpy())
    PromptSpy.prompts.clear()
    engine.query("Which theme and editor do I like?")
    (prompt,) = PromptSpy.prompts
    context = prompt.split("---------------------")[1]
    assert "Alice prefers the dark theme" in context and "Alice uses Neovim at work" in context
    for noise in ("None", "[]", "{}", "session_id", "chat-7", "created_at", "namespace", "id:", "hash", "explanation"):
        assert noise not in context, noise
    assert "kind: preference" in context and "project: work" in context and "tags: ['editor']" in context
    assert context.count("date: ") == 2  # the day each was written, as the block's lines date them


def test_top_k_filters_overrides_and_empty(filled: MemoryStore) -> None:
    retriever = RecallRetriever(filled, namespace="alice", similarity_top_k=2)
    assert len(retriever.retrieve("Alice")) == 2
    assert len(retriever.retrieve_with("Alice", similarity_top_k=4)) == 4
    assert {n.node.metadata["kind"] for n in retriever.retrieve_with("Alice", kinds=["event"])} == {"event"}
    assert RecallRetriever(filled, namespace="nobody").retrieve("anything") == []
    assert [n.node.get_content() for n in RecallRetriever(filled, namespace="bob").retrieve("Alice theme")] == [
        "Bob prefers the light theme"
    ]


def test_query_bundle_embedding_is_used_for_the_vector_channel(filled: MemoryStore) -> None:
    retriever = RecallRetriever(
        filled, namespace="alice", recall_config={**QUIET, "mode": "vector"}, similarity_top_k=1
    )
    vector = filled.embedder.embed_query("jazz piano").tolist()
    nodes = retriever.retrieve(QueryBundle(query_str="zzz", embedding=vector))
    assert nodes[0].node.get_content() == "Alice is learning to play jazz piano"
    with pytest.raises(DimensionMismatchError):
        retriever.retrieve(QueryBundle(query_str="zzz", embedding=[0.1, 0.2]))


def test_llamaindex_hyde_transform_works_through_custom_embedding_strs(filled: MemoryStore) -> None:
    retriever = RecallRetriever(
        filled, namespace="alice", recall_config={**QUIET, "mode": "vector"}, similarity_top_k=1
    )
    query = "zzz qqq"
    hyde = HyDEQueryTransform(llm=MockLLM(), include_original=True)
    bundle = hyde.run(query)
    assert bundle.custom_embedding_strs and len(bundle.custom_embedding_strs) == 2
    # MockLLM echoes its prompt, so the hypothetical text is known; replace it with a useful one.
    bundle.custom_embedding_strs[0] = "green tea every morning"
    assert retriever.retrieve(bundle)[0].node.get_content() == "Alice drinks green tea every morning"
    assert retriever.retrieve(query)[0].node.get_content() != "Alice drinks green tea every morning"


def test_inside_a_retriever_query_engine(filled: MemoryStore) -> None:
    retriever = RecallRetriever(filled, namespace="alice", similarity_top_k=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    response = engine.query("Where did Alice move?")
    ids = {n.node.id_ for n in response.source_nodes}
    moved = filled.list("alice", filter={"kinds": ["event"]})[0]
    assert moved.id in ids and len(ids) == 2
    assert str(response)  # MockLLM answered


async def test_inside_a_query_fusion_retriever_async(filled: MemoryStore) -> None:
    ours = RecallRetriever(filled, namespace="alice", similarity_top_k=3)
    bob = RecallRetriever(filled, namespace="bob", similarity_top_k=3)
    fusion = QueryFusionRetriever(
        [ours, bob], llm=MockLLM(), num_queries=1, mode="reciprocal_rerank", similarity_top_k=4, use_async=True
    )
    nodes = await fusion.aretrieve("theme")
    texts = [n.node.get_content() for n in nodes]
    assert "Alice prefers the dark theme in every editor" in texts and "Bob prefers the light theme" in texts


async def test_aretrieve_is_native_and_matches_retrieve(filled: MemoryStore) -> None:
    retriever = RecallRetriever(filled, namespace="alice", recall_config=QUIET)
    assert type(retriever)._aretrieve is not BaseRetriever._aretrieve
    sync = await asyncio.to_thread(retriever.retrieve, "Did Alice move to Berlin?")

    class NoThreads(concurrent.futures.ThreadPoolExecutor):
        def submit(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("aretrieve hopped to a thread")

    asyncio.get_running_loop().set_default_executor(NoThreads())
    nodes = await retriever.aretrieve("Did Alice move to Berlin?")
    assert [n.node.id_ for n in nodes] == [n.node.id_ for n in sync]
    assert nodes[0].node.get_content() == "Alice moved to Berlin in March"


def test_mock_llm_drives_expansion(filled: MemoryStore) -> None:
    retriever = RecallRetriever(filled, namespace="alice", llm=MockLLM(max_tokens=8), recall_config=QUIET)
    result = retriever.recall("Which city does Alice live in?")
    assert result.plan["expansion"] == "llm" and result.plan["hyde"] == "llm"
    assert "context:rewrite 1" in result.plan["lists"]
    bridge = LlamaIndexLLM(MockLLM(max_tokens=3))
    assert bridge.complete("x") and asyncio.run(bridge.acomplete("x"))


def test_llamaindex_embedding_as_the_store_embedder(make_store: Any) -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    assert embedder.dimension == 8 and embedder.name.startswith("llama-index:MockEmbedding")
    store = make_store(embedder=embedder)
    store.add("a memory", namespace="u")
    assert [n.node.get_content() for n in RecallRetriever(store, namespace="u").retrieve("memory")] == ["a memory"]
    with pytest.raises(ConfigError, match="BaseEmbedding"):
        LlamaIndexEmbedder("text-embedding-3-small")  # type: ignore[arg-type]


def test_invalid_input(filled: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        RecallRetriever(filled, namespace="")
    with pytest.raises(ConfigError, match="similarity_top_k"):
        RecallRetriever(filled, namespace="a", similarity_top_k=0)
    with pytest.raises(ConfigError, match="mmr_lambada"):
        RecallRetriever(filled, namespace="a", recall_config={"mmr_lambada": 1})
    retriever = RecallRetriever(filled, namespace="alice")
    with pytest.raises(InvalidInputError, match="query"):
        retriever.retrieve("")
    with pytest.raises(InvalidInputError, match="unknown recall argument"):
        retriever.retrieve_with("Alice", kindz=["fact"])


# ---------------------------------------------------------------- scores a postprocessor can use (issue 26)
def test_node_scores_are_calibrated_and_in_order_by_default(filled: MemoryStore) -> None:
    nodes = RecallRetriever(filled, namespace="alice", recall_config=QUIET).retrieve("Alice dog theme tea")
    scores = [n.score for n in nodes]
    assert len(nodes) > 2 and all(s is not None and 0 <= s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_relevance_scores_come_sorted_by_relevance(filled: MemoryStore) -> None:
    nodes = RecallRetriever(filled, namespace="alice", score="relevance").retrieve("Alice dog theme tea")
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert all(n.score == n.node.metadata["relevance"] for n in nodes)


def test_the_old_final_score_is_refused_with_the_fix(filled: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="score='calibrated'"):
        RecallRetriever(filled, namespace="alice", score="final")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'calibrated' or 'relevance'"):
        RecallRetriever(filled, namespace="alice", score="cosine")  # type: ignore[arg-type]


def test_a_long_question_is_recalled_for_not_refused(filled: MemoryStore) -> None:
    question = "Here is a long paste. " + "lorem ipsum dolor " * 300 + "What is my dog called?"
    assert len(question) > 5_000
    nodes = RecallRetriever(filled, namespace="alice").retrieve(question)
    assert nodes[0].node.get_content() == "Alice's dog is called Rex"
