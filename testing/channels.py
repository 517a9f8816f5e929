"""A recall channel for the adapters' tests: it finds the memories holding one word, whatever the query asks.

The core's, the LangChain package's and the LlamaIndex package's tests hand it to their adapters
(``channels=[WordChannel()]``) and check that it ran (``searches``) and what it found (its name in
the explanations).
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_retrievers import ChannelInput, FtsField, Need, RankedList, RecallConfig, RoutingMode
from memory_retrievers.text.query import QueryFeatures


class WordChannel:
    """The memories whose text holds ``word`` (BM25 order), for every query; counts its searches."""

    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def __init__(self, word: str = "zebra", *, name: str = "zebra") -> None:
        self.word, self.name = word, name
        self.searches = 0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """Always: it is searched whatever the query asks."""
        return True

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list: the memories holding the word."""
        self.searches += 1
        hits = await given.source.text_search(self.word, FtsField.TEXT, given.depth)
        return [RankedList(self.name, hits.ids, given.weight)]
