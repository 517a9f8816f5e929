"""The recall pipeline's stages, one module each, and the public :class:`RecallSource` they read through.

``plan`` (routing) -> ``channels`` (ranked lists searched concurrently through a
:class:`RecallSource`) -> ``expansion`` (LLM rewrites and HyDE; LLM-free feedback and Rocchio) ->
``links`` (activation spreading) -> ``blend`` (fusion, semantic and reranker blends, multipliers)
-> ``assemble`` (relevance floor, budgeted selection, the result). ``tasks`` keeps the concurrent
work of one recall together. :class:`~memory_retrievers.MemoryRetriever` runs them in order.

A custom pipeline can read a namespace the same way: ``source = await store.arecall_source(ns)``.
"""

from .source import RecallSource, SourceHits

__all__ = ["RecallSource", "SourceHits"]
