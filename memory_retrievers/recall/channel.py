"""The :class:`Channel` protocol: a recall channel as a plug-in.

A channel turns one recall's query into ranked lists of memory ids
(:class:`~memory_retrievers.RankedList`), read through the recall's
:class:`~memory_retrievers.recall.RecallSource`. The built-in channels (vector, BM25, context,
entity, recency, dated, links; :mod:`memory_retrievers.recall.builtin`) implement it exactly as a
user's channel would, and :class:`~memory_retrievers.recall.registry.ChannelRegistry` holds them.

A channel declares what it needs (:class:`Need`) and the host provides it:

- no need: the channel runs in the **first pass**, started as soon as the namespace's source is
  ready, concurrently with the query's embedding and the other channels;
- :attr:`Need.VECTOR`: still the first pass, started once the query is embedded
  (``ChannelQuery.vector`` is then set);
- :attr:`Need.ENTITIES`: searched only when the query names entities and the namespace has some
  (otherwise routed but silent: no list);
- :attr:`Need.FUSED`: the **after-fusion pass**. It runs once the first pass (and the LLM-free
  feedback lists) are fused, when that found anything, with those hits in ``ChannelInput.fused``;
  its lists join the fusion. After-fusion channels all see the same fused hits (not each other's).

Whether a channel runs at all is the channel's own answer to :meth:`Channel.runs`, given the
query's features, the config and the routing mode; a channel whose weight is 0 never runs.
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from memory_retrievers.recall.config import RecallConfig, RoutingMode
from memory_retrievers.recall.fusion import FusedHit, RankedList
from memory_retrievers.recall.source import RecallSource
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.text.query import QueryFeatures

__all__ = ["Channel", "ChannelFailedWarning", "ChannelInput", "ChannelQuery", "Need", "warn_failed"]


class ChannelFailedWarning(RuntimeWarning):
    """A channel failed, timed out or returned garbage; recall continued without its lists."""


def warn_failed(name: str, reason: str) -> None:
    """Warn that channel ``name`` is left out of this recall, and why."""
    warnings.warn(
        f"memory-retrievers: channel {name!r} {reason}; recall continues without it", ChannelFailedWarning, stacklevel=3
    )


class Need(str, enum.Enum):
    """What a channel needs from the host beyond the query's text and the source."""

    VECTOR = "vector"
    """The query's embedding (``ChannelQuery.vector``): the channel starts once it is computed."""
    ENTITIES = "entities"
    """Entities in the query and in the namespace: the channel is searched only when both exist."""
    FUSED = "fused"
    """The first pass's fused hits (``ChannelInput.fused``): the channel runs after fusion."""


@dataclass(frozen=True, slots=True)
class ChannelQuery:
    """The query as the channels see it.

    Attributes:
        text: The searched query (a long one is cut to its opening and end).
        terms: Its keywords joined by spaces (the query itself when it has none): the BM25 query.
        features: What :func:`memory_retrievers.text.query.analyze` read in it (keywords, entities,
            dates, intent, cues).
        vector: Its unit embedding, without the speakers' names when it names one (only for
            channels that need :attr:`Need.VECTOR`; ``None`` otherwise).
        asked_vector: The query as asked, embedded as well when it names a speaker and
            ``RecallConfig.query.asked_vector_share`` is above 0 (else ``None``).
    """

    text: str
    terms: str
    features: QueryFeatures
    vector: np.ndarray | None = None
    asked_vector: np.ndarray | None = None

    @property
    def keywords(self) -> tuple[str, ...]:
        """The query's keywords."""
        return tuple(self.features.keywords)

    @property
    def entities(self) -> tuple[str, ...]:
        """The entities the query names."""
        return tuple(self.features.entities)

    @property
    def dates(self) -> tuple[DateSpan, ...]:
        """The days, months or years the query names."""
        return tuple(self.features.dates)


@dataclass(frozen=True, slots=True)
class ChannelInput:
    """What the host gives a channel's :meth:`~Channel.search`.

    Attributes:
        source: The namespace under the recall's filter; every id a channel returns must come
            from its searches or its ``fetch`` (others are dropped).
        query: The query.
        config: This call's config.
        weight: The channel's weight (``config.weights``, else its ``default_weight``).
        depth: Hits a list should hold (``RecallConfig.channels.candidate_depth``).
        fused: The fused hits so far, best first (after-fusion channels; empty otherwise).
    """

    source: RecallSource
    query: ChannelQuery
    config: RecallConfig
    weight: float
    depth: int
    fused: tuple[FusedHit, ...] = ()


@runtime_checkable
class Channel(Protocol):
    """A recall channel: a name, when it runs, and the ranked lists it finds.

    Attributes:
        name: Its name in weights, ``RecallResult.plan["channels"]`` and explanations (letters,
            digits, ``_`` and ``-``). A channel registered under a built-in's name replaces it.
        needs: What the host must provide (:class:`Need`); ``Need.FUSED`` makes it run after fusion.
        default_weight: Its weight when ``RecallConfig.weights`` names none for it.

    Example:
        >>> class Pinned:                                                    # doctest: +SKIP
        ...     name, needs, default_weight = "pinned", frozenset(), 1.0
        ...     def runs(self, features, config, mode):
        ...         return mode is not RoutingMode.VECTOR
        ...     async def search(self, given):
        ...         hits = await given.source.text_search(given.query.terms, FtsField.TEXT, given.depth)
        ...         return [RankedList("pinned", hits.ids, given.weight)]
    """

    @property
    def name(self) -> str:
        """The channel's name."""
        ...

    @property
    def needs(self) -> frozenset[Need]:
        """What the host must provide."""
        ...

    @property
    def default_weight(self) -> float:
        """The weight without one in the config."""
        ...

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """Whether this recall runs the channel (asked only when its weight is above 0)."""
        ...

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """The channel's ranked lists (none is fine); the host sets each list's ``channel``."""
        ...
