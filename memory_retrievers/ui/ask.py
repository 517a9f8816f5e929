"""The inspector's "ask as the agent would" page, as data: the block an agent receives, and why.

:func:`ask_view` runs the recall of a :class:`~memory_retrievers.MemoryRetriever` (its
:meth:`~memory_retrievers.RecallResult.to_context` is the block), with ``explain=True`` and
without recording an access: looking at a recall in the inspector is not the agent reading its
memories, so it must not move their decay.

What each chat adapter hands its model is built by the functions the adapters build it with
(:mod:`memory_retrievers.integration.window`), with their defaults: the question is the latest
user message of the model's window, so a stored copy of it is left out, as the adapters leave
out whatever the window shows. The page sees the question only, not the rest of a running
conversation: :data:`WINDOW_NOTE` says so on the page.

A second, wider recall of the same query at the same instant (no ``k`` cap, no budget, no
floors) gives the candidates that lost the same explanation as the winners; fusion, blending and
the multipliers do not depend on ``k``, the budget or the floors, so their numbers are the ones
the real recall computed. This module imports nothing of the web.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.integration.window import MIDDLEWARE_HEADER, ModelWindow, arecall_window, headed_block
from memory_retrievers.recall.fusion import Contribution
from memory_retrievers.recall.results import RecallResult, ScoredMemory
from memory_retrievers.recall.retriever import MemoryRetriever
from memory_retrievers.recall.sections import SECTION_TITLES, ContextSection, section_of
from memory_retrievers.recall.selection import CutReason
from memory_retrievers.store.memory_store import MemoryStore
from memory_retrievers.ui.ask_form import CONFIG_CHOICES, AskForm

__all__ = [
    "ADAPTERS",
    "CONFIG_CHOICES",
    "CUT_REASONS",
    "WINDOW_NOTE",
    "AdapterBlock",
    "AskForm",
    "AskView",
    "CompareDiff",
    "CompareView",
    "CutView",
    "DiffRow",
    "ExplainedMemory",
    "SectionView",
    "ask_view",
    "compare_view",
    "diff_of",
]

ADAPTERS: tuple[tuple[str, str | None], ...] = (
    ("LlamaIndex RecallMemoryBlock (the block's text in Memory's system message)", None),
    ("LangChain MemoryMiddleware (added to the system message)", MIDDLEWARE_HEADER),
)
"""Each chat adapter the page models, and the header line it puts in place of the block's own."""

WINDOW_NOTE = (
    "Modelled as each adapter built with its defaults, this config and this budget, at the first "
    "message of a conversation: the question is in the prompt, so a stored copy of it is left out. "
    "Later in a conversation, the adapters also leave out memories that repeat an earlier message "
    "of the model's window; this page does not see that window."
)
"""What the adapters' panels model, and the one thing they cannot."""

LOSERS = 5
"""How many of the best candidates that were not selected the page explains."""


CUT_REASONS: Mapping[CutReason, str] = {
    CutReason.OVER_BUDGET: "did not fit in what was left of the token budget",
    CutReason.K_CAP: "k memories were already chosen",
    CutReason.BELOW_FLOOR: "its final score was below relevance_floor times the best one's",
    CutReason.BELOW_RELEVANCE: "its relevance (cosine similarity to the query) was below min_relevance",
    CutReason.BELOW_SCORE: "its calibrated score was below min_score (or the calibration's floor)",
    CutReason.ABSTAINED: "no candidate scored high enough: the query is taken as one the memories do not answer",
    CutReason.COPY: "it says the same as a better line in the block (collapse_copies)",
}
"""Each :class:`~memory_retrievers.recall.selection.CutReason` in words."""


@dataclass(frozen=True, slots=True)
class ExplainedMemory:
    """A candidate and every number of its score, ready to display.

    ``fused_score`` is the sum of the ``channels`` values plus ``rank_bonus``; ``final_score`` is
    ``base_score`` times the product of the ``multipliers``; ``score`` is the calibrated score
    selection ranks by. For a candidate that lost, ``rank`` is ``None`` and ``cut_reason`` says why.
    """

    id: str
    text: str
    line: str
    kind: str
    section: str
    pinned: bool
    created_at: str
    access_count: int
    rank: int | None
    score: float
    relevance: float
    channels: tuple[Contribution, ...]
    rank_bonus: float
    fused_score: float
    semantic: float | None
    rerank_score: float | None
    base_score: float
    multipliers: tuple[tuple[str, float], ...]
    final_score: float
    calibration: tuple[tuple[str, float], ...]
    calibrated_by: str
    mmr_penalty: float
    phase: str
    tokens: int
    copies: tuple[str, ...]
    folded: tuple[str, ...]
    superseded: bool
    cut_reason: str | None = None
    cut_reason_text: str | None = None

    @property
    def selected(self) -> bool:
        """True when the memory is in the block."""
        return self.rank is not None


@dataclass(frozen=True, slots=True)
class SectionView:
    """One section of the block (pinned, facts and preferences, conversation) and its memories."""

    key: str
    title: str
    memory_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CutView:
    """A candidate left out of the block, and why in words."""

    id: str
    text: str
    score: float
    reason: str
    reason_text: str


@dataclass(frozen=True, slots=True)
class AdapterBlock:
    """What one adapter hands the agent for this question (``""``: nothing, the prompt is left as it was)."""

    adapter: str
    text: str


@dataclass(frozen=True, slots=True)
class AskView:
    """Everything the result fragment shows for one config.

    Attributes:
        block: ``RecallResult.to_context()``, byte for byte.
        adapters: What each chat adapter hands its model (see :data:`WINDOW_NOTE`).
        plan: The routing decisions (``RecallResult.plan``) as ``(name, text)`` pairs.
        explained: Every selected memory, in block order.
        cut: Every candidate left out, with its reason.
        losers: The best-scored candidates not selected, explained like the winners.
        elapsed_ms: How long the recall took (both passes).
    """

    query: str
    namespace: str
    config_name: str
    budget: int
    block: str
    tokens_used: int
    trimmed_count: int
    adapters: tuple[AdapterBlock, ...]
    sections: tuple[SectionView, ...]
    plan: tuple[tuple[str, str], ...]
    explained: tuple[ExplainedMemory, ...]
    cut: tuple[CutView, ...]
    losers: tuple[ExplainedMemory, ...]
    elapsed_ms: float


@dataclass(frozen=True, slots=True)
class DiffRow:
    """A memory in one or both sides' blocks, with its rank on each (``None``: absent)."""

    id: str
    text: str
    left_rank: int | None
    right_rank: int | None

    @property
    def move(self) -> int:
        """How many places it rose on the right (negative: fell); 0 when on one side only."""
        if self.left_rank is None or self.right_rank is None:
            return 0
        return self.left_rank - self.right_rank


@dataclass(frozen=True, slots=True)
class CompareDiff:
    """Memories only in the left block, only in the right one, and in both (with rank moves)."""

    only_left: tuple[DiffRow, ...]
    only_right: tuple[DiffRow, ...]
    both: tuple[DiffRow, ...]


@dataclass(frozen=True, slots=True)
class CompareView:
    """Two configs' results on the same query, and how their blocks differ."""

    left: AskView
    right: AskView
    diff: CompareDiff


async def ask_view(
    store: MemoryStore, namespace: str, form: AskForm, *, now: datetime | None = None, right: bool = False
) -> AskView:
    """Recall ``form.query`` as an agent's adapter would, explained, without recording an access.

    Args:
        store: The store.
        namespace: Whose memories.
        form: The checked form (its ``query`` must not be empty).
        now: The time of the recall (default: the store's clock).
        right: Use the form's right-hand config (``compare``) instead of the left one.

    Raises:
        InvalidInputError: An empty query, or one recall refuses.
        ConfigError: A config the retriever refuses.
    """
    if not form.query:
        raise InvalidInputError("q: type a question to recall memories for")
    config = form.right if right and form.right is not None else form.left
    name = form.compare if right and form.right is not None else form.config
    started = time.perf_counter()
    at = now or store.clock()
    retriever = MemoryRetriever(store, config=config)
    quiet: dict[str, Any] = {"record_access": False}
    window = ModelWindow.of_question(
        form.query, max_query_chars=config.query.max_query_chars, max_text_chars=store.config.max_text_chars
    )
    # The passes at once: none needs another (at k's maximum the wide one keeps the best 1,000).
    result, wide, adapted = await asyncio.gather(
        retriever.arecall(
            form.query, namespace=namespace, token_budget=form.budget, explain=True, now=at, config=quiet
        ),
        retriever.arecall(
            form.query,
            namespace=namespace,
            k=_WIDE_K,
            token_budget=None,
            now=at,
            config={**quiet, "relevance": _NO_FLOORS, "selection": {"collapse_copies": False, "mmr": False}},
        ),
        arecall_window(retriever, window, namespace=namespace, k=None, token_budget=form.budget, now=at, config=quiet),
    )
    return AskView(
        query=form.query,
        namespace=namespace,
        config_name=name,
        budget=form.budget,
        block=result.to_context(),
        tokens_used=result.tokens_used,
        trimmed_count=result.trimmed_count,
        adapters=tuple(AdapterBlock(name, headed_block(adapted, header)) for name, header in ADAPTERS),
        sections=_sections(result),
        plan=tuple((key, _plan_text(value)) for key, value in result.plan.items()),
        explained=tuple(_explained(m, rank) for rank, m in enumerate(result.memories, 1)),
        cut=tuple(CutView(c.id, c.text, c.score, c.reason.value, CUT_REASONS[c.reason]) for c in result.cut),
        losers=_losers(result, wide),
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


# The wide pass cuts nothing below a floor, so every candidate gets its explanation.
_WIDE_K = 1000  # RecallConfig.k's maximum: more than the channels' candidates
_NO_FLOORS = {"min_score": 0.0, "abstain_below": 0.0, "relevance_floor": 0.0, "min_relevance": 0.0}


async def compare_view(
    store: MemoryStore, namespace: str, form: AskForm, *, now: datetime | None = None
) -> CompareView:
    """Both sides' :class:`AskView` on the same query at the same instant, and their diff.

    Raises:
        InvalidInputError: No ``compare`` choice in the form, or a query recall refuses.
        ConfigError: A config the retriever refuses.
    """
    if form.right is None:
        raise InvalidInputError("compare: choose a config to compare with")
    at = now or store.clock()
    left, right = await asyncio.gather(
        ask_view(store, namespace, form, now=at), ask_view(store, namespace, form, now=at, right=True)
    )
    return CompareView(left=left, right=right, diff=diff_of(left, right))


def diff_of(left: AskView, right: AskView) -> CompareDiff:
    """Which memories each block has that the other lacks, and how the shared ones moved."""
    ranks_left = {m.id: m for m in left.explained}
    ranks_right = {m.id: m for m in right.explained}

    def row(id_: str) -> DiffRow:
        m = ranks_left.get(id_) or ranks_right[id_]
        return DiffRow(id_, m.text, _rank(ranks_left, id_), _rank(ranks_right, id_))

    return CompareDiff(
        only_left=tuple(row(i) for i in ranks_left if i not in ranks_right),
        only_right=tuple(row(i) for i in ranks_right if i not in ranks_left),
        both=tuple(row(i) for i in ranks_left if i in ranks_right),
    )


def _rank(ranks: Mapping[str, ExplainedMemory], id_: str) -> int | None:
    return ranks[id_].rank if id_ in ranks else None


def _sections(result: RecallResult) -> tuple[SectionView, ...]:
    """The block's sections that have memories, in block order."""
    out = []
    for section in ContextSection:
        ids = tuple(m.id for m in result.memories if section_of(m.memory) is section)
        if ids:
            out.append(SectionView(section.value, SECTION_TITLES[section].rstrip(":"), ids))
    return tuple(out)


def _plan_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()) or "-"
    return str(value)


def _losers(result: RecallResult, wide: RecallResult) -> tuple[ExplainedMemory, ...]:
    """The best-scored candidates of the wide pass that the real recall did not select."""
    chosen = {m.id for m in result.memories}
    reasons = {c.id: c.reason for c in result.cut}
    out = []
    for m in wide.memories:
        if m.id in chosen:
            continue
        reason = reasons.get(m.id, CutReason.OVER_BUDGET)  # dropped when the block was counted whole
        out.append(_explained(m, None, reason))
        if len(out) == LOSERS:
            break
    return tuple(out)


def _explained(m: ScoredMemory, rank: int | None, reason: CutReason | None = None) -> ExplainedMemory:
    """A scored memory's explanation as display data."""
    e, mem = m.explanation, m.memory
    return ExplainedMemory(
        id=m.id,
        text=m.text,
        line=m.line,
        kind=mem.kind.value,
        section=section_of(mem).value,
        pinned=mem.pinned,
        created_at=mem.created_at.isoformat(timespec="seconds") if mem.created_at else "undated",
        access_count=mem.access_count,
        rank=rank,
        score=m.score,
        relevance=m.relevance,
        channels=tuple(e.channels),
        rank_bonus=e.rank_bonus,
        fused_score=e.fused_score,
        semantic=e.semantic,
        rerank_score=e.rerank_score,
        base_score=e.base_score,
        multipliers=tuple(e.multipliers.items()),
        final_score=e.final_score,
        calibration=tuple(e.calibration.items()),
        calibrated_by=e.calibrated_by,
        mmr_penalty=e.mmr_penalty if rank is not None else 0.0,
        phase=e.phase if rank is not None else "not selected",
        tokens=e.tokens,
        copies=e.copies,
        folded=e.folded,
        superseded=e.superseded,
        cut_reason=None if reason is None else reason.value,
        cut_reason_text=None if reason is None else CUT_REASONS[reason],
    )
