"""Frozen, validated configuration of the recall pipeline, with named presets."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from .calibration import Calibration
from .config import CheckedModel, validated
from .models import MemoryKind
from .scoring import DecayKind, ScoringParams
from .sections import DEFAULT_SECTION_SHARES, ContextSection

__all__ = ["ChannelWeights", "Preset", "RecallConfig", "RoutingMode", "SupersededPolicy"]


class RoutingMode(str, enum.Enum):
    """Which stages run."""

    VECTOR = "vector"
    """Vector search only (plus scoring and selection)."""
    HYBRID = "hybrid"
    """Every enabled channel and stage, whatever the query."""
    AUTO = "auto"
    """Hybrid core channels; entity, recency, expansion, HyDE and session diversity only when the
    query's features call for them (named entities, "latest", "how many"...)."""


class SupersededPolicy(str, enum.Enum):
    """What recall does with memories replaced by newer ones."""

    DROP = "drop"
    FLAG = "flag"
    """Keep them (scored normally) with ``explanation.superseded`` set."""


class Preset(str, enum.Enum):
    """Named channel-weight presets for common uses."""

    ASSISTANT = "assistant"
    """Personal assistant over chat history (the defaults)."""
    SUPPORT = "support"
    """Support agent: exact terms (error codes, product names) and recent tickets matter more."""
    KNOWLEDGE_BASE = "knowledge_base"
    """Curated facts: meaning over wording, no recency, no chat context."""


class ChannelWeights(CheckedModel):
    """Weight of each retrieval channel in the rank fusion (0 turns a channel off).

    Defaults measured on the LoCoMo dev split (evidence recall@10, no LLM): BM25 over a turn with
    its neighbouring turns is the strongest single channel (0.691), the bare turn's BM25 (0.603)
    and vector (0.481) add what the window blurs. The weights were chosen by
    leave-one-conversation-out on that split (``benchmarks/loco_weights.py``).

    Plug-in channels (see :class:`~memory_retrievers.recall.channel.Channel`) take their weight by
    name, ``ChannelWeights(activation=0.5)``; read any weight with :meth:`get` or the mapping view
    :meth:`as_dict`. A plug-in channel without a weight here uses its own ``default_weight``. Names
    are checked against the retriever's channels when a retriever is built or a call overrides its
    config (an unknown name raises :class:`~memory_retrievers.ConfigError` listing the known ones).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    vector: float = Field(default=1.0, ge=0)
    bm25: float = Field(default=0.5, ge=0)
    context: float = Field(default=2.0, ge=0)
    """BM25 over the memory together with its ``context`` (neighbouring turns)."""
    dated: float = Field(default=2.0, ge=0)
    """Vector search among the memories created on a day, month or year the query names
    (``"on 9 November, 2022"``); runs only when the query names one."""
    entity: float = Field(default=1.0, ge=0)
    recency: float = Field(default=0.5, ge=0)
    links: float = Field(default=0.5, ge=0)
    hyde: float = Field(default=1.0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _plug_in_weights(cls, data: Any) -> Any:
        # Extra keys are plug-in channels' weights: each a finite number >= 0, stored as a float.
        if not isinstance(data, Mapping):
            return data
        out = dict(data)
        for name, value in data.items():
            if name in cls.model_fields:
                continue
            if not isinstance(name, str) or not name:
                raise ValueError(f"a channel weight's name must be a non-empty str, got {name!r}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"weight {name!r} must be a finite number >= 0, got {value!r}")
            out[name] = float(value)
        return out

    def get(self, name: str, default: float | None = None) -> float | None:
        """The weight of channel ``name``, or ``default`` when it has none here."""
        return self.as_dict().get(name, default)

    def as_dict(self) -> dict[str, float]:
        """Every weight by channel name: the built-in fields, then plug-in weights."""
        return {**{name: float(getattr(self, name)) for name in type(self).model_fields}, **(self.model_extra or {})}


class RecallConfig(CheckedModel):
    """Every constant of the recall pipeline, with its published or measured default.

    Unknown keys raise :class:`~memory_retrievers.ConfigError`. Build variants with
    ``config.model_copy(update={...})`` or :meth:`preset`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: RoutingMode = RoutingMode.AUTO
    weights: ChannelWeights = ChannelWeights()
    candidate_depth: int = Field(default=30, ge=1, le=1000)
    """Hits taken from each channel. Deeper lists let middling items found by several weak
    channels outrank a strong channel's top hits; 30 measured best on LoCoMo among 10/20/30/50."""

    # fusion
    rrf_k: float = Field(default=60.0, gt=0)
    rank1_bonus: float = Field(default=0.05, ge=0)
    top3_bonus: float = Field(default=0.02, ge=0)
    original_query_weight: float = Field(default=2.0, gt=0)
    """Lists from the original query weigh this much relative to expansion lists (weight 1)."""
    semantic_blend: float = Field(default=0.0, ge=0, le=1)
    """Blend the fused score with the normalised cosine similarity: ``(1-b)*fused + b*cosine``."""

    # expansion and HyDE
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

    # channels
    link_hops: int = Field(default=1, ge=0, le=2)
    link_decay: float = Field(default=0.5, gt=0, le=1)
    link_seeds: int = Field(default=5, ge=1, le=50)
    fact_source_weight: float = Field(default=0.5, ge=0)
    """Provenance folding: a fact extracted from chat turns (``links`` from a non-message memory to
    ``message`` memories) votes for its source turns in every channel at this share of the
    channel's weight, and is folded into a source that is a candidate (named in
    ``explanation.folded``) instead of taking a place of its own. 0 turns it off: facts and
    turns then compete as separate memories. See :mod:`memory_retrievers.recall.provenance`."""

    # scoring
    decay: DecayKind = DecayKind.HYPERBOLIC
    decay_scale_days: float = Field(default=60.0, gt=0)
    """Hyperbolic decay ``1 / (1 + days_since_access / decay_scale_days)``."""
    half_life_days: float = Field(default=60.0, gt=0)
    decay_weight: float = Field(default=0.2, ge=0, le=1)
    """Strength of the decay: factor ``(1 - w) + w * decay`` (1 = the pure curve). On LoCoMo, whose
    questions reach back months, the pure curve cost 0.165 recall@10; 0.2 costs 0.004 and still
    prefers recent memories among equally relevant ones."""
    pinned_boost: float = Field(default=1.1, gt=0)
    kind_boosts: Mapping[MemoryKind, float] = Field(
        default_factory=lambda: {
            MemoryKind.INSIGHT: 1.5,
            MemoryKind.EVENT: 1.0,
            MemoryKind.FACT: 1.0,
            MemoryKind.PREFERENCE: 1.0,
            MemoryKind.MESSAGE: 1.0,
            MemoryKind.RAW: 0.5,
        }
    )
    speaker_boost: float = Field(default=2.0, gt=0)
    """Multiplier for a chat turn (a ``message`` memory written ``"Name: text"``) whose speaker the
    query names: a question about Melanie is nearly always answered by what Melanie said (96.5 %
    of the evidence on LoCoMo). 1 turns it off. See :mod:`memory_retrievers.speakers`."""
    speaker_free_vector: bool = True
    """When the query names a speaker, it is embedded without the name: a name pulls in every turn
    that merely mentions it (vector recall@10 on LoCoMo: 0.481 with the name, 0.587 without). That
    vector then also gives ``ScoredMemory.relevance``."""
    asked_vector_share: float = Field(default=0.0, ge=0, le=1)
    """With ``speaker_free_vector``, also embed the query as asked and search with it at this share
    of the vector weight (0: not embedded). Measured on LoCoMo at 0.5: +0.000 recall@10 for +2.4 ms
    (both texts in one forward pass), so off by default."""
    date_boost: float = Field(default=2.0, gt=0)
    """Multiplier for a memory created within a day, month or year the query names (1 turns it
    off). See :mod:`memory_retrievers.dates`."""
    same_project_boost: float = Field(default=1.3, gt=0)
    other_project_penalty: float = Field(default=0.8, gt=0)
    no_project_penalty: float = Field(default=0.9, gt=0)
    cross_topic_penalty: float = Field(default=0.4, gt=0)
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
    :mod:`memory_retrievers.calibration`). ``None``: the one shipped for the store's embedder, or
    the embedder-agnostic one."""

    # the block
    collapse_copies: bool = True
    """Lines that say the same thing (:func:`memory_retrievers.lines.line_key`: case, punctuation
    and stop words aside, same speaker, both questions or both statements) take one place in the
    block, the best of them, noted with how often and since when it was said. The others are cut
    (reason ``copy``); the stored memories are untouched."""
    excerpt_chars: int = Field(default=1_200, ge=100, le=1_000_000)
    """A memory longer than this (an assistant's long reply, a pasted document) is shown in the
    block by its passage of this many characters holding the most of the query's keywords, marked
    with ``…`` (``ScoredMemory.excerpt``), so it costs the budget what answers; the memory itself is
    untouched. 1,200 characters is about 300 tokens."""
    max_query_chars: int = Field(default=200_000, ge=1, le=10_000_000)
    """Longest query recall accepts, in characters (a longer one raises ``InvalidInputError``
    naming this setting). Adapters cut a chat message to it instead of failing."""
    searched_query_chars: int = Field(default=1_000, ge=100, le=100_000)
    """A longer query (a pasted log, a long message) is searched by its first 30% and last 70% of
    this many characters, cut at word boundaries, and the plan says so: the default model reads
    only its first 256 word pieces (about 1,000 characters of English), and BM25 over hundreds of
    words is slow and matches everything."""

    # reranker
    rerank_depth: int = Field(default=30, ge=1, le=500)
    rerank_weight: float = Field(default=0.5, ge=0, le=1)
    """Blend: ``(1-w) * fused + w * reranker``, both min-max normalised over the candidates."""
    rerank_timeout_s: float = Field(default=10.0, gt=0)
    """A reranker slower than this is skipped for the recall (with a warning), like a slow LLM."""

    # selection
    k: int = Field(default=10, ge=1, le=1000)
    token_budget: int | None = Field(default=2000, ge=0)
    token_encoding: str = "cl100k_base"
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
    ``knowledge``, ``conversation``; see :mod:`memory_retrievers.sections`), each in [0, 1], summing
    to at most 1. A reservation holds only while its section has candidates left, and whatever is
    not reserved goes to the best candidates of any section. ``{}`` reserves nothing: pure score
    order, pinned first."""

    # write-back
    record_access: bool = True

    @field_validator("kind_boosts", mode="before")
    @classmethod
    def _kind_keys(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {MemoryKind(k): float(v) for k, v in value.items()}
        return value

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

    @classmethod
    def preset(cls, name: Preset | str, **overrides: Any) -> RecallConfig:
        """A named preset, optionally with overrides (validated like any config)."""
        preset = Preset(name)
        base: dict[str, Any] = {}
        if preset is Preset.SUPPORT:
            base = {"weights": ChannelWeights(bm25=1.5, context=2.0, vector=1.0, recency=1.0)}
        elif preset is Preset.KNOWLEDGE_BASE:
            base = {
                "weights": ChannelWeights(vector=2.0, bm25=1.0, context=0.0, recency=0.0),
                "decay": DecayKind.NONE,
            }
        return validated(cls, {**base, **overrides}, "RecallConfig")  # type: ignore[no-any-return]

    def scoring_params(self) -> ScoringParams:
        """The subset used by :func:`memory_retrievers.scoring.multipliers`."""
        return ScoringParams(
            decay_kind=self.decay,
            decay_scale_days=self.decay_scale_days,
            half_life_days=self.half_life_days,
            decay_weight=self.decay_weight,
            pinned_boost=self.pinned_boost,
            kind_boosts=self.kind_boosts,
            same_project_boost=self.same_project_boost,
            other_project_penalty=self.other_project_penalty,
            no_project_penalty=self.no_project_penalty,
            cross_topic_penalty=self.cross_topic_penalty,
            speaker_boost=self.speaker_boost,
            date_boost=self.date_boost,
        )
