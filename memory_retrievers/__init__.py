"""memory-retrievers: long-term memory for LLM applications, on LanceDB, offline by default.

The public API is what this module exports; everything in ``memory_retrievers._*`` and the
helpers of each module not listed here may change without notice.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .config import StoreConfig
from .embeddings import DEFAULT_MODEL, Embedder, HashEmbedder, SentenceTransformerEmbedder
from .errors import (
    ConfigError,
    DimensionMismatchError,
    EmbedderMismatchError,
    EmbeddingError,
    FilterError,
    InvalidInputError,
    MemoryRetrieversError,
    NotFoundError,
    SchemaMismatchError,
    StorageError,
)
from .filters import MemoryFilter
from .fusion import Contribution, RankedList, weighted_rrf
from .llm import LLM, CallableLLM
from .models import AddedMemory, DedupPolicy, FtsField, Hit, Memory, MemoryKind, WriteAction
from .recall_config import ChannelWeights, Preset, RecallConfig, RoutingMode, SupersededPolicy
from .rerank import CrossEncoderReranker, Reranker
from .results import CutCandidate, Explanation, RecallResult, ScoredMemory
from .retriever import LLMFallbackWarning, MemoryRetriever
from .scoring import DecayKind
from .selection import CutReason
from .store import MemoryStore, default_store_path
from .tokens import EstimateCounter, TiktokenCounter, TokenCounter

try:
    __version__ = version("memory-retrievers")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "AddedMemory",
    "CallableLLM",
    "ChannelWeights",
    "Contribution",
    "CrossEncoderReranker",
    "CutCandidate",
    "CutReason",
    "DecayKind",
    "EstimateCounter",
    "Explanation",
    "LLMFallbackWarning",
    "MemoryRetriever",
    "Preset",
    "RankedList",
    "RecallConfig",
    "RecallResult",
    "Reranker",
    "RoutingMode",
    "ScoredMemory",
    "SupersededPolicy",
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
    "FtsField",
    "HashEmbedder",
    "Hit",
    "InvalidInputError",
    "Memory",
    "MemoryFilter",
    "MemoryKind",
    "MemoryRetrieversError",
    "MemoryStore",
    "NotFoundError",
    "SchemaMismatchError",
    "SentenceTransformerEmbedder",
    "StorageError",
    "StoreConfig",
    "WriteAction",
    "__version__",
    "default_store_path",
]
