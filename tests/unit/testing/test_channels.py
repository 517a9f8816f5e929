"""The channel standard suite, run on every built-in channel, and shown to fail on broken channels."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memory_retrievers import ChannelInput, FtsField, Need, RankedList, RecallConfig, RoutingMode
from memory_retrievers.recall.activation import SpreadingActivation
from memory_retrievers.recall.builtin import default_registry
from memory_retrievers.recall.channel import Channel
from memory_retrievers.testing.channels import DEFAULT_MEMORIES, DEFAULT_QUERIES, ChannelStandardTests
from memory_retrievers.text.query import QueryFeatures

BUILT_IN: list[Channel] = [*default_registry(), SpreadingActivation()]


class TestBuiltInChannels(ChannelStandardTests):
    """Every channel the library ships passes the suite a channel author runs."""

    @pytest.fixture(params=BUILT_IN, ids=lambda c: c.name)
    def channel(self, request: pytest.FixtureRequest) -> Channel:
        return request.param  # type: ignore[no-any-return]


class _Plain:
    """A correct channel (BM25 on the query's terms) that each broken one below changes in one way."""

    name = "plain"
    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        return True

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        hits = await given.source.text_search(given.query.terms, FtsField.TEXT, given.depth)
        return [RankedList(self.name, hits.ids, given.weight)]


class _MakesUpIds(_Plain):
    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        return [RankedList(self.name, ("m0", "m5"), given.weight)]  # ids of a namespace it never searched


class _ReturnsGarbage(_Plain):
    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        return [{"ids": ["m0"]}]  # type: ignore[list-item]


class _Raises(_Plain):
    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        raise RuntimeError("the index server is down")


class _RoutesWithAString(_Plain):
    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        return "yes"  # type: ignore[return-value]


class _Random(_Plain):
    counter = 0

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        lists = await super().search(given)
        type(self).counter += 1
        return [RankedList(self.name, tuple(reversed(lists[0].ids)) if self.counter % 2 else lists[0].ids)]


class _FindsNothing(_Plain):
    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        return []


class _OptIn(_Plain):
    """Off unless the config gives it a weight: the host never routes a channel weighing 0."""

    default_weight = 0.0


class _ListIds(_Plain):
    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        (found,) = await super().search(given)
        return [RankedList(self.name, list(found.ids), given.weight)]  # type: ignore[arg-type]


SUITE = ChannelStandardTests()


@pytest.mark.parametrize("weights", [{}, {"plain": 2.0}], ids=["off by default", "weighted by the config"])
def test_the_suite_passes_an_opt_in_channel_and_ids_given_as_a_list(tmp_path: Path, weights: dict[str, float]) -> None:
    config = RecallConfig(weights=weights)
    SUITE.test_it_runs_inside_a_recall_where_it_is_routed(_OptIn(), DEFAULT_MEMORIES, DEFAULT_QUERIES, config, tmp_path)
    SUITE.test_search_returns_ranked_lists_of_ids_its_source_returned(
        _ListIds(), DEFAULT_MEMORIES, DEFAULT_QUERIES, config
    )


def test_the_suite_passes_a_correct_plug_in(tmp_path: Path) -> None:
    config = RecallConfig()
    SUITE.test_it_is_a_channel_a_registry_accepts(_Plain())
    SUITE.test_search_returns_ranked_lists_of_ids_its_source_returned(
        _Plain(), DEFAULT_MEMORIES, DEFAULT_QUERIES, config
    )
    SUITE.test_search_is_deterministic_and_safe_to_run_concurrently(_Plain(), DEFAULT_MEMORIES, DEFAULT_QUERIES, config)
    SUITE.test_it_runs_inside_a_recall_where_it_is_routed(_Plain(), DEFAULT_MEMORIES, DEFAULT_QUERIES, config, tmp_path)


@pytest.mark.parametrize(
    ("broken", "check", "why"),
    [
        (_MakesUpIds(), "test_search_returns_ranked_lists_of_ids_its_source_returned", "no search or fetch returned"),
        (_ReturnsGarbage(), "test_search_returns_ranked_lists_of_ids_its_source_returned", "search returned"),
        (_Raises(), "test_an_empty_namespace_gives_no_ids", "index server is down"),
        (_Random(), "test_search_is_deterministic_and_safe_to_run_concurrently", "differ between runs"),
        (_FindsNothing(), "test_search_finds_something_where_it_runs", "no query found anything"),
    ],
    ids=["made-up ids", "garbage", "raises", "not deterministic", "finds nothing"],
)
def test_the_suite_fails_a_broken_channel(broken: Channel, check: str, why: str) -> None:
    args = {
        "test_an_empty_namespace_gives_no_ids": (broken, DEFAULT_QUERIES, RecallConfig()),
    }.get(check, (broken, DEFAULT_MEMORIES, DEFAULT_QUERIES, RecallConfig()))
    with pytest.raises((AssertionError, RuntimeError), match=why):
        getattr(SUITE, check)(*args)


def test_the_suite_fails_a_channel_whose_routing_is_not_a_bool() -> None:
    with pytest.raises(AssertionError, match="runs\\(\\) returned 'yes'"):
        SUITE.test_runs_answers_true_or_false_for_every_query_and_mode(
            _RoutesWithAString(), DEFAULT_QUERIES, RecallConfig()
        )


def test_the_suite_fails_a_channel_that_recall_leaves_out(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="index server is down"):
        SUITE.test_it_runs_inside_a_recall_where_it_is_routed(
            _Raises(), DEFAULT_MEMORIES, DEFAULT_QUERIES, RecallConfig(), tmp_path
        )
