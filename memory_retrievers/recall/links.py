"""Link spreading: activation flows from the top hits along ``links``, decaying per hop."""

from __future__ import annotations

from collections.abc import Sequence

from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.fusion import FusedHit, RankedList
from memory_retrievers.recall.source import RecallSource

__all__ = ["spread"]


async def spread(
    fused: Sequence[FusedHit],
    source: RecallSource,
    cfg: RecallConfig,
    *,
    weight: float | None = None,
    label: str = "links",
) -> RankedList | None:
    """The memories linked from the top hits, ranked by activation (``None`` when none).

    Activation starts at the top ``link_seeds`` hits (1/rank), flows along ``links`` for
    ``link_hops`` hops, multiplied by ``link_decay`` per hop. Targets are fetched through the
    source (one query per hop at most) and filtered like every channel. The list weighs
    ``weight`` (default ``cfg.weights.links``).
    """
    activation: dict[str, float] = {}
    frontier = {h.id: 1.0 / rank for rank, h in enumerate(fused[: cfg.channels.link_seeds], 1)}
    for _hop in range(cfg.channels.link_hops):
        nxt: dict[str, float] = {}
        for id_, act in frontier.items():
            for target in source.memory(id_).links:
                if target not in frontier:
                    nxt[target] = nxt.get(target, 0.0) + act * cfg.channels.link_decay
        if not nxt:
            break
        passing = set(await source.fetch(list(nxt)))
        nxt = {i: a for i, a in nxt.items() if i in passing}
        for i, a in nxt.items():
            activation[i] = activation.get(i, 0.0) + a
        frontier = nxt
    if not activation:
        return None
    ranked = sorted(activation, key=lambda i: (-activation[i], i))
    return RankedList(label, tuple(ranked), cfg.weights.links if weight is None else weight, "links")
