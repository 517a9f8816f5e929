import subprocess
import sys

import memory_retrievers
from memory_retrievers import errors


def test_all_is_pinned() -> None:
    # Adding or removing public names is an API decision: update this list on purpose.
    assert sorted(memory_retrievers.__all__) == sorted(
        [
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
            "NamespaceForgottenError",
            "NotFoundError",
            "PendingWrite",
            "QueueFullError",
            "PerProcess",
            "ReshardInProgressError",
            "SourceChangingError",
            "ReshardResult",
            "ShardedMemoryStore",
            "StoreAdmin",
            "SchemaMismatchError",
            "SentenceTransformerEmbedder",
            "SpreadingActivation",
            "StorageError",
            "StoreConfig",
            "WriteAction",
            "__version__",
            "default_store_path",
            "reshard",
            "shard_of",
        ]
    )
    for name in memory_retrievers.__all__:
        assert hasattr(memory_retrievers, name), name


def test_core_imports_no_framework_and_no_torch() -> None:
    code = (
        "import sys, memory_retrievers;"
        "bad=[m for m in sys.modules if m.split('.')[0] in "
        "('langchain','langchain_core','llama_index','torch','sentence_transformers')];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_py_typed_is_shipped() -> None:
    from pathlib import Path

    assert (Path(memory_retrievers.__file__).parent / "py.typed").exists()


def test_error_hierarchy_inherits_builtins() -> None:
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.InvalidInputError, ValueError)
    assert issubclass(errors.FilterError, errors.InvalidInputError)
    assert issubclass(errors.NotFoundError, LookupError)
    assert issubclass(errors.EmbeddingError, RuntimeError)
    assert issubclass(errors.DimensionMismatchError, errors.EmbeddingError)
    assert issubclass(errors.DimensionMismatchError, ValueError)
    assert issubclass(errors.StorageError, RuntimeError)
    assert issubclass(errors.SchemaMismatchError, errors.StorageError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.MemoryRetrieversError)


def test_not_found_keeps_missing_ids_and_readable_message() -> None:
    exc = errors.NotFoundError("2 id(s) not found", ["a", "b"])
    assert exc.missing == ["a", "b"]
    assert str(exc) == "2 id(s) not found"
