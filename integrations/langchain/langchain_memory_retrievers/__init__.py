"""LangChain adapters for memory-retrievers: long-term memory for LangChain and LangGraph apps.

- :class:`RecallRetriever`: the recall pipeline as a ``BaseRetriever``.
- :class:`MemoryChatMessageHistory`: chat history persisted as recallable memories.
- :class:`MemoryStoreLangGraph`: a LangGraph ``BaseStore`` on the same store and recall pipeline.
- :class:`MemoryMiddleware`: recall before each model call, remember each turn, for ``create_agent``.
- :class:`LangChainLLM` and :class:`LangChainEmbedder`: LangChain models driving expansion/HyDE
  and embedding.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .chat_message_histories import MemoryChatMessageHistory
from .embeddings import LangChainEmbedder
from .llms import LangChainLLM
from .middleware import MemoryMiddleware
from .retrievers import RecallRetriever
from .stores import MemoryStoreLangGraph

try:
    __version__ = version("langchain-memory-retrievers")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "LangChainEmbedder",
    "LangChainLLM",
    "MemoryChatMessageHistory",
    "MemoryMiddleware",
    "MemoryStoreLangGraph",
    "RecallRetriever",
    "__version__",
]
