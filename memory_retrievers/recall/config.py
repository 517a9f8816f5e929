"""Frozen, validated configuration of the recall pipeline, in sections, with named presets.

:class:`RecallConfig` keeps the everyday settings at its top level (``mode``, ``k``,
``token_budget``, ``weights``, ``record_access``) and the constants of each stage in a section
(:mod:`memory_retrievers.recall.stage_config`, and ``ScoringConfig`` in :mod:`memory_retrievers.recall.scoring`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import Self

from memory_retrievers.config import CheckedModel, validated
from memory_retrievers.recall.scoring import DecayKind, ScoringConfig
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

__all__ = [
    "DEFAULT_K",
    "DEFAULT_TOKEN_BUDGET",
    "ChannelWeights",
    "ChannelsConfig",
    "FusionConfig",
    "Preset",
    "QueryConfig",
    "QueryExpansionConfig",
    "RecallConfig",
    "RelevanceConfig",
    "RerankConfig",
    "RoutingMode",
    "ScoringConfig",
    "SelectionConfig",
    "SupersededPolicy",
]

DEFAULT_K = 10
"""How many memories a recall returns unless told otherwise: ``RecallConfig().k``, and the default
every adapter (LangChain retriever and middleware, LlamaIndex retriever and memory) should use."""

DEFAULT_TOKEN_BUDGET = 2_000
"""The token budget of a recall's context block unless told otherwise: ``RecallConfig().token_budget``,
and the default every adapter should use (about a page of chat turns)."""


class RoutingMode(str, enum.Enum):
    """Which stages run."""

    VECTOR = "vector"
    """Vector search only (plus scoring and selection)."""
    HYBRID = "hybrid"
    """Every enabled channel and stage, whatever the query."""
    AUTO = "auto"
    """Hybrid core channels; entity, recency, expansion, HyDE and session diversity only when the
    query's features call for them (named entities, "latest", "how many"...)."""


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

    The everyday settings are fields; each stage's constants are in a section::

        RecallConfig(k=5, fusion={"rrf_k": 30}, scoring={"decay": "none"})

    Unknown keys raise :class:`~memory_retrievers.ConfigError`. Build variants with
    ``config.model_copy(update={...})`` (a section dict changes only the fields it names) or
    :meth:`preset`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: RoutingMode = RoutingMode.AUTO
    k: int = Field(default=DEFAULT_K, ge=1, le=1000)
    token_budget: int | None = Field(default=DEFAULT_TOKEN_BUDGET, ge=0)
    weights: ChannelWeights = ChannelWeights()
    record_access: bool = True
    """Record each returned memory's access (its decay then counts from now)."""

    channels: ChannelsConfig = ChannelsConfig()
    """How deep each channel searches, how links spread, how facts vote for their sources."""
    fusion: FusionConfig = FusionConfig()
    """Rank fusion of the channels' lists."""
    query: QueryConfig = QueryConfig()
    """What recall accepts as a query and what it searches with."""
    query_expansion: QueryExpansionConfig = QueryExpansionConfig()
    """Query expansion and HyDE (with an LLM, or LLM-free)."""
    scoring: ScoringConfig = ScoringConfig()
    """Score multipliers: decay, pins, kinds, projects, topics, speaker and date cues."""
    relevance: RelevanceConfig = RelevanceConfig()
    """Floors, abstention, the calibrated score, superseded memories."""
    selection: SelectionConfig = SelectionConfig()
    """MMR, section shares, copies and excerpts in the block, token counting."""
    rerank: RerankConfig = RerankConfig()
    """The optional reranker's depth, weight and timeout."""

    SECTIONS: ClassVar[Mapping[str, type[BaseModel]]] = {
        "channels": ChannelsConfig,
        "fusion": FusionConfig,
        "query": QueryConfig,
        "query_expansion": QueryExpansionConfig,
        "scoring": ScoringConfig,
        "relevance": RelevanceConfig,
        "selection": SelectionConfig,
        "rerank": RerankConfig,
    }
    """Each section's field name and class."""

    @classmethod
    def preset(cls, name: Preset | str, **overrides: Any) -> RecallConfig:
        """A named preset, optionally with overrides (validated like any config).

        A section given as a dict changes only the fields it names, so
        ``preset("knowledge_base", scoring={"decay_weight": 0.5})`` keeps the preset's ``decay``.
        """
        preset = Preset(name)
        base: dict[str, Any] = {}
        if preset is Preset.SUPPORT:
            base = {"weights": ChannelWeights(bm25=1.5, context=2.0, vector=1.0, recency=1.0)}
        elif preset is Preset.KNOWLEDGE_BASE:
            base = {
                "weights": ChannelWeights(vector=2.0, bm25=1.0, context=0.0, recency=0.0),
                "scoring": {"decay": DecayKind.NONE},
            }
        return validated(cls, _merge_sections(base, overrides), "RecallConfig")  # type: ignore[no-any-return]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied and validated (a section dict changes only the fields it names).

        Args:
            update: New values: top-level fields, or sections (dicts or instances).
            deep: Copy nested values too (only without ``update``).
        """
        if not update:
            return super().model_copy(deep=deep)
        current = {name: getattr(self, name) for name in type(self).model_fields}
        return validated(type(self), _merge_sections(current, update), "RecallConfig")  # type: ignore[no-any-return]


def _merge_sections(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``update`` applied; a section dict in ``update`` changes only the fields it names."""
    out = dict(base)
    for key, value in update.items():
        current = out.get(key)
        if key in RecallConfig.SECTIONS and isinstance(value, Mapping) and current is not None:
            out[key] = {**(dict(current) if isinstance(current, BaseModel) else current), **value}
        else:
            out[key] = value
    return out
