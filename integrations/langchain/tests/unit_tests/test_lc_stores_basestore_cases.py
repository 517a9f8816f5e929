"""MemoryStoreLangGraph on LangGraph's BaseStore cases (a-d), labels in two Unicode spellings, and typed errors.

First written as regressions of issue 27 (cases a-d; item 15, typed errors; item 16, NFC/NFD labels).

Cases a-d are the ones LangGraph's in-memory and Postgres stores pass in LangGraph's own tests
(``libs/checkpoint/tests/test_store.py``, ``libs/checkpoint-postgres/tests/test_store.py``).
"""

from __future__ import annotations

import asyncio
import math
import time
import unicodedata
from datetime import datetime, timezone
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp

import langchain_memory_retrievers.stores as stores_module
from langchain_memory_retrievers import MemoryStoreLangGraph
from memory_retrievers import ConfigError, InvalidInputError, MemoryStore
from memory_retrievers.testing import ManualClock

DOC = {"foo": "bar"}


@pytest.fixture
def lg(store: MemoryStore) -> MemoryStoreLangGraph:
    return MemoryStoreLangGraph(store)


# ---------------------------------------------------------------- (a) the reserved root label, past put
def test_basestore_case_a_a_put_op_under_the_reserved_root_goes_through_batch(lg: MemoryStoreLangGraph) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg.put(("langgraph", "foo"), "bar", DOC)  # the guard belongs to put
    lg.batch([PutOp(("langgraph", "foo"), "bar", DOC)])
    assert lg.get(("langgraph", "foo"), "bar").value == DOC  # type: ignore[union-attr]
    assert lg.search(("langgraph", "foo"))[0].value == DOC
    lg.delete(("langgraph", "foo"), "bar")
    assert lg.get(("langgraph", "foo"), "bar") is None


def test_basestore_case_a_async(lg: MemoryStoreLangGraph) -> None:
    async def run() -> None:
        with pytest.raises(InvalidNamespaceError):
            await lg.aput(("langgraph", "foo"), "bar", DOC)
        await lg.abatch([PutOp(("langgraph", "foo"), "bar", DOC)])
        assert (await lg.aget(("langgraph", "foo"), "bar")).value == DOC  # type: ignore[union-attr]
        assert (await lg.asearch(("langgraph", "foo")))[0].value == DOC
        await lg.adelete(("langgraph", "foo"), "bar")
        assert await lg.aget(("langgraph", "foo"), "bar") is None

    asyncio.run(run())


def test_basestore_case_a_an_empty_namespace_is_still_refused_in_batch(lg: MemoryStoreLangGraph) -> None:
    with pytest.raises(InvalidNamespaceError, match="empty"):
        lg.batch([PutOp((), "bar", DOC)])


# ---------------------------------------------------------------- (b) index=False in a query search
def test_basestore_case_b_unindexed_items_come_back_from_a_query_search_unscored(lg: MemoryStoreLangGraph) -> None:
    lg.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc"}, index=["key0", "key1"])
    lg.put(("test",), "doc4", {"key0": "ddd", "key1": "eee", "key3": "ggg"}, index=["key1", "key3"])
    lg.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    listed = lg.search(("test",))
    assert len(listed) == 3 and all(r.score is None for r in listed)
    found = lg.search(("test",), query="hhh")
    assert [r.key for r in found][-1] == "doc5" and len(found) == 3
    assert found[-1].score is None and all(r.score is not None for r in found[:-1])
    # Paging runs over the indexed items first, then the unindexed ones.
    assert [r.key for r in lg.search(("test",), query="hhh", limit=1, offset=2)] == ["doc5"]
    assert lg.search(("test",), query="hhh", limit=2)[-1].score is not None


def test_basestore_case_b_with_vector_ranking(store: MemoryStore) -> None:
    lg = MemoryStoreLangGraph(store, ranking="vector")
    lg.put(("t",), "on", {"text": "dogs bark"})
    lg.put(("t",), "off", {"text": "dogs bark"}, index=False)
    assert [(r.key, r.score is None) for r in lg.search(("t",), query="dogs")] == [("on", False), ("off", True)]


# ---------------------------------------------------------------- (c) a match condition's path as a str
def test_basestore_case_c_a_match_condition_path_may_be_a_plain_string(lg: MemoryStoreLangGraph) -> None:
    for namespace, key in [
        (("test", "documents", "public"), "doc1"),
        (("test", "documents", "private"), "doc2"),
        (("test", "images", "public"), "img1"),
        (("prod", "documents", "public"), "doc3"),
    ]:
        lg.put(namespace, key, {"content": key})
    suffix, prefix = lg.batch(
        [
            ListNamespacesOp(match_conditions=(MatchCondition("suffix", "public"),)),  # type: ignore[arg-type]
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", "prod"),)),  # type: ignore[arg-type]
        ]
    )
    assert suffix == [("prod", "documents", "public"), ("test", "documents", "public"), ("test", "images", "public")]
    assert prefix == [("prod", "documents", "public")]
    with pytest.raises(InvalidNamespaceError):  # one label: a dot is still refused
        lg.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", "a.b"),))])  # type: ignore[arg-type]


# ---------------------------------------------------------------- (d) the sweeper without an interval
def test_basestore_case_d_the_sweeper_starts_without_an_interval(
    store: MemoryStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    lg = MemoryStoreLangGraph(store)  # no ttl config at all
    lg.put(("t",), "x", {"text": "gone soon"}, ttl=1)
    clock.advance(minutes=2)
    monkeypatch.setattr(stores_module, "DEFAULT_SWEEP_INTERVAL_MINUTES", 0.001)  # the default, made short
    done = lg.start_ttl_sweeper()
    ns = lg.core_namespace(("t",))
    deadline = time.monotonic() + 20
    while store.count(ns, filter={"include_expired": True}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.count(ns, filter={"include_expired": True}) == 0
    assert lg.stop_ttl_sweeper(timeout=10) and done.result(timeout=10) is None


def test_basestore_case_d_the_default_interval_is_langgraphs(store: MemoryStore) -> None:
    assert stores_module.DEFAULT_SWEEP_INTERVAL_MINUTES == 5
    lg = MemoryStoreLangGraph(store, ttl={"default_ttl": 10})
    done = lg.start_ttl_sweeper()
    assert not done.done()
    assert lg.stop_ttl_sweeper(timeout=10) and done.result(timeout=10) is None


@pytest.mark.parametrize("interval", [0, -1, math.inf, math.nan, "5"])
def test_basestore_case_d_a_bad_interval_is_refused(store: MemoryStore, interval: Any) -> None:
    with pytest.raises(ConfigError, match="sweep_interval_minutes"):
        MemoryStoreLangGraph(store).start_ttl_sweeper(interval)


# ---------------------------------------------------------------- item 15: typed errors, nothing changed
def _deep(levels: int) -> dict[str, Any]:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("value", "ttl", "match"),
    [
        ({"when": datetime(2024, 5, 1, tzinfo=timezone.utc)}, None, r"value\['when'\] of key 'k' is a datetime.*iso"),
        ({"tags": {"a", "b"}}, None, r"value\['tags'\] of key 'k' is a set.*list"),
        ({"blob": b"\x00"}, None, r"value\['blob'\] of key 'k' is a bytes"),
        ({"x": [1, math.nan]}, None, r"value\['x'\]\[1\] of key 'k' is nan"),
        ({1: "one"}, None, r"int key 1; keys must be str"),
        (_deep(3000), None, r"key 'k' nests deeper than 200 levels"),
        ({"text": "x"}, math.inf, r"ttl must be a finite number of minutes, got inf"),
        ({"text": "x"}, 1e300, r"past year 9999.*ttl=None"),
    ],
    ids=["datetime", "set", "bytes", "nan", "int-key", "3000-deep", "ttl-inf", "ttl-huge"],
)
def test_item15_a_put_langgraph_cannot_store_faithfully_is_a_typed_error(
    lg: MemoryStoreLangGraph, store: MemoryStore, value: dict[str, Any], ttl: float | None, match: str
) -> None:
    lg.put(("t",), "before", {"text": "kept"})
    version = store.admin.stats().version
    with pytest.raises(InvalidInputError, match=match):
        lg.put(("t",), "k", value, ttl=ttl)
    with pytest.raises(InvalidInputError, match=match):  # a batch checks every put before running any op
        lg.batch([PutOp(("u",), "first", {"text": "never written"}), PutOp(("t",), "k", value, ttl=ttl)])
    assert lg.get(("t",), "k") is None and lg.get(("u",), "first") is None
    assert [i.key for i in lg.search(("t",))] == ["before"]
    assert store.admin.stats().version == version  # nothing was written


def test_item15_the_deepest_value_allowed_round_trips(lg: MemoryStoreLangGraph) -> None:
    value = _deep(stores_module.MAX_VALUE_DEPTH - 1)
    lg.put(("t",), "deep", value)
    assert lg.get(("t",), "deep").value == value  # type: ignore[union-attr]
    assert lg.search(("t",), query="x")[0].key == "deep"


# ---------------------------------------------------------------- labels the core's namespace rule refuses
@pytest.mark.parametrize("label", ["alice\n", "alice ", "al\u200bice", "a%ce", "tab\there"])
def test_item16_a_langgraph_label_the_core_refuses_is_a_namespace_of_its_own(
    lg: MemoryStoreLangGraph, store: MemoryStore, label: str
) -> None:
    # Issue 27 item 16 refuses control and invisible characters and edge whitespace in core
    # namespaces; LangGraph allows them in labels (its own suite stores ("users", "alice\n")), so
    # such a namespace is kept escaped, distinct from the one it looks like, and round-trips.
    lg.put(("users", "alice"), "k", {"v": 1})
    lg.put(("users", label), "k", {"v": 2})
    assert lg.get(("users", "alice"), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert lg.get(("users", label), "k").value == {"v": 2}  # type: ignore[union-attr]
    assert set(lg.list_namespaces(prefix=("users",))) == {("users", "alice"), ("users", label)}
    found = {(h.namespace, h.value["v"]) for h in lg.search(("users",))}
    assert found == {(("users", "alice"), 1), (("users", label), 2)}
    assert lg.langgraph_namespace(lg.core_namespace(("users", label))) == ("users", label)
    assert store.list(lg.core_namespace(("users", label)))[0].id == "k"


# ---------------------------------------------------------------- one spelling per label (NFC), on every path
NFC_LABEL, NFD_LABEL = "\u00e9mile", "e\u0301mile"
SPELLINGS = pytest.mark.parametrize(("put_as", "read_as"), [(NFD_LABEL, NFC_LABEL), (NFC_LABEL, NFD_LABEL)])


@SPELLINGS
def test_item16_nfc_and_nfd_labels_are_one_label_for_get_search_and_delete(
    lg: MemoryStoreLangGraph, put_as: str, read_as: str
) -> None:
    # get() found an NFD-put item but search() and prefix searches with the same label found none:
    # the core normalised the namespace, the adapter compared the raw labels against it.
    lg.put((put_as,), "k", {"text": "put under one spelling"})
    lg.put(("user", put_as), "k", {"text": "nested"})
    for label in (put_as, read_as):
        assert lg.get((label,), "k").namespace == (NFC_LABEL,)  # type: ignore[union-attr]
        assert [(h.namespace, h.key) for h in lg.search((label,))] == [((NFC_LABEL,), "k")]
        assert [h.key for h in lg.search((label,), query="spelling")] == ["k"]
        assert [h.key for h in lg.search((label,), filter={"text": "put under one spelling"})] == ["k"]
        assert [h.namespace for h in lg.search(("user", label))] == [("user", NFC_LABEL)]
    assert {h.namespace for h in lg.search(("user",))} == {("user", NFC_LABEL)}
    lg.delete((read_as,), "k")
    assert lg.get((put_as,), "k") is None
    assert lg.search((put_as,)) == []


@SPELLINGS
def test_item16_nfc_and_nfd_labels_are_one_label_for_list_namespaces(
    lg: MemoryStoreLangGraph, put_as: str, read_as: str
) -> None:
    lg.put((put_as, "notes"), "k", DOC)
    lg.put(("user", put_as), "k", DOC)
    for label in (put_as, read_as):
        assert lg.list_namespaces(prefix=(label,)) == [(NFC_LABEL, "notes")]
        assert lg.list_namespaces(suffix=(label,)) == [("user", NFC_LABEL)]
        assert lg.list_namespaces(prefix=("*", label)) == [("user", NFC_LABEL)]
        match = ListNamespacesOp(match_conditions=(MatchCondition("prefix", label),))
        assert lg.batch([match]) == [[(NFC_LABEL, "notes")]]
    assert lg.list_namespaces() == sorted([(NFC_LABEL, "notes"), ("user", NFC_LABEL)])


@SPELLINGS
def test_item16_puts_spelled_two_ways_in_one_batch_are_one_item(
    lg: MemoryStoreLangGraph, store: MemoryStore, put_as: str, read_as: str
) -> None:
    lg.batch([PutOp((put_as,), "k", {"v": 1}), PutOp((read_as,), "k", {"v": 2}), PutOp((put_as,), "j", {"v": 3})])
    assert lg.get((NFC_LABEL,), "k").value == {"v": 2}  # type: ignore[union-attr]
    assert sorted(h.key for h in lg.search((read_as,))) == ["j", "k"]
    assert store.count(lg.core_namespace((put_as,))) == 2
    lg.batch([PutOp((read_as,), "j", None)])
    assert [h.key for h in lg.search((put_as,))] == ["k"]


@SPELLINGS
def test_item16_the_core_namespace_of_either_spelling_is_the_nfc_one(put_as: str, read_as: str) -> None:
    assert MemoryStoreLangGraph.core_namespace((put_as, "x")) == MemoryStoreLangGraph.core_namespace((read_as, "x"))
    assert MemoryStoreLangGraph.core_namespace((put_as,)) == f"langgraph:{NFC_LABEL}"
    escaped = MemoryStoreLangGraph.core_namespace((put_as + "\n",))
    assert escaped == MemoryStoreLangGraph.core_namespace((read_as + "\n",))
    assert MemoryStoreLangGraph.langgraph_namespace(escaped) == (NFC_LABEL + "\n",)


@SPELLINGS
def test_item16_escaped_labels_round_trip_through_prefix_search_and_list_namespaces(
    lg: MemoryStoreLangGraph, put_as: str, read_as: str
) -> None:
    # Labels the core refuses are kept escaped ("langgraph%:"); they must still be one label in NFC
    # whatever the spelling, and be found by prefix, suffix and search like any other.
    for tail in ("\n", " ", "\u200b", "%"):
        lg.put(("users", put_as + tail), "k", {"text": "escaped " + repr(tail)})
        label = NFC_LABEL + tail
        assert lg.list_namespaces(prefix=("users", read_as + tail)) == [("users", label)]
        assert lg.list_namespaces(suffix=(read_as + tail,)) == [("users", label)]
        assert [h.namespace for h in lg.search(("users", read_as + tail))] == [("users", label)]
        assert [h.namespace for h in lg.search(("users", read_as + tail), query="escaped")] == [("users", label)]
        assert lg.get(("users", read_as + tail), "k").namespace == ("users", label)  # type: ignore[union-attr]
    assert len(lg.search(("users",))) == 4
    assert len(lg.list_namespaces(prefix=("users",))) == 4


def test_item16_a_ttl_put_under_nfd_is_refreshed_and_swept_under_nfc(store: MemoryStore, clock: ManualClock) -> None:
    lg = MemoryStoreLangGraph(store)
    lg.put((NFD_LABEL,), "k", DOC, ttl=60)
    clock.advance(minutes=45)
    assert [h.key for h in lg.search((NFC_LABEL,))] == ["k"]  # refreshes the ttl: 60 minutes from now
    clock.advance(minutes=45)
    assert lg.get((NFD_LABEL,), "k", refresh_ttl=False) is not None
    assert lg.search((NFD_LABEL,), refresh_ttl=False)[0].namespace == (NFC_LABEL,)
    clock.advance(minutes=16)
    assert lg.search((NFD_LABEL,)) == []
    assert lg.sweep_ttl() == 1


@pytest.mark.parametrize("label", ["x\u200c\u0301", "x\u200e\u0301\u0327", "q\u0301\n", "a\nb\u0308"])
def test_item16_a_combining_mark_after_an_escaped_character_round_trips(lg: MemoryStoreLangGraph, label: str) -> None:
    # The core stores namespaces in NFC: a mark right after an escape ("%00200C" + U+0301) would
    # compose with the escape's last hex digit and the label would come back as another one.
    lg.put(("users", label), "k", DOC)
    canonical = ("users", unicodedata.normalize("NFC", label))  # U+0327 sorts before U+0301 in NFC
    assert lg.list_namespaces(prefix=("users",)) == [canonical]
    assert [h.namespace for h in lg.search(("users", label))] == [canonical]
    assert lg.langgraph_namespace(lg.store.namespaces()[0]) == canonical
