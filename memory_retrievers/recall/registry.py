"""The channel registry: the channels of a retriever, by name, in routing order.

A :class:`ChannelRegistry` is an immutable, ordered set of channels by name: its order is the
routing order (``RecallResult.plan["channels"]``). :meth:`ChannelRegistry.with_channels` gives a
copy with channels added (a new name, at the end) or replaced (a known name, in its place);
``MemoryRetriever(store, channels=[...])`` does just that to the default registry
(:func:`~memory_retrievers.recall.builtin.default_registry`), for that retriever alone. How one
recall runs them is :mod:`memory_retrievers.recall.runner`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from memory_retrievers.errors import ConfigError
from memory_retrievers.recall.channel import Channel, Need, warn_failed
from memory_retrievers.recall.config import ChannelWeights, RecallConfig, RoutingMode
from memory_retrievers.text.query import QueryFeatures

__all__ = ["STAGE_WEIGHTS", "ChannelRegistry"]

#: Weights read by recall stages rather than channels (HyDE lists), valid in ``ChannelWeights``.
STAGE_WEIGHTS = frozenset({"hyde"})

_NAME = re.compile(r"[A-Za-z0-9_-]+")

#: Where the built-in channels live (not imported: it imports this module).
_BUILTIN_MODULE = __name__.rpartition(".")[0] + ".builtin"


class ChannelRegistry:
    """Channels by name, in routing order; immutable (:meth:`with_channels` returns a copy).

    Args:
        channels: The channels; a later one with an earlier one's name replaces it in its place.

    Raises:
        ConfigError: An object that is not a :class:`~memory_retrievers.recall.channel.Channel`,
            a bad name, bad ``needs`` or a negative default weight.
    """

    def __init__(self, channels: Iterable[Channel] = ()) -> None:
        self._channels: dict[str, Channel] = {}
        for channel in channels:
            self._channels[_checked_channel(channel)] = channel

    def __repr__(self) -> str:
        return f"ChannelRegistry({list(self._channels)})"

    def __iter__(self) -> Iterator[Channel]:
        return iter(self._channels.values())

    def __len__(self) -> int:
        return len(self._channels)

    def __contains__(self, name: object) -> bool:
        return name in self._channels

    def __getitem__(self, name: str) -> Channel:
        return self._channels[name]

    @property
    def names(self) -> tuple[str, ...]:
        """The channels' names, in routing order."""
        return tuple(self._channels)

    def with_channels(self, channels: Iterable[Channel]) -> ChannelRegistry:
        """A copy with ``channels`` added (new names, at the end) or replacing those of their name."""
        return ChannelRegistry([*self._channels.values(), *channels])

    def is_plugin(self, name: str) -> bool:
        """Whether channel ``name`` is a user's (any class but the built-ins', subclasses included)."""
        cls = type(self._channels[name])
        return cls.__module__ != _BUILTIN_MODULE

    def weight(self, name: str, weights: ChannelWeights) -> float:
        """Channel ``name``'s weight: the config's, else the channel's ``default_weight``.

        A plug-in that replaces a built-in (same name) takes the config's weight for that name only
        when the user set it: the field's default is the built-in's weight, not the plug-in's.
        """
        if name in type(weights).model_fields and name not in weights.model_fields_set and self.is_plugin(name):
            return float(self._channels[name].default_weight)
        given = weights.get(name)
        return float(self._channels[name].default_weight) if given is None else given

    def check_weights(self, weights: ChannelWeights) -> None:
        """Every weight must name a registered channel (or a stage's weight, ``hyde``).

        Raises:
            ConfigError: An unknown name, with the known ones listed.
        """
        known = set(self._channels) | STAGE_WEIGHTS
        unknown = sorted(set(weights.as_dict()) - known)
        if unknown:
            raise ConfigError(
                f"RecallConfig.weights names unknown channel(s) {unknown}; registered channels: "
                f"{', '.join(self._channels)} (and the stage weight 'hyde'); register a channel with "
                "MemoryRetriever(..., channels=[...]) or fix the name"
            )

    def routed(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> list[str]:
        """The channels this query runs, in order: a weight above 0 and ``runs()`` says yes."""
        out = []
        for name, channel in self._channels.items():
            if self.weight(name, config.weights) <= 0:
                continue
            try:
                runs = channel.runs(features, config, mode)
            except Exception as exc:  # a plug-in's routing bug skips that channel, not the recall
                warn_failed(name, f"failed to route ({exc!r})")
                continue
            if runs is True:
                out.append(name)
        return out


def _checked_channel(channel: Any) -> str:
    """The channel's name, once it is shown to be a channel."""
    if not isinstance(channel, Channel):
        kind = getattr(type(channel), "__name__", "object")
        raise ConfigError(f"channels must implement Channel (name, needs, default_weight, runs, search), got {kind}")
    name = channel.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"a channel's name must be letters, digits, '_' or '-', got {name!r}")
    if name in STAGE_WEIGHTS:
        raise ConfigError(f"channel name {name!r} is taken by a recall stage's weight; choose another")
    needs = channel.needs
    if not isinstance(needs, frozenset) or not all(isinstance(n, Need) for n in needs):
        raise ConfigError(f"channel {name!r}: needs must be a frozenset of Need, got {needs!r}")
    weight = channel.default_weight
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
        raise ConfigError(f"channel {name!r}: default_weight must be a finite number >= 0, got {weight!r}")
    return name
