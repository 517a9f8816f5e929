"""The adapter objects as values: copies keep no stale tenant, typos fail, objects serialise or refuse.

First written as regressions found by the trust review.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.load import dumps, loads
from langchain_core.messages import HumanMessage
from pydantic import ValidationError

from langchain_memory_retrievers import LangChainEmbedder, MemoryChatMessageHistory, RecallRetriever
from memory_retrievers import ConfigError, InvalidInputError, MemoryStore

QUIET = {"record_access": False}


@pytest.fixture
def two_tenants(store: MemoryStore) -> MemoryStore:
    store.add("alice's secret: the vault code is 1234", namespace="alice")
    store.add("bob's secret: the vault code is 9876", namespace="bob")
    return store


def texts(retriever: RecallRetriever) -> list[str]:
    return [d.page_content for d in retriever.invoke("vault code secret")]


def _model_copy(r: RecallRetriever) -> RecallRetriever:
    return r.model_copy(update={"namespace": "bob"})


def _assign(r: RecallRetriever) -> RecallRetriever:
    r.namespace = "bob"
    return r


def _copy_then_assign(r: RecallRetriever) -> RecallRetriever:
    c = copy.copy(r)
    c.namespace = "bob"
    return c


def _deepcopy_then_assign(r: RecallRetriever) -> RecallRetriever:
    c = copy.deepcopy(r)
    c.namespace = "bob"
    return c


@pytest.mark.parametrize("switch", [_model_copy, _assign, _copy_then_assign, _deepcopy_then_assign])
def test_a_copied_retriever_keeps_the_old_tenant(two_tenants: MemoryStore, switch: Callable[..., Any]) -> None:
    alice = RecallRetriever(store=two_tenants, namespace="alice", recall_config=QUIET)
    assert texts(alice) == ["alice's secret: the vault code is 1234"]  # the core retriever is built now
    bob = switch(alice)
    assert texts(bob) == ["bob's secret: the vault code is 9876"]
    assert bob.memory_retriever.namespace == "bob"


def test_copies_leave_the_original_tenant_alone_and_share_the_store(two_tenants: MemoryStore) -> None:
    alice = RecallRetriever(store=two_tenants, namespace="alice", recall_config=QUIET)
    texts(alice)
    bob = _deepcopy_then_assign(alice)
    assert bob.store is two_tenants  # a handle on the table, not copied
    assert texts(alice) == ["alice's secret: the vault code is 1234"]


def test_changing_the_recall_config_or_filters_rebuilds_too(two_tenants: MemoryStore) -> None:
    two_tenants.add("alice likes vault music", namespace="alice", kind="preference")
    retriever = RecallRetriever(store=two_tenants, namespace="alice", recall_config=QUIET)
    assert len(texts(retriever)) == 2
    retriever.recall_config = {"k": 1, "record_access": False}
    assert len(texts(retriever)) == 1
    retriever.filters = {"kinds": ["preference"]}
    assert texts(retriever) == ["alice likes vault music"]


def test_a_rejected_assignment_leaves_the_retriever_as_it_was(two_tenants: MemoryStore) -> None:
    retriever = RecallRetriever(store=two_tenants, namespace="alice", recall_config=QUIET)
    with pytest.raises(ValidationError, match="namespace"):
        retriever.namespace = ""
    with pytest.raises(ValidationError, match="k"):
        retriever.k = True  # type: ignore[assignment]
    assert retriever.namespace == "alice" and retriever.k is None
    assert texts(retriever) == ["alice's secret: the vault code is 1234"]


def test_reassigning_the_history_session_and_namespace_reads_and_writes_the_new_ones(store: MemoryStore) -> None:
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    history.add_messages([HumanMessage("in s1")])
    history.session_id = "s2"
    assert history.messages == []
    history.add_messages([HumanMessage("in s2")])
    assert [m.content for m in history.messages] == ["in s2"]
    history.namespace = "bob"
    assert history.messages == []
    assert [m.content for m in MemoryChatMessageHistory(store, namespace="alice", session_id="s1").messages] == [
        "in s1"
    ]
    with pytest.raises(InvalidInputError, match="session_id"):
        history.session_id = ""
    assert history.session_id == "s2"
    with pytest.raises(AttributeError):
        history.store = store  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kk": 3}, r"'kk' \(did you mean 'k'\?\).*valid arguments are: channels, filters, k, llm"),
        ({"namespaces": "bob"}, r"did you mean 'namespace'"),
    ],
)
def test_misspelt_retriever_arguments_raise_a_typed_error(
    store: MemoryStore, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        RecallRetriever(store=store, namespace="alice", **kwargs)


def test_true_is_not_an_int(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match="k"):
        RecallRetriever(store=store, namespace="alice", k=True)
    with pytest.raises(ValidationError, match="token_budget"):
        RecallRetriever(store=store, namespace="alice", token_budget=True)


def test_an_over_long_session_key_names_max_key_chars(store: MemoryStore) -> None:
    long_key = "s" * (store.config.max_key_chars + 1)
    with pytest.raises(InvalidInputError, match="max_key_chars") as raised:
        MemoryChatMessageHistory(store, namespace="alice", session_id=long_key)
    assert "max_text_chars" not in str(raised.value)
    with pytest.raises(ValidationError, match="max_key_chars"):
        RecallRetriever(store=store, namespace=long_key)


def test_the_retriever_round_trips_through_pickle_and_langchain_dumps(two_tenants: MemoryStore) -> None:
    retriever = RecallRetriever(
        store=two_tenants, namespace="alice", k=3, recall_config=QUIET, filters={"kinds": ["fact"]}
    )
    unpickled = pickle.loads(pickle.dumps(retriever))
    assert unpickled.store is two_tenants  # the live store of this process is reused
    assert (unpickled.k, unpickled.filters, unpickled.recall_config) == (3, retriever.filters, retriever.recall_config)
    assert texts(unpickled) == texts(retriever)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LangChain marks loads() as beta
        loaded = loads(
            dumps(retriever), valid_namespaces=["langchain_memory_retrievers"], allowed_objects=[RecallRetriever]
        )
    assert isinstance(loaded, RecallRetriever) and loaded.store is two_tenants
    assert texts(loaded) == texts(retriever)


def test_a_closed_store_is_reopened_from_its_spec(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    store.add("alice's secret: the vault code is 1234", namespace="alice")
    data = pickle.dumps(RecallRetriever(store=store, namespace="alice", recall_config=QUIET))
    store.close()
    reopened = pickle.loads(data)
    assert reopened.store is not store
    try:
        assert texts(reopened) == ["alice's secret: the vault code is 1234"]
    finally:
        reopened.store.close()


class _TinyEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 1.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]


def test_serialisation_refuses_what_cannot_be_rebuilt(tmp_path: Any, store: MemoryStore) -> None:
    with MemoryStore(tmp_path / "wrapped", embedder=LangChainEmbedder(_TinyEmbeddings(), dimension=2)) as wrapped:
        retriever = RecallRetriever(store=wrapped, namespace="alice")
        with pytest.raises(ConfigError, match=r"embedder .* cannot be rebuilt"):
            pickle.dumps(retriever)
        with pytest.raises(ConfigError, match="cannot be rebuilt"):
            dumps(retriever)

    class Rerank:
        def rerank(self, query: str, texts: list[str]) -> list[float]:
            return [0.0] * len(texts)

        async def arerank(self, query: str, texts: list[str]) -> list[float]:
            return [0.0] * len(texts)

    with pytest.raises(ConfigError, match="reranker"):
        pickle.dumps(RecallRetriever(store=store, namespace="alice", reranker=Rerank()))
