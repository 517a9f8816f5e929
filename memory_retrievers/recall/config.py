"""Frozen, validated configuration of the recall pipeline, in sections, with named presets.

:class:`RecallConfig` keeps the everyday settings at its top level (``mode``, ``k``,
``token_budget``, ``weights``, ``record_access``) and the constants of each stage in a section
(:mod:`memory_retrievers.recall.stage_config`, and ``ScoringConfig`` in :mod:`memory_retrievers.recall.scoring`).
The flat names of the release before sections (``RecallConfig(rrf_k=30)``, ``cfg.rrf_k``) still
work for one release: given, each warns once naming its new place; read, it does not warn yet.
"""

from __future__ import annotations

import enum
import math
import sys
import warnings
from collections.abc import Mapping
from types import FrameType
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import Self

from memory_retrievers.config import CheckedModel, validated
from memory_retrievers.errors import ConfigError
from memory_retrievers.recall._flat_config import FLAT_NAMES, FlatReads
from memory_retrievers.recall.scoring import DecayKind, ScoringConfig, _ScoringParams
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

    def __setstate__(self, state: dict[Any, Any]) -> None:
        # With extra="allow" pydantic keeps plug-in weights in a dict; a pickle from the release
        # before plug-in weights (extra="forbid") holds None there, which would make the restored
        # weights unequal to the same weights built today.
        if state.get("__pydantic_extra__") is None:
            state = {**state, "__pydantic_extra__": {}}
        super().__setstate__(state)

    def get(self, name: str, default: float | None = None) -> float | None:
        """The weight of channel ``name``, or ``default`` when it has none here."""
        return self.as_dict().get(name, default)

    def as_dict(self) -> dict[str, float]:
        """Every weight by channel name: the built-in fields, then plug-in weights."""
        return {**{name: float(getattr(self, name)) for name in type(self).model_fields}, **(self.model_extra or {})}


class RecallConfig(CheckedModel, FlatReads):
    """Every constant of the recall pipeline, with its published or measured default.

    The everyday settings are fields; each stage's constants are in a section::

        RecallConfig(k=5, fusion={"rrf_k": 30}, scoring={"decay": "none"})

    Unknown keys raise :class:`~memory_retrievers.ConfigError`. Build variants with
    ``config.model_copy(update={...})`` (a section dict changes only the fields it names) or
    :meth:`preset`. The flat names of the release before sections (``RecallConfig(rrf_k=30)``,
    ``cfg.rrf_k``) still work for one release; given, each warns once with its new place.
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

    def __setstate__(self, state: dict[Any, Any]) -> None:
        # Pydantic unpickles by restoring __dict__ without validation: a config pickled by the
        # release before sections would come back with flat fields and no sections.
        super().__setstate__(_sectioned_state(type(self), state))

    @model_validator(mode="before")
    @classmethod
    def _flat_names(cls, data: Any) -> Any:
        return cls.sectioned(data) if isinstance(data, Mapping) else data

    @classmethod
    def sectioned(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """The same settings with the flat names of the release before sections moved into them.

        ``{"rrf_k": 30, "k": 5}`` becomes ``{"fusion": {"rrf_k": 30}, "k": 5}``; a section given
        as a dict or an instance takes the flat names of its fields. Each flat name warns once.

        Raises:
            ConfigError: A flat name and the same field in its section both given.
        """
        flat = [key for key in data if isinstance(key, str) and key in FLAT_NAMES]
        if not flat:
            return dict(data)
        out = {key: value for key, value in data.items() if key not in flat}
        for name in flat:
            section = FLAT_NAMES[name]
            _warn_flat(name, section)
            current = out.get(section)
            if isinstance(current, BaseModel):
                given, current = current.model_fields_set, dict(current)
            elif isinstance(current, Mapping) or current is None:
                current = dict(current or {})
                given = set(current)
            else:  # not a section: leave the name unknown, so the error names both
                out[name] = data[name]
                continue
            if name in given:
                # a ConfigError is a ValueError: inside validation, CheckedModel reports it as given
                raise ConfigError(f"{name} and {section}.{name} both given; keep one: {section}={{{name!r}: ...}}")
            out[section] = {**current, name: data[name]}
        return out

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
        return validated(cls, _merge_sections(base, cls.sectioned(overrides)), "RecallConfig")  # type: ignore[no-any-return]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied and validated (a section dict changes only the fields it names).

        Args:
            update: New values: top-level fields, sections (dicts or instances), or flat names
                of the release before sections (each warns).
            deep: Copy nested values too (only without ``update``).
        """
        if not update:
            return super().model_copy(deep=deep)
        current = {name: getattr(self, name) for name in type(self).model_fields}
        return validated(type(self), _merge_sections(current, self.sectioned(update)), "RecallConfig")  # type: ignore[no-any-return]

    def scoring_params(self) -> _ScoringParams:
        """Deprecated: the scoring section as the old ``ScoringParams`` dataclass; use ``config.scoring``.

        The result keeps the reads of the release before sections (``params.decay_kind``) and
        varies with ``dataclasses.replace``; the scoring functions still take it.
        """
        warnings.warn(
            "RecallConfig.scoring_params() is deprecated; use config.scoring (a ScoringConfig)",
            DeprecationWarning,
            stacklevel=2,
        )
        return _ScoringParams.from_config(self.scoring)


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


def _sectioned_state(cls: type[RecallConfig], state: dict[Any, Any]) -> dict[Any, Any]:
    """A pickled state of the release before sections (flat fields) moved into today's sections.

    No warning: the flat names are in the pickle, not in the caller's code. The values are
    validated again (a value out of today's range raises :class:`~memory_retrievers.ConfigError`),
    and the fields the old config was given stay the given ones: a flat name counts as its section.
    """
    fields = state.get("__dict__")
    if not isinstance(fields, Mapping) or not any(name in FLAT_NAMES for name in fields):
        return state
    given = set(state.get("__pydantic_fields_set__") or ())
    data = {name: value for name, value in fields.items() if name not in FLAT_NAMES}
    for section, section_cls in cls.SECTIONS.items():
        values = {name: value for name, value in fields.items() if FLAT_NAMES.get(name) == section}
        built = validated(section_cls, values, f"RecallConfig.{section}")
        data[section] = section_cls.model_construct(_fields_set=given & values.keys(), **dict(built))
    fresh = validated(cls, data, "RecallConfig")
    now_given = {name for name in given if name in cls.model_fields} | {FLAT_NAMES[n] for n in given if n in FLAT_NAMES}
    return {**fresh.__getstate__(), "__pydantic_fields_set__": now_given}


_INTERNAL_MODULES = (
    "memory_retrievers",
    "langchain_memory_retrievers",
    "llama_index.memory_retrievers",
    "langchain_core",
    "llama_index.core",
    "pydantic",
    "asyncio",
    "concurrent",
)
"""Modules whose frames a deprecation warning skips, so that it points at the caller's line.

Ours and our adapters', the frameworks' that call into them (LangChain's ``Serializable`` builds an
adapter, ``invoke`` calls it; LlamaIndex likewise), pydantic's validation, and asyncio's and the
executors' hand-offs. Python's default filters show a DeprecationWarning only when it is attributed
to ``__main__``: attributed to any of these it would be hidden from the user it is meant for.
Matched by module name, so the core needs no import of the frameworks to know them.
"""


def _internal(frame: FrameType) -> bool:
    """Whether ``frame`` runs code of one of :data:`_INTERNAL_MODULES` (or a submodule)."""
    module = frame.f_globals.get("__name__")
    return isinstance(module, str) and any(
        module == name or module.startswith(name + ".") for name in _INTERNAL_MODULES
    )


def _warn_flat(name: str, section: str) -> None:
    """One DeprecationWarning for a flat name, pointing at the first frame outside the library."""
    frame = sys._getframe(0)
    level = 1
    while frame.f_back is not None and _internal(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(
        f"RecallConfig({name}=...) is deprecated; use RecallConfig({section}={{{name!r}: ...}}) "
        f"(read it as config.{section}.{name})",
        DeprecationWarning,
        stacklevel=level,
    )
