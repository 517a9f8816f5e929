"""One core :class:`~memory_retrievers.MemoryRetriever` per namespace, for the classes that serve many users."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_retrievers import MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.integration import validated

from .llms import to_memory_llm

# Beyond this many namespaces, retrievers are made per call rather than kept: a stream of new
# (possibly hostile) namespaces must not grow memory without limit.
_MAX_KEPT = 10_000


class Recallers:
    """Retrievers sharing one store, recall config and LLM, made on a namespace's first use.

    Args:
        store: The memory store.
        recall_config: A :class:`~memory_retrievers.RecallConfig` or a dict of fields, validated
            now so a bad config fails at construction, not on the first recall.
        llm: Anything ``to_memory_llm`` accepts (a LangChain model, a core ``LLM``, ``None``).

    Raises:
        ConfigError: Unknown or invalid recall config fields.
    """

    def __init__(self, store: MemoryStore, recall_config: RecallConfig | Mapping[str, Any] | None, llm: Any) -> None:
        self._store = store
        self._config: RecallConfig = validated(RecallConfig, recall_config, "RecallConfig")
        self._llm = to_memory_llm(llm)
        self._by_namespace: dict[str, MemoryRetriever] = {}

    @property
    def config(self) -> RecallConfig:
        """The recall config every retriever shares."""
        return self._config

    def get(self, namespace: str) -> MemoryRetriever:
        """The retriever of ``namespace``."""
        recaller = self._by_namespace.get(namespace)
        if recaller is None:
            recaller = MemoryRetriever(self._store, namespace=namespace, config=self._config, llm=self._llm)
            if len(self._by_namespace) < _MAX_KEPT:
                self._by_namespace[namespace] = recaller
        return recaller
