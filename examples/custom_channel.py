"""A recall channel of your own, in one class: exact error codes for a support agent.

Why this example: support chats are full of identifiers (error codes, ticket numbers, SKUs) that
must match exactly. The built-in channels read "E-4012" as words among others: BM25 splits it into
"e" and "4012", a vector model blurs it into its neighbours, so a memory about E-4013 ranks as well
as the one about E-4012. A channel that finds the memories quoting the query's codes gives them a
ranked list of their own, fused with the others by its weight and explained like them. Below, the
question also talks about renewing a licence: the built-in channels give both places (``k=2``) to
licence memories, and the error-code channel brings in the memory that explains E-4012.

Writing it touches no file of the library: a class with a ``name``, what it ``needs``, when it
``runs`` and an async ``search`` over the recall source, handed to
``MemoryRetriever(store, channels=[ErrorCodes()])``, and the same way to the framework adapters:
the LangChain ``RecallRetriever`` and the LlamaIndex ``RecallRetriever`` below (and
``MemoryMiddleware``, ``MemoryStoreLangGraph``, ``RecallMemoryBlock``, ``RecallMemory``). It runs
offline in a few seconds with the hash embedder (use the default model, ``MemoryStore()``, in an
application).

    python examples/custom_channel.py
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from langchain_memory_retrievers import RecallRetriever as LangChainRetriever
from llama_index.memory_retrievers import RecallRetriever as LlamaIndexRetriever
from memory_retrievers import (
    ChannelInput,
    FtsField,
    HashEmbedder,
    MemoryRetriever,
    MemoryStore,
    Need,
    RankedList,
    RecallConfig,
    RoutingMode,
)
from memory_retrievers.text.query import QueryFeatures

CODE = re.compile(r"\b[A-Z]{1,3}-?\d{3,5}\b")

MEMORIES = [
    "Error E-4013 means the licence has expired; renew it in the admin console.",
    "Error E-4012 means the calendar token is stale: sign out and in again to refresh it.",
    "Calendar sync can lag by a few minutes after a password change.",
    "A renewed licence shows its new expiry date in the admin console.",
    "Tickets about error E-4013 are handled by the billing team.",
    "The mobile app caches the calendar for offline use.",
]


class ErrorCodes:
    """The memories that quote an error code the query names, in the source's BM25 order."""

    name = "error_code"
    needs: frozenset[Need] = frozenset()  # the query's text is enough: it starts with the first searches
    default_weight = 2.0

    def runs(self, features: QueryFeatures, config: RecallConfig, mode: RoutingMode) -> bool:
        """Everywhere but in pure vector mode (a query without a code gets no list from search)."""
        return mode is not RoutingMode.VECTOR

    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        """One list: BM25 hits for the codes, kept only when they quote one of them exactly."""
        codes = set(CODE.findall(given.query.text))
        if not codes:
            return []
        hits = await given.source.text_search(" ".join(sorted(codes)), FtsField.TEXT, 4 * given.depth)
        exact = [i for i in hits.ids if codes & set(CODE.findall(given.source.memory(i).text))]
        return [RankedList(self.name, tuple(exact[: given.depth]), given.weight)]


def show(title: str, retriever: MemoryRetriever, question: str) -> None:
    result = retriever.recall(question, k=2, namespace="support")
    print(f"{title}: channels {result.plan['channels']}")
    for rank, memory in enumerate(result.memories, 1):
        lists = ", ".join(f"{c.label}#{c.rank}" for c in memory.explanation.channels)
        print(f"  {rank}. {memory.text}  [{lists}]")


def lists_of(explanation: dict[str, object]) -> str:
    """The ranked lists that found a memory, from the explanation an adapter puts in its metadata."""
    return ", ".join(f"{c['label']}#{c['rank']}" for c in explanation["channels"])  # type: ignore[attr-defined]


def main() -> None:
    question = "The customer renewed the licence in the admin console and now sees E-4012: why?"
    # The plug-in's weight goes in the config by its name, like a built-in channel's.
    weights = {"weights": {"error_code": 3.0}}
    with tempfile.TemporaryDirectory() as folder, MemoryStore(Path(folder), embedder=HashEmbedder(64)) as store:
        store.add_many([{"text": text} for text in MEMORIES], namespace="support")
        print(f"question: {question}\n")
        show("built-in channels", MemoryRetriever(store), question)
        custom = MemoryRetriever(store, channels=[ErrorCodes()], config=weights)
        print()
        show("with the error-code channel", custom, question)

        # The same channel through a LangChain retriever: a BaseRetriever for any chain.
        langchain = LangChainRetriever(
            store=store, namespace="support", k=2, channels=[ErrorCodes()], recall_config=weights
        )
        print("\nLangChain RecallRetriever with the channel:")
        for doc in langchain.invoke(question):
            print(f"  {doc.page_content}  [{lists_of(doc.metadata['explanation'])}]")

        # And through a LlamaIndex retriever: a BaseRetriever for any query engine.
        llama_index = LlamaIndexRetriever(
            store, namespace="support", similarity_top_k=2, channels=[ErrorCodes()], recall_config=weights
        )
        print("\nLlamaIndex RecallRetriever with the channel:")
        for node in llama_index.retrieve(question):
            print(f"  {node.node.get_content()}  [{lists_of(node.node.metadata['explanation'])}]")


if __name__ == "__main__":
    main()
