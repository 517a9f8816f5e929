"""Provenance folding: an extracted fact votes for the chat turns it came from, and joins them.

A fact formed from a conversation links to its source turns (``links`` from a non-message memory
to ``message`` memories). Ranked as a rival of those turns, it takes a result slot that its own
source would fill, and neither gets the credit of being found twice. Folding instead gives each
channel a twin list in which every fact stands, at its rank among that channel's facts, for its
sources (weight ``channel weight * fact_source_weight``); the fact then leaves the candidates
when one of its sources is a candidate, and is named on it (``folded``). A fact whose sources are
gone, filtered out, or not found stays a candidate of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_retrievers.models import MemoryKind
from memory_retrievers.recall.fusion import FusedHit, RankedList
from memory_retrievers.recall.source import RecallSource

__all__ = ["fold_into_sources", "source_lists"]


async def source_lists(
    lists: Sequence[RankedList], fused: Sequence[FusedHit], source: RecallSource, weight: float
) -> tuple[list[RankedList], dict[str, tuple[str, ...]]]:
    """Each channel list's twin over sources, and each candidate fact's live sources.

    Returns ``([], {})`` when no candidate is a fact with message sources (one cheap pass).
    """
    if weight <= 0:
        return [], {}
    linked = {}
    for hit, memory in zip(fused, source.memories_of([h.id for h in fused]), strict=True):
        if memory.kind is not MemoryKind.MESSAGE and memory.links:
            linked[hit.id] = memory.links
    if not linked:
        return [], {}
    targets = list(dict.fromkeys(t for links in linked.values() for t in links))
    live = set(await source.fetch(targets))
    sources = {
        fact: kept
        for fact, links in linked.items()
        if (kept := tuple(t for t in links if t in live and source.memory(t).kind is MemoryKind.MESSAGE))
    }
    if not sources:
        return [], {}
    twins = []
    for lst in lists:
        ids: list[str] = []
        ranks: list[int] = []
        rank = 0
        for id_ in dict.fromkeys(lst.ids):
            if id_ in sources:
                rank += 1
                for target in sources[id_]:
                    ids.append(target)
                    ranks.append(rank)
        if ids and lst.weight > 0:
            twins.append(RankedList(f"{lst.label}>sources", tuple(ids), lst.weight * weight, "sources", tuple(ranks)))
    return twins, sources


def fold_into_sources(
    fused: Sequence[FusedHit], sources: dict[str, tuple[str, ...]]
) -> tuple[list[FusedHit], dict[str, tuple[str, ...]]]:
    """The candidates without the facts one of whose sources is a candidate, and who got which fact."""
    present = {h.id for h in fused}
    folded: dict[str, list[str]] = {}
    kept = []
    for hit in fused:
        targets = [t for t in sources.get(hit.id, ()) if t in present]
        if not targets:
            kept.append(hit)
            continue
        for target in targets:
            folded.setdefault(target, []).append(hit.id)
    return kept, {k: tuple(v) for k, v in folded.items()}
