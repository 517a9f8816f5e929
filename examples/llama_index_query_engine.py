"""A LlamaIndex query engine that answers from a user's long-term memories.

Why this example: LlamaIndex users get recall with one import. ``RecallRetriever`` is a
``BaseRetriever``, so ``RetrieverQueryEngine`` uses it like any index retriever, and the source
nodes carry the memory ids and score explanations. Offline with ``MockLLM`` (which just echoes
part of its prompt); set ``MEMORY_RETRIEVERS_LLAMA_LLM=openai:gpt-4o-mini`` for a real answer.

    python examples/llama_index_query_engine.py [--store PATH]
"""

from __future__ import annotations

import argparse
import tempfile

from _models import llama_index_llm
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index.memory_retrievers import RecallRetriever
from memory_retrievers import MemoryStore

MEMORIES = [
    {"text": "Alice prefers the dark theme in every editor.", "kind": "preference"},
    {"text": "Alice moved from Paris to Berlin in March 2024.", "kind": "event"},
    {"text": "Alice's dog Rex is afraid of thunderstorms.", "kind": "fact"},
    {"text": "Alice drinks green tea, never coffee.", "kind": "preference"},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store folder (default: a temporary one, removed at exit)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(args.store or tmp) as store:
        store.add_many(MEMORIES, namespace="alice")
        llm, name = llama_index_llm()
        engine = RetrieverQueryEngine.from_args(RecallRetriever(store, namespace="alice", similarity_top_k=2), llm=llm)
        question = "Which city does Alice live in now?"
        response = engine.query(question)
        print(f"llm: {name}\nquestion: {question}\nsources:")
        for node in response.source_nodes:
            print(f"  {node.score:.3f}  {node.node.get_content()}  (memory {node.node.id_[:8]})")
        print(f"answer: {str(response).strip()[:200]}")


if __name__ == "__main__":
    main()
