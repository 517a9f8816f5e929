"""The recall pipeline's stages, one module each, and the public :class:`RecallSource` they read through.

``plan`` (routing: each registered channel says whether it runs) -> the channels' first pass
(``channel`` the protocol, ``builtin`` the built-in channels, ``registry`` the registry and the
guarded runner; ranked lists searched concurrently through a :class:`RecallSource`) ->
``expansion`` (LLM rewrites and HyDE; LLM-free feedback and Rocchio) -> the after-fusion channels
(``links``; the ``activation`` plug-in) -> ``blend`` (fusion, semantic and reranker blends,
multipliers) -> ``assemble`` (relevance floor, budgeted selection, the result). ``state`` is the
one recall's state they read and write; ``tasks`` keeps its concurrent work together.
:class:`~memory_retrievers.MemoryRetriever` runs them in order.

A custom pipeline can read a namespace the same way: ``source = await store.arecall_source(ns)``.

A calibration for another embedder, or for your own traffic: :class:`Calibration`, fitted by
:func:`fit_calibration` and passed as ``RecallConfig(relevance={"calibration": ...})``.
"""

from memory_retrievers.recall.calibration import Calibration
from memory_retrievers.recall.fitting import fit_calibration
from memory_retrievers.recall.source import RecallSource, SourceHits

__all__ = ["Calibration", "RecallSource", "SourceHits", "fit_calibration"]
