"""Ray underneath the bulk jobs: importing it on demand, shipping the embedder to workers, embedding in parallel.

Ray is an optional extra (``python -m pip install "./memory-retrievers[ray]"`` from a clone): nothing imports it until a
job runs, so ``import memory_retrievers`` never pays for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from memory_retrievers.bulk.batching import text_blocks
from memory_retrievers.embeddings import Embedder, HashEmbedder, SentenceTransformerEmbedder, check_vectors
from memory_retrievers.errors import ConfigError, EmbedderMismatchError, EmbeddingError, install_extra
from memory_retrievers.storage.vectors import unit

__all__ = [
    "EmbedBatch",
    "EmbedderFactory",
    "checked_factory",
    "embedded_in_order",
    "factory_for",
    "model_of",
    "require_ray",
]

EmbedderFactory = Callable[[], Embedder]
"""Builds an embedder in a Ray worker (a model is loaded once per worker, not shipped)."""


def require_ray(address: str | None = None) -> Any:
    """The ``ray`` module, initialised (a local instance when none is running).

    Args:
        address: Join the Ray cluster at this address first (``ray.init(address=...)``).

    Raises:
        ConfigError: Ray or lance-ray is not installed.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(f"the bulk jobs run on Ray, which is not installed: {install_extra('ray')}") from None
    if address is not None:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    if not ray.is_initialized():
        # A local instance with every core, loopback only, no dashboard: what `ray start` would give
        # a laptop. To use a cluster, call ray.init(address=...) before the job.
        ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    return ray


def factory_for(embedder: Embedder) -> EmbedderFactory:
    """A picklable factory rebuilding ``embedder`` in a Ray worker.

    The built-in embedders are rebuilt from their settings (a sentence-transformers model holds a
    lock and weights that must not be pickled; each worker loads its own copy, offline for the
    default model). Any other embedder is shipped as a copy when it pickles.

    Raises:
        ConfigError: The embedder cannot be pickled: pass ``embedder_factory=`` to the job.
    """
    # Exactly our classes: a subclass may embed differently, so it is shipped as itself (below).
    if type(embedder) is SentenceTransformerEmbedder:
        # The private settings of our own class, read here so the class needs no pickling support.
        return functools.partial(
            SentenceTransformerEmbedder,
            embedder._model_name,
            device=embedder._device,
            batch_size=embedder._batch_size,
            name=embedder.name,
        )
    if type(embedder) is HashEmbedder:
        return functools.partial(HashEmbedder, embedder.dimension, name=embedder.name)
    try:
        from ray import cloudpickle

        cloudpickle.dumps(embedder)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ConfigError(
            f"the embedder {embedder!r} cannot be sent to Ray workers ({type(exc).__name__}: {exc}); pass "
            "embedder_factory=<a function with no arguments that builds it> to the bulk job"
        ) from None
    return functools.partial(_same, embedder)


def _same(embedder: Embedder) -> Embedder:
    return embedder


class EmbedBatch:
    """The Ray Data actor: builds the embedder once, then turns ``{"i", "text"}`` batches into ``{"i", "vector"}``.

    Vectors are checked and scaled to unit length exactly as the store does on its own write path.

    Args:
        factory: Builds the embedder (once per actor).
        model: The ``(name, dimension)`` of the store the vectors are written to: an embedder built
            as another model is refused (a table holds one model's vectors; a factory building
            another model of the same width would mix two models silently).

    Raises:
        EmbedderMismatchError: The factory built another model than ``model``.
    """

    def __init__(self, factory: EmbedderFactory, model: tuple[str, int] | None = None) -> None:
        self._embedder = factory()
        built = (self._embedder.name, self._embedder.dimension)
        if model is not None and built != tuple(model):
            raise EmbedderMismatchError(
                f"embedder_factory built embedder {built[0]!r} (dimension {built[1]}), but the store written to "
                f"uses {model[0]!r} (dimension {model[1]}); the factory must build the store's own model "
                "(vectors of two models do not mix)"
            )

    def __call__(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The batch's positions and unit vectors, one row per text."""
        texts = [str(t) for t in batch["text"]]
        raw = self._embedder.embed_documents(texts)
        vectors = check_vectors(raw, rows=len(texts), dimension=self._embedder.dimension, source="the embedder")
        return {"i": np.asarray(batch["i"]), "vector": unit(vectors, source="the embedder").astype(np.float32)}


def model_of(embedder: Embedder) -> tuple[str, int]:
    """The ``(name, dimension)`` a table records for its model (what :class:`EmbedBatch` checks a worker's against)."""
    return embedder.name, embedder.dimension


def checked_factory(factory: EmbedderFactory | None, embedder: Embedder) -> EmbedderFactory:
    """``factory`` once it built ``embedder``'s model here, or the default factory rebuilding ``embedder``.

    A caller's factory is run once in this process: a factory building another model would
    otherwise fail only in a Ray actor, as Ray's ``ActorDiedError`` rather than a typed error.

    Raises:
        EmbedderMismatchError: The factory builds another model than ``embedder``.
        ConfigError: ``embedder`` cannot be sent to workers (no factory given).
    """
    if factory is None:
        return factory_for(embedder)
    EmbedBatch(factory, model_of(embedder))
    return factory


def embedded_in_order(
    records: Sequence[Mapping[str, Any]],
    factory: EmbedderFactory,
    *,
    workers: int,
    embed_batch: int,
    model: tuple[str, int] | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, vectors)`` for consecutive runs of ``records``, in order, embedded by ``workers`` Ray actors.

    Ray Data streams: the first vectors arrive while later blocks are still being embedded, so the
    caller writes while the workers embed.
    """
    ray = require_ray()
    import pyarrow as pa

    blocks = text_blocks(records, embed_batch)
    if not blocks:
        return
    dataset = ray.data.from_arrow([pa.table(block) for block in blocks])
    dataset.context.execution_options.preserve_order = True
    embedded = dataset.map_batches(
        EmbedBatch,
        fn_constructor_args=(factory, model),
        batch_size=embed_batch,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=min(workers, len(blocks))),  # no idle actor per missing block
        num_cpus=1,
    )
    expected = 0
    for batch in embedded.iter_batches(batch_size=None, batch_format="numpy"):
        positions = batch["i"]
        if len(positions) == 0:
            continue
        if int(positions[0]) != expected or int(positions[-1]) != expected + len(positions) - 1:
            raise EmbeddingError(f"Ray returned records {positions[0]}-{positions[-1]} where {expected} was due")
        yield expected, np.asarray(batch["vector"], dtype=np.float32)
        expected += len(positions)
