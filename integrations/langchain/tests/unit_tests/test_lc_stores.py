"""MemoryStoreLangGraph against LangGraph's BaseStore contract."""

from __future__ import annotations

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langchain_memory_retrievers import MemoryStoreLangGraph, RecallRetriever
from memory_retrievers import FilterError, InvalidInputError, MemoryStore
from memory_retrievers.testing import ManualClock


@pytest.fixture
def lg(store: MemoryStore) -> MemoryStoreLangGraph:
    return MemoryStoreLangGraph(store)


def test_put_get_update_delete(lg: MemoryStoreLangGraph, clock: ManualClock) -> None:
    ns = ("memories", "alice")
    assert lg.get(ns, "theme") is None
    lg.put(ns, "theme", {"text": "Alice prefers the dark theme", "confidence": 0.9})
    item = lg.get(ns, "theme")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ns,
        "theme",
        {"text": "Alice prefers the dark theme", "confidence": 0.9},
    )
    created = item.created_at
    clock.advance(hours=1)
    lg.put(ns, "theme", {"text": "Alice now prefers the light theme"})
    updated = lg.get(ns, "theme")
    assert updated is not None and updated.value == {"text": "Alice now prefers the light theme"}
    assert updated.created_at == created and updated.updated_at > created
    lg.delete(ns, "theme")
    assert lg.get(ns, "theme") is None
    lg.delete(ns, "theme")  # deleting a missing key is not an error in LangGraph


def test_near_duplicate_values_under_different_keys_are_both_kept(lg: MemoryStoreLangGraph) -> None:
    lg.put(("m", "alice"), "a", {"text": "Alice likes tea"})
    lg.put(("m", "alice"), "b", {"text": "Alice likes tea"})
    assert {i.key for i in lg.search(("m", "alice"))} == {"a", "b"}


def test_search_by_query_filter_prefix_and_paging(lg: MemoryStoreLangGraph, clock: ManualClock) -> None:
    facts = {
        "dog": ({"text": "Alice's dog is called Rex", "topic": "pets", "year": 2019}),
        "cat": ({"text": "Alice had a cat named Miso", "topic": "pets", "year": 2012}),
        "city": ({"text": "Alice moved to Berlin", "topic": "home", "year": 2023}),
    }
    for key, value in facts.items():
        lg.put(("memories", "alice"), key, value)
        clock.advance(minutes=1)
    lg.put(("memories", "bob"), "dog", {"text": "Bob's dog is called Max", "topic": "pets"})

    hits = lg.search(("memories", "alice"), query="what is the dog called?", limit=2)
    assert hits[0].key == "dog" and len(hits) == 2
    assert all(h.namespace == ("memories", "alice") for h in hits)
    assert hits[0].score is not None and hits[0].score >= hits[1].score  # type: ignore[operator]

    pets = lg.search(("memories", "alice"), query="dog", filter={"topic": "pets"}, limit=10)
    assert {h.key for h in pets} == {"dog", "cat"}
    recent = lg.search(("memories", "alice"), filter={"year": {"$gte": 2019}, "topic": {"$ne": "home"}})
    assert [h.key for h in recent] == ["dog"]

    everyone = lg.search(("memories",), query="dog called", limit=10)
    assert {(h.namespace[1], h.key) for h in everyone if "dog" in h.value["text"]} == {("alice", "dog"), ("bob", "dog")}

    listed = lg.search(("memories", "alice"), limit=2)
    assert [h.key for h in listed] == ["city", "cat"] and all(h.score is None for h in listed)  # newest first
    assert [h.key for h in lg.search(("memories", "alice"), limit=2, offset=2)] == ["dog"]


def test_search_never_crosses_into_a_sibling_namespace(lg: MemoryStoreLangGraph) -> None:
    lg.put(("memories", "alice"), "k", {"text": "secret of alice"})
    lg.put(("memories", "alicex"), "k", {"text": "secret of alicex"})
    assert [h.value["text"] for h in lg.search(("memories", "alice"), query="secret")] == ["secret of alice"]


def test_index_fields_choose_the_searchable_text(store: MemoryStore) -> None:
    lg = MemoryStoreLangGraph(store, index_fields=["summary"])
    lg.put(("docs",), "d1", {"summary": "quarterly revenue report", "body": "zebra giraffe"})
    lg.put(("docs",), "d2", {"summary": "zebra migration notes", "body": "revenue"}, index=["body"])
    memory_d1 = store.get("d1", namespace="langgraph:docs")
    assert memory_d1.text == "quarterly revenue report"
    assert store.get("d2", namespace="langgraph:docs").text == "revenue"


def test_list_namespaces(lg: MemoryStoreLangGraph) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",)]:
        lg.put(ns, "k", {"text": "v"})
    assert lg.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",)]
    assert lg.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert lg.list_namespaces(suffix=("d",)) == [("a", "b", "d")]
    assert lg.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
    assert lg.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z",)]
    assert lg.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_batch_runs_ops_in_order_and_matches_abatch(lg: MemoryStoreLangGraph) -> None:
    ns = ("m", "u")
    ops = [
        PutOp(ns, "k1", {"text": "first"}),
        PutOp(ns, "k2", {"text": "second"}),
        PutOp(ns, "k1", {"text": "first, revised"}),  # last write to a key wins
        GetOp(ns, "k1"),
        SearchOp(ns, None, 10, 0, "revised"),
        ListNamespacesOp((MatchCondition("prefix", ("m",)),), None, 10, 0),
        PutOp(ns, "k2", None),
        GetOp(ns, "k2"),
    ]
    results = lg.batch(ops)
    assert results[0] is None and results[1] is None and results[2] is None
    assert results[3].value == {"text": "first, revised"}  # type: ignore[union-attr]
    assert results[4][0].key == "k1"  # type: ignore[index]
    assert results[5] == [("m", "u")]
    assert results[7] is None


async def test_async_api(lg: MemoryStoreLangGraph) -> None:
    await lg.aput(("m", "u"), "k", {"text": "async value"})
    item = await lg.aget(("m", "u"), "k")
    assert item is not None and item.value == {"text": "async value"}
    assert [h.key for h in await lg.asearch(("m",), query="async")] == ["k"]
    assert await lg.alist_namespaces() == [("m", "u")]
    await lg.adelete(("m", "u"), "k")
    assert await lg.aget(("m", "u"), "k") is None


def test_items_are_memories_the_retriever_recalls(store: MemoryStore) -> None:
    lg = MemoryStoreLangGraph(store)
    lg.put(("memories", "alice"), "pet", {"text": "Alice's dog is called Rex"})
    namespace = MemoryStoreLangGraph.core_namespace(("memories", "alice"))
    assert namespace == "langgraph:memories.alice"
    docs = RecallRetriever(store=store, namespace=namespace).invoke("dog name")
    assert docs[0].id == "pet"
    store.add("Alice likes green tea", namespace=namespace, id="tea")
    assert lg.get(("memories", "alice"), "tea").value == {"text": "Alice likes green tea", "kind": "fact"}  # type: ignore[union-attr]


def test_invalid_input(lg: MemoryStoreLangGraph, store: MemoryStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg.put(("bad.label",), "k", {"text": "v"})
    with pytest.raises(InvalidNamespaceError):
        lg.put((), "k", {"text": "v"})
    with pytest.raises(InvalidInputError, match="dict"):
        lg.batch([PutOp(("m",), "k", "not a dict")])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="id"):
        lg.put(("m",), "", {"text": "v"})
    with pytest.raises(FilterError, match=r"\$regex"):
        lg.put(("m",), "k", {"text": "v"}) or lg.search(("m",), filter={"text": {"$regex": ".*"}})
    with pytest.raises(InvalidInputError, match="ttl"):
        lg.put(("m",), "k", {"text": "v"}, ttl=0)
    with pytest.raises(InvalidInputError, match="index_fields"):
        MemoryStoreLangGraph(store, index_fields="summary")  # type: ignore[arg-type]
    assert [i.key for i in lg.search(("m",))] == ["k"]  # the failed writes left only the good one


def test_langgraph_store_still_refuses_a_non_store_with_invalid_input_error() -> None:
    from langchain_memory_retrievers import MemoryStoreLangGraph
    from memory_retrievers import InvalidInputError

    with pytest.raises(InvalidInputError, match="MemoryStore"):
        MemoryStoreLangGraph("./not-a-store")  # type: ignore[arg-type]
