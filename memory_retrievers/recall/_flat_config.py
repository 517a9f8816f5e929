"""Read-only flat names of :class:`~memory_retrievers.RecallConfig`, kept for one release.

Before the config had sections, ``cfg.rrf_k`` was a field; it is now ``cfg.fusion.rrf_k``. These
properties keep the old reads working (without a warning in this release), typed like the fields
they stand for. The list is frozen: an option added to a section gets no flat name.
``tests/unit/recall/test_config.py`` checks that each property reads its section's field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_retrievers.models import MemoryKind
    from memory_retrievers.recall.calibration import Calibration
    from memory_retrievers.recall.scoring import DecayKind, ScoringConfig
    from memory_retrievers.recall.sections import ContextSection
    from memory_retrievers.recall.stage_config import (
        ChannelsConfig,
        FusionConfig,
        QueryConfig,
        QueryExpansionConfig,
        RelevanceConfig,
        RerankConfig,
        SelectionConfig,
        SupersededPolicy,
    )

__all__ = ["FLAT_NAMES", "FlatReads"]


class FlatReads:
    """Mixin of :class:`~memory_retrievers.RecallConfig`: each old flat name reads its section's field."""

    __slots__ = ()

    if TYPE_CHECKING:
        channels: ChannelsConfig
        fusion: FusionConfig
        query: QueryConfig
        query_expansion: QueryExpansionConfig
        scoring: ScoringConfig
        relevance: RelevanceConfig
        selection: SelectionConfig
        rerank: RerankConfig

    # channels
    @property
    def candidate_depth(self) -> int:
        return self.channels.candidate_depth

    @property
    def link_hops(self) -> int:
        return self.channels.link_hops

    @property
    def link_decay(self) -> float:
        return self.channels.link_decay

    @property
    def link_seeds(self) -> int:
        return self.channels.link_seeds

    @property
    def fact_source_weight(self) -> float:
        return self.channels.fact_source_weight

    # fusion
    @property
    def rrf_k(self) -> float:
        return self.fusion.rrf_k

    @property
    def rank1_bonus(self) -> float:
        return self.fusion.rank1_bonus

    @property
    def top3_bonus(self) -> float:
        return self.fusion.top3_bonus

    @property
    def original_query_weight(self) -> float:
        return self.fusion.original_query_weight

    @property
    def semantic_blend(self) -> float:
        return self.fusion.semantic_blend

    # query
    @property
    def max_query_chars(self) -> int:
        return self.query.max_query_chars

    @property
    def searched_query_chars(self) -> int:
        return self.query.searched_query_chars

    @property
    def speaker_free_vector(self) -> bool:
        return self.query.speaker_free_vector

    @property
    def asked_vector_share(self) -> float:
        return self.query.asked_vector_share

    # query_expansion
    @property
    def expansion(self) -> bool:
        return self.query_expansion.expansion

    @property
    def llm_rewrites(self) -> int:
        return self.query_expansion.llm_rewrites

    @property
    def feedback_docs(self) -> int:
        return self.query_expansion.feedback_docs

    @property
    def feedback_terms(self) -> int:
        return self.query_expansion.feedback_terms

    @property
    def hyde(self) -> bool:
        return self.query_expansion.hyde

    @property
    def rocchio_alpha(self) -> float:
        return self.query_expansion.rocchio_alpha

    @property
    def rocchio_beta(self) -> float:
        return self.query_expansion.rocchio_beta

    @property
    def llm_timeout_s(self) -> float:
        return self.query_expansion.llm_timeout_s

    # scoring
    @property
    def decay(self) -> DecayKind:
        return self.scoring.decay

    @property
    def decay_scale_days(self) -> float:
        return self.scoring.decay_scale_days

    @property
    def half_life_days(self) -> float:
        return self.scoring.half_life_days

    @property
    def decay_weight(self) -> float:
        return self.scoring.decay_weight

    @property
    def pinned_boost(self) -> float:
        return self.scoring.pinned_boost

    @property
    def kind_boosts(self) -> Mapping[MemoryKind, float]:
        return self.scoring.kind_boosts

    @property
    def speaker_boost(self) -> float:
        return self.scoring.speaker_boost

    @property
    def date_boost(self) -> float:
        return self.scoring.date_boost

    @property
    def same_project_boost(self) -> float:
        return self.scoring.same_project_boost

    @property
    def other_project_penalty(self) -> float:
        return self.scoring.other_project_penalty

    @property
    def no_project_penalty(self) -> float:
        return self.scoring.no_project_penalty

    @property
    def cross_topic_penalty(self) -> float:
        return self.scoring.cross_topic_penalty

    # relevance
    @property
    def superseded(self) -> SupersededPolicy:
        return self.relevance.superseded

    @property
    def relevance_floor(self) -> float:
        return self.relevance.relevance_floor

    @property
    def min_relevance(self) -> float:
        return self.relevance.min_relevance

    @property
    def abstain_below(self) -> float | None:
        return self.relevance.abstain_below

    @property
    def abstain_relevance(self) -> float | None:
        return self.relevance.abstain_relevance

    @property
    def min_score(self) -> float | None:
        return self.relevance.min_score

    @property
    def calibration(self) -> Calibration | None:
        return self.relevance.calibration

    # selection
    @property
    def mmr(self) -> bool:
        return self.selection.mmr

    @property
    def mmr_lambda(self) -> float:
        return self.selection.mmr_lambda

    @property
    def mmr_similarity_floor(self) -> float:
        return self.selection.mmr_similarity_floor

    @property
    def session_diverse(self) -> bool:
        return self.selection.session_diverse

    @property
    def pinned_first(self) -> bool:
        return self.selection.pinned_first

    @property
    def section_shares(self) -> Mapping[ContextSection, float]:
        return self.selection.section_shares

    @property
    def collapse_copies(self) -> bool:
        return self.selection.collapse_copies

    @property
    def excerpt_chars(self) -> int:
        return self.selection.excerpt_chars

    @property
    def token_encoding(self) -> str:
        return self.selection.token_encoding

    # rerank
    @property
    def rerank_depth(self) -> int:
        return self.rerank.rerank_depth

    @property
    def rerank_weight(self) -> float:
        return self.rerank.rerank_weight

    @property
    def rerank_timeout_s(self) -> float:
        return self.rerank.rerank_timeout_s


FLAT_NAMES: dict[str, str] = {
    "candidate_depth": "channels",
    "link_hops": "channels",
    "link_decay": "channels",
    "link_seeds": "channels",
    "fact_source_weight": "channels",
    "rrf_k": "fusion",
    "rank1_bonus": "fusion",
    "top3_bonus": "fusion",
    "original_query_weight": "fusion",
    "semantic_blend": "fusion",
    "max_query_chars": "query",
    "searched_query_chars": "query",
    "speaker_free_vector": "query",
    "asked_vector_share": "query",
    "expansion": "query_expansion",
    "llm_rewrites": "query_expansion",
    "feedback_docs": "query_expansion",
    "feedback_terms": "query_expansion",
    "hyde": "query_expansion",
    "rocchio_alpha": "query_expansion",
    "rocchio_beta": "query_expansion",
    "llm_timeout_s": "query_expansion",
    "decay": "scoring",
    "decay_scale_days": "scoring",
    "half_life_days": "scoring",
    "decay_weight": "scoring",
    "pinned_boost": "scoring",
    "kind_boosts": "scoring",
    "speaker_boost": "scoring",
    "date_boost": "scoring",
    "same_project_boost": "scoring",
    "other_project_penalty": "scoring",
    "no_project_penalty": "scoring",
    "cross_topic_penalty": "scoring",
    "superseded": "relevance",
    "relevance_floor": "relevance",
    "min_relevance": "relevance",
    "abstain_below": "relevance",
    "abstain_relevance": "relevance",
    "min_score": "relevance",
    "calibration": "relevance",
    "mmr": "selection",
    "mmr_lambda": "selection",
    "mmr_similarity_floor": "selection",
    "session_diverse": "selection",
    "pinned_first": "selection",
    "section_shares": "selection",
    "collapse_copies": "selection",
    "excerpt_chars": "selection",
    "token_encoding": "selection",
    "rerank_depth": "rerank",
    "rerank_weight": "rerank",
    "rerank_timeout_s": "rerank",
}
"""Each flat name of the release before sections, and the section that now holds it."""
