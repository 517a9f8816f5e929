"""The sections of :class:`~memory_retrievers.RecallConfig`, one per recall stage (frozen, validated).

Each section holds the constants of one stage, each with its published or measured default:

========================  ===========================  =========================================
``RecallConfig.<field>``  class                        read by
========================  ===========================  =========================================
``channels``              :class:`ChannelsConfig`      the channels (depth, links, provenance)
``fusion``                :class:`FusionConfig`        rank fusion (``recall/blend.py``)
``query``                 :class:`QueryConfig`         query intake and the speaker cue
``query_expansion``       :class:`QueryExpansionConfig` expansion and HyDE (``recall/expansion.py``)
``scoring``               :class:`~memory_retrievers.recall.scoring.ScoringConfig`  score multipliers
``relevance``             :class:`RelevanceConfig`     floors, abstention, calibration
``selection``             :class:`SelectionConfig`     MMR, sections, the block
``rerank``                :class:`RerankConfig`        the optional reranker
========================  ===========================  =========================================

A new option is a new field in its section (here, or ``ScoringConfig`` in ``scoring.py``) read by
its stage: ``RecallConfig`` lists sections, not fields, so it does not change. Unknown keys raise
:class:`~memory_retrievers.ConfigError` naming the section and listing its fields.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from memory_retrievers.config import CheckedModel
from memory_retrievers.recall.calibration import Calibration
from memory_retrievers.recall.sections import DEFAULT_SECTION_SHARES, ContextSection

__all__ = [
    "ChannelsConfig",
    "FusionConfig",
    "QueryConfig",
    "QueryExpansionConfig",
    "RelevanceConfig",
    "RerankConfig",
    "SelectionConfig",
    "SupersededPolicy",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SupersededPolicy(str, enum.Enum):
    """What recall does with memories replaced by newer ones."""

    DROP = "drop"
    FLAG = "flag"
    """Keep them (scored normally) with ``explanation.superseded`` set."""


class ChannelsConfig(CheckedModel):
    """How deep each channel searches, how links spread, and how facts vote for their sources."""

    model_config = _FROZEN

    candidate_depth: int = Field(default=30, ge=1, le=1000)
    """Hits taken from each channel. Deeper lists let middling items found by several weak
    channels outrank a strong channel's top hits; 30 measured best on LoCoMo among 10/20/30/50."""
    link_hops: int = Field(default=1, ge=0, le=2)
    link_decay: float = Field(default=0.5, gt=0, le=1)
    link_seeds: int = Field(default=5, ge=1, le=50)
    fact_source_weight: float = Field(default=0.5, ge=0)
    """Provenance folding: a fact extracted from chat turns (``links`` from a non-message memory to
    ``message`` memories) votes for its source turns in every channel at this share of the
    channel's weight, and is folded into a source that is a candidate (named in
    ``explanation.folded``) instead of taking a place of its own. 0 turns it off: facts and
    turns then compete as separate memories. See :mod:`memory_retrievers.recall.provenance`."""


class FusionConfig(CheckedModel):
    """Weighted reciprocal rank fusion of the channels' lists (Cormack et al. 2009, k = 60)."""

    model_config = _FROZEN

    rrf_k: float = Field(default=60.0, gt=0)
    rank1_bonus: float = Field(default=0.05, ge=0)
    top3_bonus: float = Field(default=0.02, ge=0)
    original_query_weight: float = Field(default=2.0, gt=0)
    """Lists from the original query weigh this much relative to expansion lists (weight 1)."""
    semantic_blend: float = Field(default=0.0, ge=0, le=1)
    """Blend the fused score with the normalised cosine similarity: ``(1-b)*fused + b*cosine``."""


class QueryConfig(CheckedModel):
    """What recall accepts as a query, what it searches with, and how it embeds a named speaker."""

    model_config = _FROZEN

    max_query_chars: int = Field(default=200_000, ge=1, le=10_000_000)
    """Longest query recall accepts, in characters (a longer one raises ``InvalidInputError``
    naming this setting). Adapters cut a chat message to it instead of failing."""
    searched_query_chars: int = Field(default=1_000, ge=100, le=100_000)
    """A longer query (a pasted log, a long message) is searched by its first 30% and last 70% of
    this many characters, cut at word boundaries, and the plan says so: the default model reads
    only its first 256 word pieces (about 1,000 characters of English), and BM25 over hundreds of
    words is slow and matches everything."""
    speaker_free_vector: bool = True
    """When the query names a speaker, it is embedded without the name: a name pulls in every turn
    that merely mentions it (vector recall@10 on LoCoMo: 0.481 with the name, 0.587 without). That
    vector then also gives ``ScoredMemory.relevance``."""
    asked_vector_share: float = Field(default=0.0, ge=0, le=1)
    """With ``speaker_free_vector``, also embed the query as asked and search with it at this share
    of the vector weight (0: not embedded). Measured on LoCoMo at 0.5: +0.000 recall@10 for +2.4 ms
    (both texts in one forward pass), so off by default."""


class QueryExpansionConfig(CheckedModel):
    """Query expansion (LLM rewrites or pseudo-relevance feedback) and HyDE (LLM or Rocchio)."""

    model_config = _FROZEN

    expansion: bool = True
    """Query expansion: LLM rewrites when an LLM is given. Without one, pseudo-relevance feedback
    queries run in ``hybrid`` mode only (in ``auto`` they gained 0.000 recall@10 on LoCoMo for
    +11 ms)."""
    llm_rewrites: int = Field(default=3, ge=2, le=5)
    feedback_docs: int = Field(default=3, ge=1, le=20)
    """First-pass hits the LLM-free expansion reads its feedback terms from."""
    feedback_terms: int = Field(default=3, ge=1, le=20)
    hyde: bool = True
    """HyDE: an LLM-written hypothetical memory when an LLM is given; a Rocchio vector otherwise."""
    rocchio_alpha: float = Field(default=1.0, ge=0)
    rocchio_beta: float = Field(default=0.5, ge=0)
    llm_timeout_s: float = Field(default=10.0, gt=0)


class RelevanceConfig(CheckedModel):
    """Which candidates are cut, and when recall abstains: floors, calibration, superseded memories."""

    model_config = _FROZEN

    superseded: SupersededPolicy = SupersededPolicy.DROP
    relevance_floor: float = Field(default=0.0, ge=0)
    """Candidates whose final score is below ``floor * best final score`` are cut (0 = keep all)."""
    min_relevance: float = Field(default=0.0, ge=0, le=1)
    """Candidates whose relevance (cosine similarity to the query, see ``ScoredMemory.relevance``)
    is below this are cut, so a question that nothing answers gets nothing rather than the least
    bad memories (0 = keep all). Pinned memories are kept whatever their relevance. Measured on
    LoCoMo in benchmarks/results/relevance.json."""
    abstain_below: float | None = Field(default=None, ge=0, le=1)
    """When no candidate's calibrated score (``ScoredMemory.score``, the probability that the
    memory answers the query) reaches this, recall returns nothing but pinned memories: an
    off-topic question gets an empty block rather than filler. ``None`` (default): the
    calibration's own (``Calibration.abstain``, chosen on LoCoMo for the default model; 0, never,
    for other embedders, whose cosines it cannot read). 0 never abstains."""
    abstain_relevance: float | None = Field(default=None, ge=0, le=1)
    """Recall abstains only when, besides, no candidate's relevance (cosine similarity to the query,
    clipped to [0, 1]) reaches this: a memory that close is kept even when its other signals are
    weak, as for a question worded unlike its answer. ``None`` (default): the calibration's own
    (``Calibration.abstain_relevance``). 1: the calibrated score alone decides."""
    min_score: float | None = Field(default=None, ge=0, le=1)
    """Candidates whose calibrated score is below this are cut (cut reason ``below_score``).
    ``None`` (default): the calibration's own floor (``Calibration.floor``). 0 keeps all. Pinned
    memories are kept whatever their score."""
    calibration: Calibration | None = None
    """The model that turns a candidate's signals into its calibrated score (see
    :mod:`memory_retrievers.recall.calibration`). ``None``: the one shipped for the store's embedder, or
    the embedder-agnostic one."""


class SelectionConfig(CheckedModel):
    """How the candidates that survive are chosen and shown: MMR, sections, copies, excerpts."""

    model_config = _FROZEN

    mmr: bool = True
    mmr_lambda: float = Field(default=0.6, ge=0, le=1)
    mmr_similarity_floor: float = Field(default=0.9, ge=0, le=1)
    """Cosine similarity below which MMR applies no penalty (0 = classic MMR). Classic MMR at
    lambda 0.6 also pushes down distinct turns of one conversation: -0.020 recall@10 on LoCoMo;
    with the 0.9 floor only near-duplicates pay (0.000)."""
    session_diverse: bool = False
    """Two-phase, session-diverse selection for aggregation queries (auto mode detects them).
    Off by default: on LoCoMo it cost 0.021 recall@5 and gained nothing at @10."""
    pinned_first: bool = True
    section_shares: Mapping[ContextSection, float] = Field(default_factory=lambda: dict(DEFAULT_SECTION_SHARES))
    """Share of the token budget reserved for each section of the context block (``pinned``,
    ``knowledge``, ``conversation``; see :mod:`memory_retrievers.recall.sections`), each in [0, 1], summing
    to at most 1. A reservation holds only while its section has candidates left, and whatever is
    not reserved goes to the best candidates of any section. ``{}`` reserves nothing: pure score
    order, pinned first."""
    collapse_copies: bool = True
    """Lines that say the same thing (:func:`memory_retrievers.text.lines.line_key`: case, punctuation
    and stop words aside, same speaker, both questions or both statements) take one place in the
    block, the best of them, noted with how often and since when it was said. The others are cut
    (reason ``copy``); the stored memories are untouched."""
    excerpt_chars: int = Field(default=1_200, ge=100, le=1_000_000)
    """A memory longer than this (an assistant's long reply, a pasted document) is shown in the
    block by its passage of this many characters holding the most of the query's keywords, marked
    with ``…`` (``ScoredMemory.excerpt``), so it costs the budget what answers; the memory itself is
    untouched. 1,200 characters is about 300 tokens."""
    newest_first: bool = True
    """Lines about one subject are shown newest first: a newer line moves up to just above the
    older ones it follows ("the wedding got moved to June 21" above "the wedding is June 14"), the
    scores handed out again in that order, and an older line the newer reads as updating is noted
    ``(updated by the [date] line above)``. See :mod:`memory_retrievers.recall.updates`."""
    subject_cosine: float = Field(default=0.45, ge=0, le=1)
    """Cosine of two lines' vectors from which, sharing a content word, they are about one subject
    (for ``newest_first``)."""
    token_encoding: str = "cl100k_base"
    """The tiktoken encoding that counts the block's tokens against ``RecallConfig.token_budget``."""

    @field_validator("section_shares", mode="before")
    @classmethod
    def _section_keys(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        valid = ", ".join(repr(s.value) for s in ContextSection)
        out: dict[ContextSection, float] = {}
        for key, share in value.items():
            try:
                section = ContextSection(key)
            except ValueError:
                raise ValueError(f"section_shares key {key!r} is not a section; use one of {valid}") from None
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
                raise ValueError(f"section_shares[{section.value!r}] must be a number in [0, 1], got {share!r}")
            out[section] = float(share)
        if sum(out.values()) > 1 + 1e-9:
            raise ValueError(f"section_shares must sum to at most 1, got {sum(out.values()):.3f}; lower a share")
        return out

    @field_validator("token_encoding")
    @classmethod
    def _encoding(cls, value: str) -> str:
        if value not in ("cl100k_base", "o200k_base"):
            raise ValueError("token_encoding must be 'cl100k_base' or 'o200k_base'")
        return value


class RerankConfig(CheckedModel):
    """How the optional reranker's scores are blended in, and how long it may take."""

    model_config = _FROZEN

    rerank_depth: int = Field(default=30, ge=1, le=500)
    rerank_weight: float = Field(default=0.5, ge=0, le=1)
    """Blend: ``(1-w) * fused + w * reranker``, both min-max normalised over the candidates."""
    rerank_timeout_s: float = Field(default=10.0, gt=0)
    """A reranker slower than this is skipped for the recall (with a warning), like a slow LLM."""
