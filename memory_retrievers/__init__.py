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
    from memory_retrievers.config import StoreConfig
    from memory_retrievers.embeddings import DEFAULT_MODEL, Embedder, HashEmbedder, SentenceTransformerEmbedder
    from memory_retrievers.errors import (
        ConfigError,
        DimensionMismatchError,
        EmbedderMismatchError,
        EmbeddingError,
        FilterError,
        FlushTimeoutError,
        ForkedStoreError,
        InvalidInputError,
        MemoryRetrieversError,
        NamespaceForgottenError,
        NotFoundError,
        QueueFullError,
        ReshardInProgressError,
        SchemaMismatchError,
        SourceChangingError,
        StorageError,
    )
    from memory_retrievers.filters import MemoryFilter
    from memory_retrievers.llm import LLM, CallableLLM
    from memory_retrievers.models import AddedMemory, DedupPolicy, FtsField, Hit, Memory, MemoryKind, WriteAction
    from memory_retrievers.recall.activation import SpreadingActivation
    from memory_retrievers.recall.channel import Channel, ChannelFailedWarning, ChannelInput, ChannelQuery, Need
    from memory_retrievers.recall.config import ChannelWeights, Preset, RecallConfig, RoutingMode, SupersededPolicy
    from memory_retrievers.recall.fusion import Contribution, RankedList, weighted_rrf
    from memory_retrievers.recall.registry import ChannelRegistry
    from memory_retrievers.recall.rerank import CrossEncoderReranker, Reranker
    from memory_retrievers.recall.results import CutCandidate, Explanation, RecallResult, ScoredMemory
    from memory_retrievers.recall.retriever import LLMFallbackWarning, MemoryRetriever
    from memory_retrievers.recall.scoring import DecayKind, ScoringConfig
    from memory_retrievers.recall.sections import ContextSection
    from memory_retrievers.recall.selection import CutReason
    from memory_retrievers.recall.stage_config import (
        ChannelsConfig,
        FusionConfig,
        QueryConfig,
        QueryExpansionConfig,
        RelevanceConfig,
        RerankConfig,
        SelectionConfig,
    )
    from memory_retrievers.shards.resharding import ReshardResult, reshard
    from memory_retrievers.shards.routing import shard_of
    from memory_retrievers.shards.sharded_store import ShardedMemoryStore
    from memory_retrievers.store.admin import StoreAdmin
    from memory_retrievers.store.memory_store import MemoryStore, default_store_path
    from memory_retrievers.store.pending import PendingWrite
    from memory_retrievers.store.per_process import PerProcess
    from memory_retrievers.tokens import EstimateCounter, TiktokenCounter, TokenCounter

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
    "FlushTimeoutError": ".errors",
    "ForkedStoreError": ".errors",
    "InvalidInputError": ".errors",
    "MemoryRetrieversError": ".errors",
    "NamespaceForgottenError": ".errors",
    "NotFoundError": ".errors",
    "QueueFullError": ".errors",
    "ReshardInProgressError": ".errors",
    "SourceChangingError": ".errors",
    "SchemaMismatchError": ".errors",
    "StorageError": ".errors",
    "MemoryFilter": ".filters",
    "Contribution": ".recall.fusion",
    "RankedList": ".recall.fusion",
    "weighted_rrf": ".recall.fusion",
    "LLM": ".llm",
    "CallableLLM": ".llm",
    "AddedMemory": ".models",
    "DedupPolicy": ".models",
    "FtsField": ".models",
    "Hit": ".models",
    "Memory": ".models",
    "MemoryKind": ".models",
    "WriteAction": ".models",
    "PendingWrite": ".store.pending",
    "PerProcess": ".store.per_process",
    "ReshardResult": ".shards.resharding",
    "ShardedMemoryStore": ".shards.sharded_store",
    "reshard": ".shards.resharding",
    "shard_of": ".shards.routing",
    "SpreadingActivation": ".recall.activation",
    "Channel": ".recall.channel",
    "ChannelInput": ".recall.channel",
    "ChannelQuery": ".recall.channel",
    "Need": ".recall.channel",
    "ChannelFailedWarning": ".recall.channel",
    "ChannelRegistry": ".recall.registry",
    "ChannelWeights": ".recall.config",
    "Preset": ".recall.config",
    "RecallConfig": ".recall.config",
    "RoutingMode": ".recall.config",
    "SupersededPolicy": ".recall.config",
    "ChannelsConfig": ".recall.stage_config",
    "FusionConfig": ".recall.stage_config",
    "QueryConfig": ".recall.stage_config",
    "QueryExpansionConfig": ".recall.stage_config",
    "RelevanceConfig": ".recall.stage_config",
    "RerankConfig": ".recall.stage_config",
    "ScoringConfig": ".recall.scoring",
    "SelectionConfig": ".recall.stage_config",
    "CrossEncoderReranker": ".recall.rerank",
    "Reranker": ".recall.rerank",
    "CutCandidate": ".recall.results",
    "Explanation": ".recall.results",
    "RecallResult": ".recall.results",
    "ScoredMemory": ".recall.results",
    "LLMFallbackWarning": ".recall.retriever",
    "MemoryRetriever": ".recall.retriever",
    "DecayKind": ".recall.scoring",
    "ContextSection": ".recall.sections",
    "CutReason": ".recall.selection",
    "MemoryStore": ".store.memory_store",
    "StoreAdmin": ".store.admin",
    "default_store_path": ".store.memory_store",
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
    "FlushTimeoutError",
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
    "ReshardInProgressError",
    "SourceChangingError",
    "SchemaMismatchError",
    "SentenceTransformerEmbedder",
    "SpreadingActivation",
    "StorageError",
    "StoreConfig",
    "WriteAction",
    "__version__",
    "default_store_path",
]
