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
    EmbeddingError,
    FilterError,
    InvalidInputError,
    MemoryRetrieversError,
    NotFoundError,
    SchemaMismatchError,
    StorageError,
)
from .filters import MemoryFilter
from .models import AddedMemory, DedupPolicy, FtsField, Hit, Memory, MemoryKind, WriteAction
from .store import MemoryStore, default_store_path

try:
    __version__ = version("memory-retrievers")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "DEFAULT_MODEL",
    "AddedMemory",
    "ConfigError",
    "DedupPolicy",
    "DimensionMismatchError",
    "Embedder",
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
