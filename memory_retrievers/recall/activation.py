"""Spreading activation over links and shared entities (the "Remind" model), as a plug-in channel.

Memory is a network: a memory recalls the memories it links to and those that speak of the same
people, places and things. Activation starts at the top fused hits (1 / rank each), flows for
``hops`` hops along ``links`` (times ``decay``) and to the memories sharing an entity with an
active one (times ``decay * entity_factor``), summing where paths meet; the memories reached,
the seeds excluded, are ranked by activation and the ``keep`` best become one list.

It is written exactly as a user's channel would be, against the public
:class:`~memory_retrievers.recall.channel.Channel` protocol and the recall source's generic
searches, and is enabled without touching the pipeline::

    retriever = MemoryRetriever(
        store, channels=[SpreadingActivation()], config={"weights": {"activation": 0.5}}
    )

Unlike the built-in ``links`` channel (links only, from ``RecallConfig.link_*``), it follows shared
entities too, which reaches a memory that neither links to a top hit nor shares a word with the
query (``"Lisbon"`` named in a top hit and in a hotel booking that the question never mentions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memory_retrievers.errors import ConfigError
from memory_retrievers.recall.channel import ChannelInput, Need
from memory_retrievers.recall.config import RecallConfig, RoutingMode
from memory_retrievers.recall.fusion import RankedList
from memory_retrievers.recall.source import RecallSource
from memory_retrievers.text.query import QueryFeatures

__all__ = ["SpreadingActivation"]


class SpreadingActivation:
    """A channel spreading activation from the top fused hits along links and shared entities.

    Args:
        name: The channel's name (its weight's key in ``RecallConfig.weights``).
        seeds: Top fused hits where activation starts (1 / rank each).
        hops: Steps the activation spreads (1-3).
        decay: Share of a memory's activation each neighbour receives per hop, in (0, 1].
        entity_factor: Share of that for a shared entity rather than a link, in [0, 1] (0: links only).
        fan_out: Memories reached through one memory's entities at most (the most entities shared first).
        keep: Activated memories kept in the list.
        default_weight: The channel's weight when the config gives none.

    Raises:
        ConfigError: A parameter out of its range.
    """

    needs = frozenset({Need.FUSED})

    def __init__(
        self,
        *,
        name: str = "activation",
        seeds: int = 5,
        hops: int = 2,
        decay: float = 0.5,
        entity_factor: float = 0.5,
        fan_out: int = 10,
        keep: int = 30,
        default_weight: float = 0.5,
    ) -> None:
        _check(seeds, "seeds", 1, 50, integer=True)
        _check(hops, "hops", 1, 3, integer=True)
        _check(decay, "decay", 0.0, 1.0, open_low=True)
        _check(entity_factor, "entity_factor", 0.0, 1.0)
        _check(fan_out, "fan_out", 1, 200, integer=True)
        _check(keep, "keep", 1, 1000, integer=True)
        _check(default_weight, "default_weight", 0.0, math.inf)
        self.name = name
        self.seeds, self.hops, self.decay, self.entity_factor = seeds, hops, float(decay), float(entity_factor)
        self.fan_out, self.keep, self.default_weight = fan_out, keep, float(default_weight)

    def __repr__(self) -> str:
        return (
            f"SpreadingActivation(name={self.name!r}, seeds={self.seeds}, hops={self.hops}, decay={self.decay}, "
            f"entity_factor={self.entity_factor}, fan_out={self.fan_out}, keep={self.keep})"
        )

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """Outside ``vector`` mode."""
        return mode is not RoutingMode.VECTOR

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list of the activated memories, most active first (none when nothing is reached)."""
        source = given.source
        frontier = {h.id: 1.0 / rank for rank, h in enumerate(given.fused[: self.seeds], 1)}
        reached = set(frontier)
        activation: dict[str, float] = {}
        for _hop in range(self.hops):
            spread = await self._step(source, frontier, reached)
            if not spread:
                break
            for id_, value in spread.items():
                activation[id_] = activation.get(id_, 0.0) + value
            reached |= set(spread)
            # The next hop starts from the most active newcomers only, so a hop costs at most
            # ``seeds`` entity searches.
            frontier = dict(sorted(spread.items(), key=lambda kv: (-kv[1], kv[0]))[: self.seeds])
        if not activation:
            return []
        ranked = sorted(activation, key=lambda i: (-activation[i], i))[: self.keep]
        return [RankedList(self.name, tuple(ranked), given.weight)]

    async def _step(self, source: RecallSource, frontier: dict[str, float], reached: set[str]) -> dict[str, float]:
        """One hop: the activation each memory not reached yet receives from the frontier."""
        out: dict[str, float] = {}
        linked: set[str] = set()
        for id_, act in frontier.items():
            memory = source.memory(id_)
            for target in memory.links:
                if target not in reached:
                    out[target] = out.get(target, 0.0) + act * self.decay
                    linked.add(target)
            if self.entity_factor > 0 and memory.entities:
                hits = await source.entity_search(list(memory.entities), self.fan_out + 1)
                for target in (t for t in hits.ids if t != id_ and t not in reached):
                    out[target] = out.get(target, 0.0) + act * self.decay * self.entity_factor
        if linked:
            # Link targets may be deleted, filtered out or (in a foreign store) of another namespace:
            # only those the source resolves under the recall's namespace and filter count.
            passing = set(await source.fetch(sorted(linked)))
            out = {i: a for i, a in out.items() if i not in linked or i in passing}
        return out


def _check(value: object, name: str, low: float, high: float, *, integer: bool = False, open_low: bool = False) -> None:
    """Raise ``ConfigError`` unless ``value`` is a finite number (an int if ``integer``) within the bounds."""
    ok = isinstance(value, int if integer else (int, float)) and not isinstance(value, bool)
    if ok:
        number = float(value)  # type: ignore[arg-type]
        ok = math.isfinite(number) and (number > low if open_low else number >= low) and number <= high
    if not ok:
        kind = "an int" if integer else "a finite number"
        bound = f"({low}, {high}]" if open_low else f"[{low}, {high}]"
        raise ConfigError(f"SpreadingActivation {name} must be {kind} in {bound}, got {value!r}")
