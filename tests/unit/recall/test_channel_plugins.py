"""Recall channels as plug-ins, on real LanceDB tables with the hash embedder (issue 28).

A channel is one class handed to ``MemoryRetriever(..., channels=[...])``: it shows up in the plan,
in the explanations and in the fusion with its weight. Whatever a plug-in does (raise, hang,
return garbage or other namespaces' ids), recall goes on and stays in its namespace.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import pytest

from memory_retrievers import (
    Channel,
    ChannelFailedWarning,
    ChannelInput,
    ChannelRegistry,
    ChannelWeights,
    ConfigError,
    FtsField,
    MemoryRetriever,
    MemoryStore,
    Need,
    RankedList,
    RecallConfig,
    RoutingMode,
    SpreadingActivation,
    StorageError,
)
from memory_retrievers.recall.builtin import default_registry
from memory_retrievers.recall.channel import ChannelQuery
from memory_retrievers.recall.plan import route
from memory_retrievers.recall.runner import MAX_LIST_IDS, ChannelRunner, CheckedSource
from memory_retrievers.recall.tasks import RecallTasks
from memory_retrievers.text.query import QueryFeatures, analyze

QUIET = {"entity": 0, "recency": 0, "links": 0, "hyde": 0, "context": 0, "vector": 0, "bm25": 1.0}
BUILT_INS = ("vector", "bm25", "context", "entity", "recency", "dated", "links")


def cfg(**weights: float) -> dict[str, Any]:
    """BM25 alone unless told otherwise: no decay, MMR or access write-back, to read scores by hand."""
    return {
        "scoring": {"decay": "none"},
        "selection": {"mmr": False},
        "record_access": False,
        "query_expansion": {"expansion": False},
        "weights": {**QUIET, **weights},
    }


class Pin:
    """A test's own channel: the memories that say ``word``, whatever the query (one class, one file)."""

    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def __init__(self, word: str = "zebra", name: str = "pin") -> None:
        self.word = word
        self.name = name

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        return mode is not RoutingMode.VECTOR

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        hits = await given.source.text_search(self.word, FtsField.TEXT, given.depth)
        return [RankedList(self.name, hits.ids, given.weight)]


class Scripted:
    """A channel whose search does whatever the test says."""

    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def __init__(self, search: Any, name: str = "scripted", needs: frozenset[Need] = frozenset()) -> None:
        self.name = name
        self.needs = needs
        self._search = search

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        return True

    async def search(self, given: ChannelInput) -> Any:
        return await self._search(given)


@pytest.fixture
def two(store: MemoryStore) -> dict[str, str]:
    zebra = store.add("zebra crossing details", namespace="u")
    alpha = store.add("alpha topic start", namespace="u")
    foreign = store.add("zebra alpha secret of another user", namespace="other")
    return {"zebra": zebra.id, "alpha": alpha.id, "foreign": foreign.id}


def test_a_test_defined_channel_is_planned_fused_and_explained(store: MemoryStore, two: dict[str, str]) -> None:
    plain = MemoryRetriever(store, namespace="u", config=cfg())
    assert [m.id for m in plain.recall("alpha").memories] == [two["alpha"]]

    r = MemoryRetriever(store, namespace="u", config=cfg(pin=3.0), channels=[Pin()])
    assert isinstance(Pin(), Channel) and r.channels.names == (*BUILT_INS, "pin")
    res = r.recall("alpha")
    assert res.plan["channels"] == ["bm25", "pin"]
    assert "pin" in res.plan["lists"]
    (zebra,) = [m for m in res.memories if m.id == two["zebra"]]
    assert [(c.label, c.channel, c.rank, c.weight) for c in zebra.explanation.channels] == [("pin", "pin", 1, 3.0)]
    # pin 3 * 1/(60 + 1) + the rank-1 bonus 0.05
    assert zebra.explanation.fused_score == pytest.approx(3 / 61 + 0.05)


def test_a_plug_in_without_a_weight_uses_its_default_weight(store: MemoryStore, two: dict[str, str]) -> None:
    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[Pin()])
    (zebra,) = [m for m in r.recall("alpha").memories if m.id == two["zebra"]]
    assert [c.weight for c in zebra.explanation.channels] == [1.0]
    off = MemoryRetriever(store, namespace="u", config=cfg(pin=0), channels=[Pin()])
    res = off.recall("alpha")
    assert "pin" not in res.plan["channels"] and [m.id for m in res.memories] == [two["alpha"]]


def test_a_plug_in_replaces_the_built_in_of_its_name_in_place(store: MemoryStore, two: dict[str, str]) -> None:
    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[Pin(name="bm25")])
    assert r.channels.names == BUILT_INS
    res = r.recall("alpha")  # "bm25" now finds the zebra whatever the query says
    assert [m.id for m in res.memories] == [two["zebra"]]
    assert default_registry().names == BUILT_INS  # the default registry is untouched


def test_a_call_can_override_a_plug_in_weight(store: MemoryStore, two: dict[str, str]) -> None:
    r = MemoryRetriever(store, namespace="u", config=cfg(pin=1.0), channels=[Pin()])
    res = r.recall("alpha", config={"weights": {"pin": 4.0}})
    (zebra,) = [m for m in res.memories if m.id == two["zebra"]]
    assert [c.weight for c in zebra.explanation.channels] == [4.0]
    assert r.config.weights.get("pin") == 1.0  # the retriever's own config is unchanged


def test_weights_must_name_a_registered_channel(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match=r"\['pinn'\].*registered channels: vector, bm25"):
        MemoryRetriever(store, namespace="u", config={"weights": {"pinn": 1.0}})
    r = MemoryRetriever(store, namespace="u", config=cfg(pin=1.0), channels=[Pin()])
    with pytest.raises(ConfigError, match=r"\['pinn'\].*pin"):
        r.recall("alpha", config={"weights": {"pinn": 2.0}})
    with pytest.raises(ConfigError, match="pinn"):
        r.recall("alpha", config=RecallConfig(weights={"pinn": 2.0}))


def test_channel_weights_keep_their_fields_and_take_plug_ins_by_name() -> None:
    w = ChannelWeights(vector=2.0, pin=0.25)
    assert (w.vector, w.bm25, w.get("pin"), w.get("nope"), w.get("nope", 1.5)) == (2.0, 0.5, 0.25, None, 1.5)
    assert w.as_dict()["pin"] == 0.25 and w.as_dict()["links"] == 0.5
    for bad in (-1, float("nan"), float("inf"), True, "high"):
        with pytest.raises(ConfigError, match="pin"):
            ChannelWeights(pin=bad)
    with pytest.raises(ConfigError, match="bm25"):
        ChannelWeights(bm25=-1)


@pytest.mark.parametrize(
    ("channels", "message"),
    [
        ("pin", "list of Channel"),
        (Pin(), "list of Channel"),
        ([object()], "must implement Channel"),
        ([Pin(name="a:b")], "letters, digits"),
        ([Pin(name="hyde")], "stage"),
    ],
)
def test_bad_channels_are_refused_at_construction(store: MemoryStore, channels: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MemoryRetriever(store, namespace="u", channels=channels)


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), True, "1"])
def test_bad_channel_timeout_is_refused(store: MemoryStore, timeout: Any) -> None:
    with pytest.raises(ConfigError, match="channel_timeout_s"):
        MemoryRetriever(store, namespace="u", channel_timeout_s=timeout)


def test_garbage_ids_are_dropped_at_the_boundary(store: MemoryStore, two: dict[str, str]) -> None:
    async def garbage(given: ChannelInput) -> list[RankedList]:
        ids: Any = (two["foreign"], "no-such-id", 5, None, two["alpha"], two["alpha"], two["zebra"])
        return [RankedList("junk", ids, given.weight)]

    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[Scripted(garbage)])
    res = r.recall("alpha")
    assert {m.id for m in res.memories} == {two["alpha"], two["zebra"]}  # nothing of "other", no unknown id
    assert all(m.memory.namespace == "u" for m in res.memories)
    (zebra,) = [m for m in res.memories if m.id == two["zebra"]]
    assert [(c.label, c.channel, c.rank) for c in zebra.explanation.channels] == [("junk", "scripted", 2)]


def test_a_runaway_list_counts_with_its_first_ids_only(store: MemoryStore, two: dict[str, str]) -> None:
    async def runaway(given: ChannelInput) -> list[RankedList]:
        return [RankedList("junk", (*(f"made-up-{n}" for n in range(MAX_LIST_IDS)), two["zebra"]), given.weight)]

    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[Scripted(runaway)])
    assert two["zebra"] not in {m.id for m in r.recall("alpha").memories}  # past the first MAX_LIST_IDS


def test_a_filtered_out_id_from_a_plug_in_is_dropped(store: MemoryStore, two: dict[str, str]) -> None:
    async def names_zebra(given: ChannelInput) -> list[RankedList]:
        return [RankedList("junk", (two["zebra"],), given.weight)]

    store.add("alpha note for work", namespace="u", kind="event")
    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[Scripted(names_zebra)])
    res = r.recall("alpha", kinds=["event"])
    assert two["zebra"] not in {m.id for m in res.memories}


async def _raises(given: ChannelInput) -> list[RankedList]:
    raise RuntimeError("boom")


async def _hangs(given: ChannelInput) -> list[RankedList]:
    await asyncio.Event().wait()
    return []


async def _not_a_list(given: ChannelInput) -> Any:
    return {"ids": ["x"]}


async def _lone_list(given: ChannelInput) -> Any:
    return RankedList("x", ())


async def _not_ranked_lists(given: ChannelInput) -> Any:
    return [("a", "b")]


async def _negative_weight(given: ChannelInput) -> Any:
    return [RankedList("x", (), -1.0)]


async def _nan_weight(given: ChannelInput) -> Any:
    return [RankedList("x", (), float("nan"))]


async def _no_label(given: ChannelInput) -> Any:
    return [RankedList("", ())]


async def _ranks_mismatch(given: ChannelInput) -> Any:
    return [RankedList("x", ("a", "b"), 1.0, "", (1,))]


async def _ids_a_string(given: ChannelInput) -> Any:
    return [RankedList("x", "abc")]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("search", "reason"),
    [
        (_raises, "failed.*boom"),
        (_hangs, "timed out"),
        (_not_a_list, "returned garbage"),
        (_lone_list, "returned garbage"),
        (_not_ranked_lists, "returned garbage"),
        (_negative_weight, "returned garbage"),
        (_nan_weight, "returned garbage"),
        (_no_label, "returned garbage"),
        (_ranks_mismatch, "returned garbage"),
        (_ids_a_string, "returned garbage"),
    ],
)
@pytest.mark.parametrize("needs", [frozenset(), frozenset({Need.FUSED})], ids=["first pass", "after fusion"])
def test_a_failing_plug_in_is_dropped_with_a_warning_naming_it(
    store: MemoryStore, two: dict[str, str], search: Any, reason: str, needs: frozenset[Need]
) -> None:
    baseline = MemoryRetriever(store, namespace="u", config=cfg()).recall("alpha")
    flaky = Scripted(search, name="flaky", needs=needs)
    # The timeout applies to every channel: only the hanging case needs a short one, and 0.2 s once
    # timed out the built-in bm25 channel too on a loaded machine.
    timeout = {"channel_timeout_s": 0.5} if search is _hangs else {}
    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[flaky], **timeout)
    with pytest.warns(ChannelFailedWarning, match=f"channel 'flaky' {reason}"):
        res = r.recall("alpha")
    assert [(m.id, m.score) for m in res.memories] == [(m.id, m.score) for m in baseline.memories]
    assert "flaky" in res.plan["channels"]


def test_a_plug_in_whose_routing_raises_is_skipped(store: MemoryStore, two: dict[str, str]) -> None:
    class BadRouting(Pin):
        def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
            raise ValueError("no idea")

    r = MemoryRetriever(store, namespace="u", config=cfg(), channels=[BadRouting()])
    with pytest.warns(ChannelFailedWarning, match="'pin' failed to route.*no idea"):
        res = r.recall("alpha")
    assert res.plan["channels"] == ["bm25"]


def test_a_plain_sync_search_works_too(store: MemoryStore, two: dict[str, str]) -> None:
    class Sync(Pin):
        def search(self, given: ChannelInput) -> Sequence[RankedList]:  # type: ignore[override]
            return [RankedList("sync", (two["zebra"],), given.weight)]

    res = MemoryRetriever(store, namespace="u", config=cfg(), channels=[Sync(name="sync")]).recall("alpha")
    assert {m.id for m in res.memories} == {two["alpha"], two["zebra"]}


async def test_async_recall_matches_sync_with_a_plug_in(store: MemoryStore, two: dict[str, str]) -> None:
    r = MemoryRetriever(store, namespace="u", config=cfg(pin=2.0), channels=[Pin()])
    got = await r.arecall("alpha")
    assert [(m.id, m.score) for m in got.memories] == [(m.id, m.score) for m in r.recall("alpha").memories]


def test_the_registry_is_a_copy_per_retriever(store: MemoryStore) -> None:
    a = MemoryRetriever(store, namespace="u", channels=[Pin()])
    b = MemoryRetriever(store, namespace="u")
    assert "pin" in a.channels and "pin" not in b.channels
    registry = ChannelRegistry([Pin()])
    assert registry.with_channels([Pin(name="other")]).names == ("pin", "other") and registry.names == ("pin",)


# --------------------------------------------------------------------------- spreading activation
@pytest.fixture
def trip(store: MemoryStore) -> dict[str, str]:
    seat = store.add("Seat 14C by the window", namespace="u")
    top = store.add(
        "Alice booked the flights for the trip", namespace="u", entities=["Alice", "Lisbon"], links=[seat.id]
    )
    hotel = store.add("The hotel by the river is reserved for three nights", namespace="u", entities=["Lisbon"])
    hiking = store.add("Carol enjoys hiking in the alps", namespace="u", entities=["Carol"])
    store.add("Lisbon flights booked by Alice again", namespace="other", entities=["Lisbon"])
    return {"seat": seat.id, "top": top.id, "hotel": hotel.id, "hiking": hiking.id}


def test_activation_brings_in_memories_one_link_or_one_entity_hop_from_a_top_hit(
    store: MemoryStore, trip: dict[str, str]
) -> None:
    question = "which flights were booked?"
    plain = MemoryRetriever(store, namespace="u", config=cfg()).recall(question)
    assert [m.id for m in plain.memories] == [trip["top"]]

    r = MemoryRetriever(store, namespace="u", config=cfg(activation=1.0), channels=[SpreadingActivation()])
    res = r.recall(question)
    assert res.plan["channels"] == ["bm25", "activation"]
    ids = [m.id for m in res.memories]
    assert ids[0] == trip["top"]
    assert trip["hotel"] in ids and trip["seat"] in ids  # the hotel shares no word with the question, only "Lisbon"
    assert trip["hiking"] not in ids and all(m.memory.namespace == "u" for m in res.memories)
    by_id = {m.id: m.explanation for m in res.memories}
    # From the top hit (activation 1/1): the link gives 0.5, the shared entity 0.5 * 0.5 = 0.25.
    assert [(c.label, c.channel, c.rank, c.weight) for c in by_id[trip["seat"]].channels] == [
        ("activation", "activation", 1, 1.0)
    ]
    assert [(c.label, c.rank) for c in by_id[trip["hotel"]].channels] == [("activation", 2)]
    assert ids.index(trip["seat"]) < ids.index(trip["hotel"])


def test_activation_with_links_only_leaves_the_entity_hop_out(store: MemoryStore, trip: dict[str, str]) -> None:
    r = MemoryRetriever(
        store, namespace="u", config=cfg(activation=1.0), channels=[SpreadingActivation(entity_factor=0)]
    )
    ids = [m.id for m in r.recall("which flights were booked?").memories]
    assert trip["seat"] in ids and trip["hotel"] not in ids


def test_activation_stays_out_of_vector_mode(store: MemoryStore, trip: dict[str, str]) -> None:
    r = MemoryRetriever(
        store, namespace="u", config={**cfg(activation=1.0), "mode": "vector"}, channels=[SpreadingActivation()]
    )
    assert r.recall("which flights were booked?").plan["channels"] == []  # vector weight is 0 here


@pytest.mark.parametrize(
    "kwargs",
    [{"seeds": 0}, {"hops": 4}, {"decay": 0}, {"decay": 1.5}, {"entity_factor": -0.1}, {"keep": 1.5}, {"hops": True}],
)
def test_activation_parameters_are_checked(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=f"SpreadingActivation {next(iter(kwargs))}"):
        SpreadingActivation(**kwargs)
    assert "hops=2" in repr(SpreadingActivation())


# --------------------------------------------------------------------------- the runner's boundary
class BrokenSource:
    """A source whose store fails: every search raises."""

    namespace = "u"
    description = "broken"

    async def text_search(self, *args: Any, **kwargs: Any) -> Any:
        raise StorageError("the table is gone")


async def test_a_source_failure_fails_the_recall_but_a_plug_ins_own_error_does_not() -> None:
    class OwnStorageError(Pin):
        async def search(self, given: ChannelInput) -> Sequence[RankedList]:
            raise StorageError("raised by the plug-in itself")

    registry = default_registry().with_channels([Pin(), OwnStorageError(name="own")])
    query = ChannelQuery("alpha", "alpha", analyze("alpha"))
    async with RecallTasks() as tasks:
        runner = ChannelRunner(registry, CheckedSource(BrokenSource()), RecallConfig(), tasks, 1.0)  # type: ignore[arg-type]
        runner.start(["pin"], query)
        with pytest.raises(StorageError, match="the table is gone"):  # as when a built-in's search fails
            await runner.collect()
        runner.start(["own"], query)
        with pytest.warns(ChannelFailedWarning, match="'own' failed.*raised by the plug-in itself"):
            assert await runner.collect() == []


def test_a_channel_needing_entities_is_searched_only_when_there_are_some(store: MemoryStore) -> None:
    calls: list[tuple[str, ...]] = []

    async def record(given: ChannelInput) -> list[RankedList]:
        calls.append(given.query.entities)
        return []

    store.add("Alice moved to Berlin", namespace="u", entities=["Alice", "Berlin"])
    r = MemoryRetriever(
        store, namespace="u", config=cfg(), channels=[Scripted(record, needs=frozenset({Need.ENTITIES}))]
    )
    assert "scripted" in r.recall("where did she move?").plan["channels"]
    assert calls == []  # routed, but the query names no entity
    r.recall("where did Alice move?")
    assert calls == [("Alice",)]
    assert "scripted" in r.recall("where did Bob move?", namespace="empty").plan["channels"]
    assert calls == [("Alice",)]  # the namespace has no entities


def test_routing_asks_each_registered_channel() -> None:
    registry = default_registry().with_channels([Pin()])
    hybrid = route(analyze("cat"), RecallConfig(mode="hybrid"), has_llm=False, registry=registry)
    assert hybrid.channels == ["vector", "bm25", "context", "entity", "recency", "links", "pin"]
    assert route(analyze("cat"), RecallConfig(mode="vector"), has_llm=False, registry=registry).channels == ["vector"]
    off = RecallConfig(mode="hybrid", weights={"pin": 0})
    assert "pin" not in route(analyze("cat"), off, has_llm=False, registry=registry).channels


# Found by the red team of the issue 28 refactor (behaviour users relied on at c4d7fc4):
# A plug-in replacing a built-in: MemoryRetriever's docstring says "channels: ... or replacing the
# built-in of the same name. Give each a weight in config.weights by its name (else it weighs its
# default_weight)". ChannelRegistry.weight asks weights.get(name), and a built-in name is a
# ChannelWeights field that always has a value, so the replacement's default_weight never applies.
# docs/RELIABILITY.md item 10: "A plug-in that never returns, or blocks, costs itself, not the
# process ... An `async def` plug-in runs on a loop of its own, so one that blocks inside
# `async def` no longer stops every store's writes and recalls, and its timeout fires."
# Channels are the new plug-ins (issue 28) and get neither: ChannelRunner awaits their search on
# the store's loop.
class _MyVector:
    """A user's own vector channel (e.g. over an external ANN index), replacing the built-in."""

    name = "vector"
    needs: frozenset[Need] = frozenset({Need.VECTOR})
    default_weight = 3.0

    def __init__(self) -> None:
        self.weights: list[float] = []

    def runs(self, features: object, config: object, mode: object) -> bool:
        return True

    def search(self, given: ChannelInput) -> list[RankedList]:
        self.weights.append(given.weight)
        return []


def test_a_plugin_replacing_a_built_in_weighs_its_default_weight_when_the_config_names_none(
    store: MemoryStore,
) -> None:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    mine = _MyVector()
    retriever = MemoryRetriever(store, channels=[mine])
    retriever.recall("what does alice drink?", namespace="alice")
    # Observed: [1.0] (ChannelWeights().vector, the built-in's default), not the plug-in's 3.0
    assert mine.weights == [3.0]


class _Codes:
    """The memories quoting the query's error codes exactly (examples/custom_channel.py's channel)."""

    name = "error_code"
    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        return True

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        codes = set(re.findall(r"E-\d{4}", given.query.text))
        hits = await given.source.text_search(" ".join(sorted(codes)), FtsField.TEXT, given.depth)
        exact = [i for i in hits.ids if codes & set(re.findall(r"E-\d{4}", given.source.memory(i).text))]
        return [RankedList(self.name, tuple(exact), given.weight)]


def test_a_plug_ins_weight_can_put_its_best_hit_first(store: MemoryStore) -> None:
    # Its hits were read by the calibration as a recency or link hit (a negative coefficient): at
    # weight 30 the memory only the plug-in found exactly still ranked second, its score unmoved.
    texts = [
        "Error E-4013 means the licence has expired; renew it in the admin console.",
        "Error E-4012 means the calendar token is stale: sign out and in again to refresh it.",
        "Calendar sync can lag by a few minutes after a password change.",
        "A renewed licence shows its new expiry date in the admin console.",
        "Tickets about error E-4013 are handled by the billing team.",
        "The mobile app caches the calendar for offline use.",
    ]
    store.add_many([{"text": t} for t in texts], namespace="support")
    query = "The customer renewed the licence in the admin console and now sees E-4012: why?"
    firsts, scores = [], []
    for weight in (0.5, 3.0, 30.0):
        retriever = MemoryRetriever(store, channels=[_Codes()], config={"weights": {"error_code": weight}})
        memories = retriever.recall(query, namespace="support", k=3).memories
        firsts.append(memories[0].text)
        scores.append(next(m.score for m in memories if "E-4012" in m.text))
    assert "E-4013" in firsts[0] and "E-4012" in firsts[-1]  # the weight decides, as the user set it
    assert scores == sorted(scores)  # a larger weight never lowers what the channel found
