"""Core records -> LangChain ``Document``s (the one place the conversion happens)."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from memory_retrievers import Memory, RecallResult, ScoredMemory

__all__ = ["memory_metadata", "to_documents"]


def memory_metadata(memory: Memory) -> dict[str, Any]:
    """Every field of a memory but its text (the page content) and vector, JSON-friendly."""
    meta = memory.to_dict()
    meta.pop("text", None)
    meta.pop("vector", None)
    return meta


def _document(scored: ScoredMemory) -> Document:
    meta = memory_metadata(scored.memory)
    # The calibrated score, in [0, 1] and comparable across queries, under LangChain's name for a
    # document's relevance (what its rerankers and compressors write), and as "score".
    meta["relevance_score"] = scored.score
    meta["score"] = scored.score
    meta["relevance"] = scored.relevance
    meta["explanation"] = scored.explanation.to_dict()
    if scored.note:
        meta["note"] = scored.note  # facts folded into it, contradictions (see RecallResult.to_context)
    if scored.excerpt is not None:
        meta["excerpt"] = scored.excerpt  # a long memory's passage holding the query's keywords (the block shows it)
    return Document(id=scored.id, page_content=scored.text, metadata=meta)


def to_documents(result: RecallResult) -> list[Document]:
    """One ``Document`` per recalled memory, best first; ``id`` is the memory id."""
    return [_document(m) for m in result.memories]
