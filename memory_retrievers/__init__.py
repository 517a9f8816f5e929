"""memory-retrievers: long-term memory for LLM applications, on LanceDB, offline by default.

The public API is what this module exports; everything in ``memory_retrievers._*`` and the
helpers of each module not listed here may change without notice.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

# The names below are imported on first use (PEP 562), not here: the storage layer pulls in
# LanceDB, whose import takes seconds, and the command line's client must start in milliseconds.
if TYPE_CHECKING:
    from .admin import StoreAdmin
    from .config import StoreConfig
    from .embeddings import DEFAULT_MODEL, Embedder, HashEmbedder, SentenceTransformerEmbedder
    from .errors import (
        ConfigError,
        DimensionMismatchError,
        EmbedderMismatchError,
        EmbeddingError,
        FilterError,
        ForkedStoreError,
        InvalidInputError,
        MemoryRetrieversError,
        NamespaceForgottenError,
        NotFoundError,
        QueueFullError,
        SchemaMismatchError,
        StorageError,
    )
    from .filters import MemoryFilter
    from .fusion import Contribution, RankedList, weighted_rrf
    from .llm import LLM, CallableLLM
    from .models import AddedMemory, DedupPolicy, FtsField, Hit, Memory, MemoryKind, WriteAction
    from .pending import PendingWrite
    from .per_process import PerProcess
    from .recall.activation import SpreadingActivation
    from .recall.channel import Channel, ChannelFailedWarning, ChannelInput, ChannelQuery, Need
    from .recall.registry import ChannelRegistry
    from .recall_config import ChannelWeights, Preset, RecallConfig, RoutingMode, SupersededPolicy
    from .rerank import CrossEncoderReranker, Reranker
    from .resharding import ReshardResult, reshard
    from .results import CutCandidate, Explanation, RecallResult, ScoredMemory
    from .retriever import LLMFallbackWarning, MemoryRetriever
    from .scoring import DecayKind, ScoringConfig
    from .sections import ContextSection
    from .selection import CutReason
    from .shard_routing import shard_of
    from .shards import ShardedMemoryStore
    from .stage_config import (
        ChannelsConfig,
        FusionConfig,
        QueryConfig,
        QueryExpansionConfig,
        RelevanceConfig,
        RerankConfig,
        SelectionConfig,
    )
    from .store import MemoryStore, default_store_path
    from .tokens import EstimateCounter, TiktokenCounter, TokenCounter

_EXPORTS: dict[str, str] = {
    "StoreConfig": ".config",
    "DEFAULT_MODEL": ".embeddings",
    "Embedder": ".embeddings",
    "HashEmbedder": ".embeddings",
    "SentenceTransformerEmbedder": ".embeddings",
    "ConfigError": ".errors",
    "DimensionMismatchError": ".errors",
    "EmbedderMismatchError": ".errors",
    "EmbeddingError": ".errors",
    "FilterError": ".errors",
    "ForkedStoreError": ".errors",
    "InvalidInputError": ".errors",
    "MemoryRetrieversError": ".errors",
    "NamespaceForgottenError": ".errors",
    "NotFoundError": ".errors",
    "QueueFullError": ".errors",
    "SchemaMismatchError": ".errors",
    "StorageError": ".errors",
    "MemoryFilter": ".filters",
    "Contribution": ".fusion",
    "RankedList": ".fusion",
    "weighted_rrf": ".fusion",
    "LLM": ".llm",
    "CallableLLM": ".llm",
    "AddedMemory": ".models",
    "DedupPolicy": ".models",
    "FtsField": ".models",
    "Hit": ".models",
    "Memory": ".models",
    "MemoryKind": ".models",
    "WriteAction": ".models",
    "PendingWrite": ".pending",
    "PerProcess": ".per_process",
    "ReshardResult": ".resharding",
    "ShardedMemoryStore": ".shards",
    "reshard": ".resharding",
    "shard_of": ".shard_routing",
    "SpreadingActivation": ".recall.activation",
    "Channel": ".recall.channel",
    "ChannelInput": ".recall.channel",
    "ChannelQuery": ".recall.channel",
    "Need": ".recall.channel",
    "ChannelFailedWarning": ".recall.channel",
    "ChannelRegistry": ".recall.registry",
    "ChannelWeights": ".recall_config",
    "Preset": ".recall_config",
    "RecallConfig": ".recall_config",
    "RoutingMode": ".recall_config",
    "SupersededPolicy": ".recall_config",
    "ChannelsConfig": ".stage_config",
    "FusionConfig": ".stage_config",
    "QueryConfig": ".stage_config",
    "QueryExpansionConfig": ".stage_config",
    "RelevanceConfig": ".stage_config",
    "RerankConfig": ".stage_config",
    "ScoringConfig": ".scoring",
    "SelectionConfig": ".stage_config",
    "CrossEncoderReranker": ".rerank",
    "Reranker": ".rerank",
    "CutCandidate": ".results",
    "Explanation": ".results",
    "RecallResult": ".results",
    "ScoredMemory": ".results",
    "LLMFallbackWarning": ".retriever",
    "MemoryRetriever": ".retriever",
    "DecayKind": ".scoring",
    "ContextSection": ".sections",
    "CutReason": ".selection",
    "MemoryStore": ".store",
    "StoreAdmin": ".admin",
    "default_store_path": ".store",
    "EstimateCounter": ".tokens",
    "TiktokenCounter": ".tokens",
    "TokenCounter": ".tokens",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


try:
    __version__ = version("memory-retrievers")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "AddedMemory",
    "CallableLLM",
    "Channel",
    "ChannelFailedWarning",
    "ChannelInput",
    "ChannelQuery",
    "ChannelRegistry",
    "ChannelWeights",
    "ContextSection",
    "Contribution",
    "CrossEncoderReranker",
    "CutCandidate",
    "CutReason",
    "DecayKind",
    "EstimateCounter",
    "Explanation",
    "LLMFallbackWarning",
    "MemoryRetriever",
    "Need",
    "PendingWrite",
    "PerProcess",
    "ReshardResult",
    "ShardedMemoryStore",
    "reshard",
    "shard_of",
    "Preset",
    "RankedList",
    "RecallConfig",
    "RecallResult",
    "Reranker",
    "RoutingMode",
    "ScoredMemory",
    "SupersededPolicy",
    "ChannelsConfig",
    "FusionConfig",
    "QueryConfig",
    "QueryExpansionConfig",
    "RelevanceConfig",
    "RerankConfig",
    "ScoringConfig",
    "SelectionConfig",
    "TiktokenCounter",
    "TokenCounter",
    "weighted_rrf",
    "ConfigError",
    "DedupPolicy",
    "DimensionMismatchError",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "FilterError",
    "ForkedStoreError",
    "FtsField",
    "HashEmbedder",
    "Hit",
    "InvalidInputError",
    "Memory",
    "MemoryFilter",
    "MemoryKind",
    "MemoryRetrieversError",
    "MemoryStore",
    "StoreAdmin",
    "NamespaceForgottenError",
    "NotFoundError",
    "QueueFullError",
    "SchemaMismatchError",
    "SentenceTransformerEmbedder",
    "SpreadingActivation",
    "StorageError",
    "StoreConfig",
    "WriteAction",
    "__version__",
    "default_store_path",
]
