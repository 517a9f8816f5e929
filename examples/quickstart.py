"""Store a few memories in the default embedded store and search them, fully offline.

Why this example: it is the smallest end-to-end use of memory-retrievers — a LanceDB table in your
user data folder, the bundled all-MiniLM-L6-v2 model, dedup on write, the search primitives, and
the recall pipeline that fuses them into a token-budgeted, explained context block.
Run it twice: the second run finds every memory already stored and skips the duplicates
instead of piling them up.

    python examples/quickstart.py
"""

from __future__ import annotations

from memory_retrievers import MemoryRetriever, MemoryStore

NAMESPACE = "quickstart-demo"  # one namespace per user or tenant

MEMORIES = [
    {"text": "Alice prefers the dark theme in every editor.", "kind": "preference", "entities": ["Alice"]},
    {"text": "Alice moved from Paris to Berlin in March 2024.", "kind": "event", "entities": ["Alice", "Berlin"]},
    {"text": "The team standup is at 9:30 on Tuesdays.", "kind": "fact", "tags": ["work"]},
    {"text": "Alice is allergic to peanuts.", "kind": "fact", "entities": ["Alice"], "pinned": True},
]


def main() -> None:
    with MemoryStore() as store:  # default: a folder in your user data directory, never /tmp
        print(f"store: {store.uri}")
        for mem in store.add_many(MEMORIES, namespace=NAMESPACE):
            print(f"  {mem.action.value:8} {mem.id[:8]}  {mem.text}")

        question = "Which colour scheme does Alice like?"
        print(f"\nvector search: {question}")
        for hit in store.vector_search(question, namespace=NAMESPACE, k=2):
            print(f"  {hit.score:.3f}  {store.get(hit.id, namespace=NAMESPACE).text}")

        print("\nfull-text (BM25) search: berlin")
        for hit in store.fts_search("berlin", namespace=NAMESPACE, k=2):
            print(f"  {hit.score:.3f}  {store.get(hit.id, namespace=NAMESPACE).text}")

        print("\nentity search: Alice")
        for hit in store.entity_search(["alice"], namespace=NAMESPACE, k=3):
            print(f"  {hit.score:.0f} shared  {store.get(hit.id, namespace=NAMESPACE).text}")

        print(f"\n{store.count(NAMESPACE)} memories in namespace {NAMESPACE!r}")

        # The recall pipeline fuses all of the above (no LLM by default) and fits a token budget.
        retriever = MemoryRetriever(store, namespace=NAMESPACE)
        result = retriever.recall("What should I keep in mind when cooking for Alice?", k=3, token_budget=80)
        print(f"\nrecall ({result.tokens_used} tokens, pinned memories first):")
        print(result.to_context())
        top = result.memories[0]
        print(
            f"\nwhy the first one: channels {[(c.label, c.rank) for c in top.explanation.channels]}, "
            f"multipliers {top.explanation.multipliers}"
        )


if __name__ == "__main__":
    main()
