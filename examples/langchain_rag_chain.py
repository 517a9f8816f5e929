"""An LCEL RAG chain that answers from a user's long-term memories.

Why this example: it shows the one-import path for LangChain users. ``RecallRetriever`` drops into
a chain like any retriever; the chain formats the recalled memories, already cut to a token
budget and explained, into the prompt. It runs offline with LangChain's fake chat model; set
``MEMORY_RETRIEVERS_CHAT_MODEL=openai:gpt-4o-mini`` (or any ``init_chat_model`` spec) for a real one.

    python examples/langchain_rag_chain.py [--store PATH]
"""

from __future__ import annotations

import argparse
import tempfile

from _models import langchain_chat_model
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_memory_retrievers import RecallRetriever
from memory_retrievers import MemoryStore

MEMORIES = [
    {"text": "Alice prefers the dark theme in every editor.", "kind": "preference"},
    {"text": "Alice moved from Paris to Berlin in March 2024.", "kind": "event"},
    {"text": "Alice's dog Rex is afraid of thunderstorms.", "kind": "fact"},
    {"text": "Alice is allergic to peanuts.", "kind": "fact", "pinned": True},
    {"text": "Alice drinks green tea, never coffee.", "kind": "preference"},
]

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the user's memories below. Say so if they do not contain the answer.\n\n{memories}"),
        ("human", "{question}"),
    ]
)


def format_memories(docs: list[Document]) -> str:
    return "\n".join(f"- {d.page_content} (score {d.metadata['score']:.3f})" for d in docs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store folder (default: a temporary one, removed at exit)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(args.store or tmp) as store:
        store.add_many(MEMORIES, namespace="alice")
        retriever = RecallRetriever(store=store, namespace="alice", k=3, token_budget=300)
        model, name = langchain_chat_model(["You live in Berlin: you moved there from Paris in March 2024."])
        chain = (
            {"memories": retriever | format_memories, "question": RunnablePassthrough()}
            | PROMPT
            | model
            | StrOutputParser()
        )
        question = "Which city did I move to?"
        print(f"model: {name}\nquestion: {question}")
        print("recalled:\n" + format_memories(retriever.invoke(question)))
        print(f"answer: {chain.invoke(question)}")


if __name__ == "__main__":
    main()
