"""The standard tests of a recall channel: subclass :class:`ChannelStandardTests` in your tests.

As ``langchain-tests`` does for retrievers, a channel author declares the channel and gets the
checks every channel must pass, the same ones every built-in channel passes
(``tests/unit/testing/test_channels.py``)::

    from memory_retrievers.testing.channels import ChannelStandardTests

    class TestOrderNumbers(ChannelStandardTests):
        @pytest.fixture
        def channel(self) -> OrderNumbers:
            return OrderNumbers()

Override ``memories`` and ``queries`` to run it on data where it has something to find (the
defaults are a short chat with names, dates, codes and links). The tests run the channel on a
:class:`~memory_retrievers.testing.FakeRecallSource` and once inside a real recall on a
``MemoryStore`` (a temporary folder, the hash embedder): a channel that raises, hangs, returns
garbage or lists ids its source did not give fails here, where in production recall would only
leave it out with a ``ChannelFailedWarning``. Needs ``pytest`` (and ``pytest-asyncio`` is not
required: the async calls run with ``asyncio.run``).
"""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers.embeddings import HashEmbedder
from memory_retrievers.recall.channel import Channel, ChannelFailedWarning
from memory_retrievers.recall.config import RecallConfig, RoutingMode
from memory_retrievers.recall.fusion import RankedList
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.recall.retriever import MemoryRetriever
from memory_retrievers.store.memory_store import MemoryStore
from memory_retrievers.testing.source import FakeRecallSource, channel_input
from memory_retrievers.text.query import analyze

__all__ = ["DEFAULT_MEMORIES", "DEFAULT_QUERIES", "ChannelStandardTests"]

#: A short chat with what the built-in channels look for: names (entities), a context, a code, and
#: links to memories that share no word with the questions (found only by following a link).
DEFAULT_MEMORIES: tuple[Mapping[str, Any], ...] = (
    {
        "id": "m0",
        "text": "Caroline: I moved to Lisbon in May 2023",
        "entities": ("Caroline", "Lisbon"),
        "links": ("m9",),
    },
    {"id": "m1", "text": "Melanie: my daughter's recital is on 14 June", "entities": ("Melanie",)},
    {"id": "m2", "text": "Caroline: error E-4012 again when I sync my calendar", "entities": ("Caroline",)},
    {"id": "m3", "text": "Melanie: how is Lisbon treating you?", "entities": ("Melanie", "Lisbon")},
    {
        "id": "m4",
        "text": "Caroline: the flat in Alfama has a view of the river",
        "entities": ("Caroline", "Alfama"),
        "links": ("m0", "m8"),
        "context": "Melanie: how is Lisbon treating you?",
    },
    {"id": "m5", "text": "Melanie: we adopted a dog called Biscuit", "entities": ("Melanie", "Biscuit")},
    {"id": "m6", "text": "Melanie: the weather was lovely for the picnic", "entities": ("Melanie",)},
    {"id": "m7", "text": "Melanie: Biscuit chewed my new shoes", "entities": ("Melanie", "Biscuit")},
    {"id": "m8", "text": "the rent is paid on the first of each month", "entities": ()},
    {"id": "m9", "text": "Mr Duarte owns the building", "entities": ("Duarte",)},
)
#: Questions of every kind the router tells apart: an entity, a date, a recency cue, a code, none.
DEFAULT_QUERIES: tuple[str, ...] = (
    "Where does Caroline live now?",
    "What did we talk about on 1 May 2024?",
    "What is the latest news?",
    "Why do I see E-4012?",
    "tell me something",
)

_DEPTH = 10
_TIMEOUT_S = 10.0


class ChannelStandardTests:
    """The checks every recall channel passes. Subclass it and define the ``channel`` fixture."""

    @pytest.fixture
    def channel(self) -> Channel:
        """The channel under test: override this fixture."""
        raise NotImplementedError("define a `channel` fixture returning the channel under test")

    @pytest.fixture
    def memories(self) -> Sequence[str | Mapping[str, Any]]:
        """The namespace the channel searches (texts or dicts of memory fields)."""
        return DEFAULT_MEMORIES

    @pytest.fixture
    def queries(self) -> Sequence[str]:
        """The queries it is searched with."""
        return DEFAULT_QUERIES

    @pytest.fixture
    def config(self) -> RecallConfig:
        """The recall config the channel is given (the defaults)."""
        return RecallConfig()

    # ------------------------------------------------------------------ declaration
    def test_it_is_a_channel_a_registry_accepts(self, channel: Channel) -> None:
        """It implements the protocol, and its name, needs and default weight pass the registry's checks."""
        assert isinstance(channel, Channel), "a channel has name, needs, default_weight, runs and search"
        assert channel.name in ChannelRegistry([channel])

    def test_runs_answers_true_or_false_for_every_query_and_mode(
        self, channel: Channel, queries: Sequence[str], config: RecallConfig
    ) -> None:
        """Routing asks ``runs`` for every query; anything but ``True`` counts as no."""
        for query in queries:
            for mode in RoutingMode:
                answer = channel.runs(analyze(query), config, mode)
                assert answer is True or answer is False, f"runs() returned {answer!r} for {query!r} in {mode}"

    # ------------------------------------------------------------------ search on a fake source
    def test_search_returns_ranked_lists_of_ids_its_source_returned(
        self, channel: Channel, memories: Sequence[Any], queries: Sequence[str], config: RecallConfig
    ) -> None:
        """Lists of :class:`RankedList`, with finite weights >= 0, naming only ids its source gave."""
        for query in queries:
            source = FakeRecallSource(memories)
            lists = _search(channel, source, query, config)
            for ranked in lists:
                ids_ok = not isinstance(ranked.ids, (str, bytes)) and all(isinstance(i, str) for i in ranked.ids)
                assert ids_ok, f"{query!r}: a list's ids must be memory ids (str), best first; got {ranked.ids!r}"
                assert math.isfinite(ranked.weight) and ranked.weight >= 0, ranked
                made_up = set(ranked.ids) - source.handed_out
                assert not made_up, f"{query!r}: ids no search or fetch returned: {sorted(made_up)}"

    def test_search_finds_something_where_it_runs(
        self, channel: Channel, memories: Sequence[Any], queries: Sequence[str], config: RecallConfig
    ) -> None:
        """A channel that runs for none of the queries, or finds nothing for any, is not tested by them."""
        found = [
            ranked.ids
            for query in queries
            if channel.runs(analyze(query), config, RoutingMode.HYBRID)
            for ranked in _search(channel, FakeRecallSource(memories), query, config)
        ]
        assert any(found), "no query found anything: override `memories`/`queries` with data it searches"

    def test_an_empty_namespace_gives_no_ids(
        self, channel: Channel, queries: Sequence[str], config: RecallConfig
    ) -> None:
        """Nothing to find is no list or empty lists, never an error."""
        for query in queries:
            assert all(not ranked.ids for ranked in _search(channel, FakeRecallSource([]), query, config))

    def test_search_is_deterministic_and_safe_to_run_concurrently(
        self, channel: Channel, memories: Sequence[Any], queries: Sequence[str], config: RecallConfig
    ) -> None:
        """The same input gives the same lists, also when recalls run it at the same time."""
        for query in queries:
            first = _ids(_search(channel, FakeRecallSource(memories), query, config))
            again = asyncio.run(_search_many(channel, memories, query, config, times=3))
            assert all(_ids(lists) == first for lists in again), f"{query!r}: lists differ between runs"

    # ------------------------------------------------------------------ inside a real recall
    def test_it_runs_inside_a_recall_where_it_is_routed(
        self, channel: Channel, memories: Sequence[Any], queries: Sequence[str], config: RecallConfig, tmp_path: Path
    ) -> None:
        """Registered on a ``MemoryRetriever`` over a real store: routed where ``runs`` says so, and never left out.

        Recall leaves out a channel that raises, times out or returns garbage, with a
        ``ChannelFailedWarning``; here that warning is an error. Another namespace holds the same
        memories: nothing of it may come back.
        """
        records = [_record(m) for m in memories]
        with MemoryStore(tmp_path / "store", embedder=HashEmbedder(64)) as store:
            store.add_many(records, namespace="mine", dedup=False)
            store.add_many(records, namespace="theirs", dedup=False)
            retriever = MemoryRetriever(
                store, channels=[channel], config=config.model_copy(update={"record_access": False})
            )
            mine = {m.id for m in store.list("mine")}
            for query in queries:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", ChannelFailedWarning)
                    result = retriever.recall(query, namespace="mine", k=len(records))
                weight = retriever.channels.weight(channel.name, config.weights)
                routed = weight > 0 and channel.runs(analyze(query), config, config.mode)
                why = "runs() said so" if weight > 0 else f"its weight is {weight}: a channel weighing 0 never runs"
                assert (channel.name in result.plan["channels"]) is routed, f"{query!r}: routed {routed} ({why})"
                assert {m.id for m in result.memories} <= mine, f"{query!r} read another namespace"


def _record(memory: str | Mapping[str, Any]) -> dict[str, Any]:
    """A memory of the fake source as a store record (its text, entities and context: ids and links are the store's)."""
    if isinstance(memory, str):
        return {"text": memory}
    return {
        k: (list(v) if isinstance(v, tuple) else v) for k, v in memory.items() if k in ("text", "entities", "context")
    }


async def _search_once(channel: Channel, source: FakeRecallSource, text: str, config: RecallConfig) -> list[RankedList]:
    given = await channel_input(channel, source, text, config=config, depth=_DEPTH)
    lists = await asyncio.wait_for(channel.search(given), _TIMEOUT_S)
    assert isinstance(lists, Sequence) and not isinstance(lists, (str, bytes)), f"search returned {lists!r}"
    assert all(isinstance(ranked, RankedList) for ranked in lists), f"search returned {lists!r}"
    return list(lists)


def _search(channel: Channel, source: FakeRecallSource, text: str, config: RecallConfig) -> list[RankedList]:
    return asyncio.run(_search_once(channel, source, text, config))


async def _search_many(
    channel: Channel, memories: Sequence[Any], text: str, config: RecallConfig, *, times: int
) -> list[list[RankedList]]:
    return list(
        await asyncio.gather(*(_search_once(channel, FakeRecallSource(memories), text, config) for _ in range(times)))
    )


def _ids(lists: Sequence[RankedList]) -> list[tuple[str, tuple[str, ...]]]:
    return [(ranked.label, ranked.ids) for ranked in lists]
