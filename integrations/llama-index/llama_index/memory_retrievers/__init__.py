"""LlamaIndex adapters for memory-retrievers: long-term memory for query engines and agents.

- :class:`RecallRetriever`: the recall pipeline as a ``BaseRetriever``.
- :class:`RecallMemoryBlock`: a block for LlamaIndex's ``Memory``.
- :class:`RecallMemory`: a ``BaseMemory`` for agents and chat engines that take ``memory=``.
- :class:`MemoryChatStore`: a ``BaseChatStore`` on LanceDB.
- :class:`MemoryDBChatStore`: the short-term chat of LlamaIndex's ``Memory`` (an ``AsyncDBChatStore``).
- :func:`using_namespace`: pick the user per request for retrievers built with ``namespace=None``.
- :class:`LlamaIndexLLM` and :class:`LlamaIndexEmbedder`: LlamaIndex models inside the core.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .bridges import LlamaIndexEmbedder, LlamaIndexLLM
from .chat_store import MemoryChatStore, MemoryDBChatStore
from .memory import RecallMemory
from .memory_block import RecallMemoryBlock
from .retriever import RecallRetriever, current_namespace, using_namespace

try:
    __version__ = version("llama-index-memory-retrievers")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "MemoryChatStore",
    "MemoryDBChatStore",
    "RecallMemory",
    "RecallMemoryBlock",
    "RecallRetriever",
    "__version__",
    "current_namespace",
    "using_namespace",
]
