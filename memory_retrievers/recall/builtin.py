"""The built-in recall channels, each a :class:`~memory_retrievers.recall.channel.Channel` like a user's.

Lists from the original query (vector, BM25, context, dated) weigh ``original_query_weight`` times
their channel's weight, so that LLM rewrites and feedback lists (weight 1 each) count less. Text
and vector searches fetch twice the depth and rank among statements
(:func:`~memory_retrievers.recall.stage_searches.statements_cut`).

:func:`default_registry` lists them in routing order: vector, bm25, context, entity, recency,
dated, links.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from memory_retrievers.models import FtsField
from memory_retrievers.recall.channel import ChannelInput, Need
from memory_retrievers.recall.config import RecallConfig, RoutingMode
from memory_retrievers.recall.fusion import RankedList
from memory_retrievers.recall.links import spread
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.recall.stage_searches import statements_cut
from memory_retrievers.text.query import QueryFeatures

__all__ = [
    "Bm25Channel",
    "ContextChannel",
    "DatedChannel",
    "EntityChannel",
    "LinksChannel",
    "RecencyChannel",
    "VectorChannel",
    "default_registry",
]

_NONE: frozenset[Need] = frozenset()


def _hybrid(mode: RoutingMode) -> bool:
    """Every channel but vector stays off in ``vector`` mode."""
    return mode is not RoutingMode.VECTOR


@dataclass(frozen=True, slots=True)
class VectorChannel:
    """Cosine similarity to the query's vector; also to the query as asked (``"vector:as asked"``)."""

    name: str = "vector"
    needs: frozenset[Need] = frozenset({Need.VECTOR})
    default_weight: float = 1.0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """In every mode."""
        return True

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list for the query's vector; a second, at ``asked_vector_share``, for the query as asked."""
        cfg, query, source = given.config, given.query, given.source
        weight = given.weight * cfg.fusion.original_query_weight
        if query.vector is None:
            return []
        ids = (await source.vector_search(query.vector, 2 * given.depth)).ids
        out = [_listed(self.name, statements_cut(source, ids, None, given.depth), weight)]
        if query.asked_vector is not None and cfg.query.asked_vector_share > 0:
            ids = (await source.vector_search(query.asked_vector, 2 * given.depth)).ids
            cut = statements_cut(source, ids, None, given.depth)
            out.append(_listed(f"{self.name}:as asked", cut, weight * cfg.query.asked_vector_share))
        return out


@dataclass(frozen=True)
class Bm25Channel:
    """BM25 over the memory text, with the query's keywords; equal scores share a rank."""

    name: str = "bm25"
    needs: frozenset[Need] = _NONE
    default_weight: float = 0.5
    field: FtsField = FtsField.TEXT
    with_context_only: bool = False

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """Outside ``vector`` mode."""
        return _hybrid(mode)

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list, searched with ``query.terms``."""
        source, depth, terms = given.source, given.depth, given.query.terms
        hits = await source.text_search(terms, self.field, 2 * depth, with_context_only=self.with_context_only)
        cut = statements_cut(source, hits.ids, hits.scores, depth)
        return [_listed(self.name, cut, given.weight * given.config.fusion.original_query_weight)]


@dataclass(frozen=True)
class ContextChannel(Bm25Channel):
    """BM25 over the memory with its context (neighbouring turns), among memories that have one.

    The text channel already votes for memories without a context, so they are left out here.
    """

    name: str = "context"
    default_weight: float = 2.0
    field: FtsField = FtsField.CONTEXT
    with_context_only: bool = True


@dataclass(frozen=True, slots=True)
class EntityChannel:
    """Memories sharing the query's entities (case-insensitive), ties newest first."""

    name: str = "entity"
    needs: frozenset[Need] = frozenset({Need.ENTITIES})
    default_weight: float = 1.0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """When the query names an entity (``auto``), always (``hybrid``)."""
        return _hybrid(mode) and (bool(features.entities) or mode is not RoutingMode.AUTO)

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list, by position."""
        hits = await given.source.entity_search(given.query.entities, given.depth)
        return [RankedList(self.name, hits.ids, given.weight)]


@dataclass(frozen=True, slots=True)
class RecencyChannel:
    """Newest first."""

    name: str = "recency"
    needs: frozenset[Need] = _NONE
    default_weight: float = 0.5

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """When the query asks for the latest (``auto``), always (``hybrid``)."""
        return _hybrid(mode) and (features.recency or mode is not RoutingMode.AUTO)

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list, by position."""
        hits = await given.source.recency_search(given.depth)
        return [RankedList(self.name, hits.ids, given.weight)]


@dataclass(frozen=True, slots=True)
class DatedChannel:
    """Vector search among the memories created within the days, months or years the query names."""

    name: str = "dated"
    needs: frozenset[Need] = frozenset({Need.VECTOR})
    default_weight: float = 2.0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """When the query names a date (outside ``vector`` mode)."""
        return _hybrid(mode) and bool(features.dates)

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list, ranked among statements."""
        query, source = given.query, given.source
        if query.vector is None or not query.dates:
            return []
        ids = (await source.vector_search(query.vector, 2 * given.depth, within=query.dates)).ids
        cut = statements_cut(source, ids, None, given.depth)
        return [_listed(self.name, cut, given.weight * given.config.fusion.original_query_weight)]


@dataclass(frozen=True, slots=True)
class LinksChannel:
    """Activation spreading from the top fused hits along ``links`` (:func:`~memory_retrievers.recall.links.spread`)."""

    name: str = "links"
    needs: frozenset[Need] = frozenset({Need.FUSED})
    default_weight: float = 0.5

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """When ``link_hops`` is above 0 (outside ``vector`` mode)."""
        return _hybrid(mode) and config.channels.link_hops > 0

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list when any link leads somewhere."""
        found = await spread(given.fused, given.source, given.config, weight=given.weight, label=self.name)
        return [] if found is None else [found]


def _listed(label: str, found: tuple[tuple[str, ...], tuple[int, ...] | None], weight: float) -> RankedList:
    """A cut search as a ranked list (the host sets its channel)."""
    ids, ranks = found
    return RankedList(label, ids, weight, ranks=ranks)


@functools.cache
def default_registry() -> ChannelRegistry:
    """The registry of the built-in channels, in routing order (immutable, so shared)."""
    return ChannelRegistry(
        [
            VectorChannel(),
            Bm25Channel(),
            ContextChannel(),
            EntityChannel(),
            RecencyChannel(),
            DatedChannel(),
            LinksChannel(),
        ]
    )
