"""MemoryStoreLangGraph's search and listing: prefixes, filters, paging, scores, index fields, concurrency.

First written as regressions found by the trust and first-hour reviews (issues 13 and 15).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from langchain_memory_retrievers import MemoryStoreLangGraph
from memory_retrievers import MemoryStore, StorageError
from memory_retrievers.store import paging
from memory_retrievers.testing import ManualClock


@pytest.fixture
def lg(store: MemoryStore) -> MemoryStoreLangGraph:
    return MemoryStoreLangGraph(store)


def cosine(store: MemoryStore, query: str, text: str) -> float:
    q = store.embedder.embed_query(query)
    (d,) = store.embedder.embed_documents([text])
    return float(np.dot(q, d))


# ---------------------------------------------------------------- (a) namespaces
def test_core_namespaces_with_dots_never_surface_under_an_unrelated_prefix(
    lg: MemoryStoreLangGraph, store: MemoryStore
) -> None:
    store.add("Alice Smith's private note about the launch", namespace="alice.smith")
    lg.put(("alice", "work"), "k", {"text": "a note about the launch"})
    assert [(h.namespace, h.key) for h in lg.search(("alice",))] == [(("alice", "work"), "k")]
    assert [(h.namespace, h.key) for h in lg.search(("alice",), query="private note launch")] == [
        (("alice", "work"), "k")
    ]
    assert lg.list_namespaces() == [("alice", "work")]
    assert lg.get(("alice", "smith"), store.list("alice.smith")[0].id) is None


def test_the_core_namespace_of_a_langgraph_namespace_is_public_and_reversible(lg: MemoryStoreLangGraph) -> None:
    assert MemoryStoreLangGraph.core_namespace(("memories", "alice")) == "langgraph:memories.alice"
    assert MemoryStoreLangGraph.langgraph_namespace("langgraph:memories.alice") == ("memories", "alice")
    assert MemoryStoreLangGraph.langgraph_namespace("alice.smith") is None
    lg.put(("memories", "alice"), "k", {"text": "v"})
    assert lg.store.get("k", namespace=lg.core_namespace(("memories", "alice"))).metadata["langgraph_value"] == {
        "text": "v"
    }
    with pytest.raises(InvalidNamespaceError):
        MemoryStoreLangGraph.core_namespace(("a.b",))


# ---------------------------------------------------------------- (b) a list prefix
def test_a_list_prefix_searches_like_a_tuple(lg: MemoryStoreLangGraph) -> None:
    lg.put(("test", "docs"), "d", {"text": "hello"})
    lg.put(("test",), "t", {"text": "hello there"})
    by_tuple = {h.key for h in lg.search(("test",))}
    assert by_tuple == {"d", "t"}
    assert {h.key for h in lg.search(["test"])} == by_tuple  # type: ignore[arg-type]
    assert {h.key for h in lg.search(["test"], query="hello")} == by_tuple  # type: ignore[arg-type]
    assert lg.list_namespaces(prefix=["test"]) == [("test",), ("test", "docs")]  # type: ignore[arg-type]


# ---------------------------------------------------------------- (c) filter before ranking
def test_a_filter_with_a_query_filters_before_ranking(lg: MemoryStoreLangGraph) -> None:
    ns = ("recipes",)
    lg.batch([PutOp(ns, f"apple-{i}", {"text": f"apple pie recipe number {i}", "tag": "x"}) for i in range(200)])
    lg.put(ns, "the-one", {"text": "a pear tart", "tag": "y"})
    hits = lg.search(ns, query="apple pie recipe", filter={"tag": "y"})
    assert [h.key for h in hits] == ["the-one"]
    # By default every string of the value is indexed, as one text.
    assert hits[0].score == pytest.approx(cosine(lg.store, "apple pie recipe", "a pear tart\ny"), abs=1e-5)


# ---------------------------------------------------------------- (d) paging past recall's depth
@pytest.mark.parametrize("ranking", ["recall", "vector"])
def test_limit_and_offset_are_not_capped_by_recall_depth(store: MemoryStore, ranking: str) -> None:
    lg = MemoryStoreLangGraph(store, ranking=ranking)  # type: ignore[arg-type]
    ns = ("notes",)
    lg.batch([PutOp(ns, f"n{i:03d}", {"text": f"note {i} about the garden"}) for i in range(201)])
    for query in (None, "garden note"):
        first = lg.search(ns, query=query, limit=100)
        rest = lg.search(ns, query=query, limit=100, offset=150)
        assert len(first) == 100 and len(rest) == 51
        everything = lg.search(ns, query=query, limit=1000)
        assert len({h.key for h in everything}) == 201
        assert [h.key for h in everything[150:]] == [h.key for h in rest]


# ---------------------------------------------------------------- (e) the "langgraph" root
def test_reads_accept_the_langgraph_root_that_only_put_refuses(lg: MemoryStoreLangGraph) -> None:
    assert lg.get(("langgraph", "x"), "k") is None
    assert lg.search(("langgraph",)) == []
    assert lg.search(("langgraph",), query="anything") == []
    assert lg.batch([GetOp(("langgraph",), "k"), SearchOp(("langgraph", "x"), None, 10, 0)]) == [None, []]
    assert lg.list_namespaces(prefix=("langgraph",)) == []
    with pytest.raises(InvalidNamespaceError, match="langgraph"):
        lg.put(("langgraph", "x"), "k", {"text": "v"})
    # A PutOp sent through batch may write there, as in LangGraph's own stores (issue 27 case a:
    # test_lc_stores_basestore_cases.py::test_basestore_case_a_a_put_op_under_the_reserved_root_goes_through_batch).


# ---------------------------------------------------------------- (f) many concurrent writers
async def test_a_thousand_concurrent_aputs_all_succeed(lg: MemoryStoreLangGraph) -> None:
    await asyncio.gather(*(lg.aput(("load", f"u{i % 10}"), f"k{i}", {"text": f"fact number {i}"}) for i in range(1000)))
    found = await lg.asearch(("load",), limit=2000)
    assert len(found) == 1000
    assert {h.key for h in found} == {f"k{i}" for i in range(1000)}


# ---------------------------------------------------------------- item 6: index, score, fields, closed
def test_an_unindexed_item_is_never_ranked_by_semantic_search(lg: MemoryStoreLangGraph) -> None:
    # Issue 27 (LangGraph case b): like LangGraph's own stores, a query search returns unindexed
    # items after every indexed one, unscored; they never outrank an indexed item.
    ns = ("m",)
    lg.put(ns, "indexed", {"text": "new text about dogs"})
    lg.put(ns, "hidden", {"text": "new text about dogs", "tag": "h"}, index=False)
    hits = lg.search(ns, query="new text about dogs", limit=10)
    assert [(h.key, h.score is None) for h in hits] == [("indexed", False), ("hidden", True)]
    assert [h.key for h in lg.search(ns, query="new text about dogs", limit=1)] == ["indexed"]
    assert [(h.key, h.score) for h in lg.search(ns, query="dogs", filter={"tag": "h"})] == [("hidden", None)]
    assert lg.get(ns, "hidden") is not None
    assert {h.key for h in lg.search(ns)} == {"indexed", "hidden"}
    assert [h.key for h in lg.search(ns, filter={"tag": "h"})] == ["hidden"]


@pytest.mark.parametrize("ranking", ["recall", "vector"])
def test_search_score_is_the_cosine_similarity(store: MemoryStore, ranking: str) -> None:
    lg = MemoryStoreLangGraph(store, ranking=ranking)  # type: ignore[arg-type]
    texts = {"a": "red apple pie", "b": "green apple", "c": "blue car"}
    for key, text in texts.items():
        lg.put(("s",), key, {"text": text})
    hits = lg.search(("s",), query="apple pie", limit=10)
    assert {h.key for h in hits} == set(texts)
    for hit in hits:
        assert hit.score == pytest.approx(cosine(store, "apple pie", texts[hit.key]), abs=1e-5)
    if ranking == "vector":
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[type-var]


def test_index_fields_are_embedded_one_by_one_and_scored_by_the_best_field(store: MemoryStore) -> None:
    lg = MemoryStoreLangGraph(store, index_fields=["title", "tags[*]"])
    lg.put(("d",), "doc", {"title": "quarterly revenue", "tags": ["zebra stripes", "finance"], "body": "ignored"})
    memory = store.get("doc", namespace="langgraph:d")
    assert memory.text == "quarterly revenue\nzebra stripes\nfinance"
    assert len(memory.metadata["langgraph_vectors"]) == 3  # one vector per text
    (hit,) = lg.search(("d",), query="zebra stripes")
    assert hit.score == pytest.approx(1.0, abs=1e-5)  # the best field matches exactly
    (hit,) = lg.search(("d",), query="quarterly revenue")
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    (hit,) = lg.search(("d",), query="ignored")
    assert hit.score == pytest.approx(
        max(cosine(store, "ignored", t) for t in ("quarterly revenue", "zebra stripes", "finance")), abs=1e-5
    )
    # A put's own index wins over the store's fields; a single text is the memory's own vector.
    lg.put(("d",), "one", {"title": "zebra", "body": "lions"}, index=["body"])
    one = store.get("one", namespace="langgraph:d")
    assert one.text == "lions" and "langgraph_vectors" not in one.metadata


def test_a_closed_store_does_not_answer(lg: MemoryStoreLangGraph, store: MemoryStore) -> None:
    lg.put(("m",), "k", {"text": "v"})
    store.close()
    for call in (
        lambda: lg.get(("m",), "k"),
        lambda: lg.search(("m",)),
        lambda: lg.search(("m",), query="v"),
        lambda: lg.list_namespaces(),
        lambda: lg.put(("m",), "k2", {"text": "w"}),
        lambda: lg.delete(("m",), "k"),
    ):
        with pytest.raises(StorageError, match="closed"):
            call()


def test_a_search_without_a_query_lists_the_last_updated_first_beyond_a_page(
    lg: MemoryStoreLangGraph, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An old item put again last comes first, however many newer items the namespace holds.

    The listing once paged through the items by creation, a page (1,000) at a time, and stopped at
    the first page: an item created before that page and updated since was never listed. The
    page is made 5 items here so that 12 items are "more than a page".
    """
    monkeypatch.setattr(paging, "PAGE_SIZE", 5)
    for i in range(12):
        clock.advance(seconds=60)
        lg.put(("notes",), f"k{i}", {"text": f"note {i}", "tag": "note"})
    clock.advance(seconds=60)
    lg.put(("notes",), "k0", {"text": "note 0, edited last", "tag": "note"})
    assert [h.key for h in lg.search(("notes",), limit=3)] == ["k0", "k11", "k10"]
    assert [h.key for h in lg.search(("notes",), limit=3, filter={"tag": "note"})] == ["k0", "k11", "k10"]
    assert [h.key for h in lg.search(("notes",), limit=2, offset=1)] == ["k11", "k10"]
    clock.advance(seconds=60)
    lg.put(("notes",), "k5", {"text": "note 5, edited after"})
    assert [h.key for h in lg.search(("notes",), limit=2)] == ["k5", "k0"]
