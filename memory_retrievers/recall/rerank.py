"""The optional reranker plug-in: scores (query, memory text) pairs; higher is more relevant."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memory_retrievers.errors import ConfigError
from memory_retrievers.runtime.plugins import pool as plugin_pool

__all__ = ["CrossEncoderReranker", "Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers the query (any real scale; higher is better)."""

    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """One score per text, in order."""
        ...

    async def arerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """Async twin of :meth:`rerank`."""
        ...


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` (loaded lazily, CPU by default).

    Args:
        model: Hub name or local path of a cross-encoder model. None is bundled: offline, point
            this at a local directory.
        device: Torch device.
        batch_size: Pairs per forward pass.
    """

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 32) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError("model must be a hub name or a local path")
        self._model_name = model
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrossEncoderReranker(model={self._model_name!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self._model_name, device=self._device)
            return self._model

    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """Raw cross-encoder scores (logits for most models)."""
        if not texts:
            return []
        scores = self._load().predict([(query, t) for t in texts], batch_size=self._batch_size, show_progress_bar=False)
        return [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(-1)]

    async def arerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """Runs the model on the library's reranking threads."""
        return await plugin_pool("rerank").run(self.rerank, query, texts)
