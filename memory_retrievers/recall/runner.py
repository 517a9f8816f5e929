"""How one recall runs its channels without trusting them.

:class:`ChannelRunner` starts the routed channels as tasks and collects their lists. Every
channel, built-in or not, is held to the same rules at the boundary:

- a search slower than the timeout is cancelled; one that raises (anything but an error of the
  recall source itself, which fails the recall as any store error does) is dropped; both warn
  with :class:`~memory_retrievers.ChannelFailedWarning` naming the channel, and the recall goes
  on without it;
- its output must be a list of :class:`~memory_retrievers.RankedList` with a non-empty label, a
  finite weight >= 0 and ranks (when given) of the ids' length; otherwise it is dropped (warned);
- ids that are not strings or repeat an earlier id of the list are dropped, and a list counts
  with its first :data:`MAX_LIST_IDS` ids only;
- ids the recall's source has not returned (by a search or a ``fetch``) are fetched once, which
  applies the namespace and the filter; those that do not pass are dropped, so a channel cannot
  bring in another namespace's memories or filtered-out ones;
- each list's ``channel`` is set to the channel's name.

A plug-in channel's search (any channel but the built-ins) runs off the store's loop, on a pool
thread when plain and on the plug-in loop when ``async def`` (:mod:`~memory_retrievers.recall.sandbox`),
so one that blocks is cut at the timeout and stalls neither the built-in channels nor other
namespaces' writes; one that raises ``CancelledError`` of its own is dropped like any failure.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memory_retrievers.models import FtsField, Memory
from memory_retrievers.recall.channel import Channel, ChannelInput, ChannelQuery, Need, warn_failed
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.fusion import FusedHit, RankedList
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.recall.sandbox import ChannelCancelledItself, plugin_search
from memory_retrievers.recall.source import RecallSource, SourceHits
from memory_retrievers.recall.tasks import RecallTasks
from memory_retrievers.text.dates import DateSpan

__all__ = ["MAX_LIST_IDS", "ChannelRunner", "CheckedSource"]

#: Ids of one channel list that count (the built-in lists hold at most 2 x ``candidate_depth``);
#: the rest are dropped before the unknown ones are fetched, so a runaway list costs one bounded query.
MAX_LIST_IDS = 1_000


class CheckedSource:
    """A recall source that remembers the ids it returned and the errors it raised.

    The runner checks a channel's ids against what the source returned, and tells a source
    failure (which fails the recall) from a channel's own (which drops the channel).
    """

    def __init__(self, source: RecallSource) -> None:
        self._source = source
        self.known: set[str] = set()
        self._failures: list[BaseException] = []

    @property
    def namespace(self) -> str:
        """The namespace read."""
        return self._source.namespace

    @property
    def description(self) -> str:
        """The wrapped source's."""
        return self._source.description

    def raised(self, exc: BaseException) -> bool:
        """Whether ``exc`` came from the source."""
        return any(exc is failure for failure in self._failures)

    async def _seen(self, search: Awaitable[SourceHits]) -> SourceHits:
        try:
            hits = await search
        except Exception as exc:
            self._failures.append(exc)
            raise
        self.known.update(hits.ids)
        return hits

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """As the source's."""
        return await self._seen(self._source.text_search(text, field, k, with_context_only=with_context_only))

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """As the source's (``within`` passed only when given, as a source may predate it)."""
        search = (
            self._source.vector_search(vector, k, within=within) if within else self._source.vector_search(vector, k)
        )
        return await self._seen(search)

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """As the source's."""
        return await self._seen(self._source.entity_search(entities, k))

    async def recency_search(self, k: int) -> SourceHits:
        """As the source's."""
        return await self._seen(self._source.recency_search(k))

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """As the source's."""
        try:
            found = await self._source.fetch(ids)
        except Exception as exc:
            self._failures.append(exc)
            raise
        self.known.update(found)
        return found

    async def has_entities(self) -> bool:
        """As the source's."""
        return await self._source.has_entities()

    async def speakers(self) -> frozenset[str]:
        """As the source's."""
        return await self._source.speakers()

    def memory(self, id_: str) -> Memory:
        """As the source's."""
        return self._source.memory(id_)

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """As the source's."""
        return self._source.memories_of(ids)

    def vector(self, id_: str) -> np.ndarray:
        """As the source's."""
        return self._source.vector(id_)


class ChannelRunner:
    """Starts one recall's channels as tasks and collects their checked lists, in start order.

    Args:
        registry: Where the channels are looked up.
        source: The recall's source, wrapped.
        config: This call's config.
        tasks: The recall's task group.
        timeout_s: The longest a channel's search may take.
    """

    def __init__(
        self,
        registry: ChannelRegistry,
        source: CheckedSource,
        config: RecallConfig,
        tasks: RecallTasks,
        timeout_s: float,
    ) -> None:
        self._registry = registry
        self._source = source
        self._config = config
        self._tasks = tasks
        self._timeout_s = timeout_s
        self._jobs: list[asyncio.Task[list[RankedList]]] = []

    def start(self, names: Iterable[str], query: ChannelQuery, fused: Sequence[FusedHit] = ()) -> None:
        """Start the named channels' searches."""
        cfg = self._config
        for name in names:
            given = ChannelInput(
                self._source,
                query,
                cfg,
                self._registry.weight(name, cfg.weights),
                cfg.channels.candidate_depth,
                tuple(fused),
            )
            self._jobs.append(self._tasks.start(self._guarded(self._registry[name], given)))

    async def collect(self) -> list[RankedList]:
        """The lists of every channel started since the last collect."""
        jobs, self._jobs = self._jobs, []
        return [lst for job in jobs for lst in await job]

    async def _guarded(self, channel: Channel, given: ChannelInput) -> list[RankedList]:
        name = channel.name
        if Need.ENTITIES in channel.needs and not (given.query.entities and await self._source.has_entities()):
            return []
        try:
            if self._registry.is_plugin(name):
                raw = await plugin_search(channel, given, self._timeout_s)
            else:  # built-ins stay on the store's loop: a hop per search would only add latency
                raw = await asyncio.wait_for(_searched(channel, given), timeout=self._timeout_s)
        except asyncio.TimeoutError:
            warn_failed(name, f"timed out after {self._timeout_s} s")
            return []
        except ChannelCancelledItself:
            warn_failed(name, "was cancelled (its search raised CancelledError)")
            return []
        except Exception as exc:
            if self._source.raised(exc):
                raise  # the store failed: the recall fails, as for any store error
            warn_failed(name, f"failed ({exc!r})")
            return []
        try:
            lists = [_checked_list(lst, name) for lst in _as_lists(raw)]
        except ValueError as exc:
            warn_failed(name, f"returned garbage ({exc})")
            return []
        return [await self._known(lst) for lst in lists]

    async def _known(self, lst: RankedList) -> RankedList:
        """The list without ids the source does not hold under the recall's namespace and filter."""
        known = self._source.known
        unknown = [i for i in lst.ids if i not in known]
        if not unknown:
            return lst
        passing = set(await self._source.fetch(unknown)) | known
        keep = [n for n, i in enumerate(lst.ids) if i in passing]
        ranks = None if lst.ranks is None else tuple(lst.ranks[n] for n in keep)
        return replace(lst, ids=tuple(lst.ids[n] for n in keep), ranks=ranks)


async def _searched(channel: Channel, given: ChannelInput) -> Any:
    """The channel's answer, whether its ``search`` is async or plain."""
    found: Any = channel.search(given)
    if inspect.isawaitable(found):
        found = await found
    return found


def _type_name(obj: object) -> str:
    name: str = getattr(type(obj), "__name__", "object")
    return name


def _as_lists(raw: Any) -> list[Any]:
    if isinstance(raw, (str, bytes, RankedList)) or not isinstance(raw, (list, tuple)):
        raise ValueError(f"search must return a list of RankedList, got {_type_name(raw)}")
    return list(raw)


def _checked_list(lst: Any, name: str) -> RankedList:
    """One list, checked and cleaned: string ids, each once, the channel's name set."""
    if not isinstance(lst, RankedList):
        raise ValueError(f"expected a RankedList, got {_type_name(lst)}")
    if not isinstance(lst.label, str) or not lst.label:
        raise ValueError(f"a list's label must be a non-empty str, got {lst.label!r}")
    weight = lst.weight
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
        raise ValueError(f"list {lst.label!r} has weight {weight!r}; it must be a finite number >= 0")
    if isinstance(lst.ids, (str, bytes)) or not isinstance(lst.ids, (list, tuple)):
        raise ValueError(f"list {lst.label!r}: ids must be a tuple of str, got {_type_name(lst.ids)}")
    ranks = lst.ranks
    if ranks is not None and (
        not isinstance(ranks, (list, tuple))
        or len(ranks) != len(lst.ids)
        or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r in ranks)
    ):
        raise ValueError(f"list {lst.label!r}: ranks must be ints >= 1, one per id")
    seen: set[str] = set()
    keep = []
    for n, id_ in enumerate(lst.ids):
        if isinstance(id_, str) and id_ not in seen:
            seen.add(id_)
            keep.append(n)
            if len(keep) == MAX_LIST_IDS:
                break
    return RankedList(
        lst.label,
        tuple(lst.ids[n] for n in keep),
        float(weight),
        name,
        None if ranks is None else tuple(ranks[n] for n in keep),
    )
