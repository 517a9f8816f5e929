"""A chat that remembers its conversation across calls, kept in the memory store, two ways.

Why this example: LangChain's ``RunnableWithMessageHistory`` is deprecated (LangChain points to
LangGraph's persistence instead), yet chat history is the first thing many apps need. Both ways
below keep each session in a ``MemoryChatMessageHistory``, so the conversation survives restarts
and every turn is also a memory that ``RecallRetriever`` can recall in later sessions:

1. ``RunnableWithMessageHistory`` (the deprecated way, still working, emits LangChain's
   deprecation warning);
2. the current LangGraph way: a graph whose node reads the thread's history and appends the new
   turn, the thread named by ``config["configurable"]["thread_id"]`` as with any LangGraph graph.

Offline with LangChain's fake chat model; set ``MEMORY_RETRIEVERS_CHAT_MODEL`` for a real model.

    python examples/langchain_chat_history.py [--store PATH]
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from typing import Any

from _models import langchain_chat_model
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langgraph.graph import START, MessagesState, StateGraph

from langchain_memory_retrievers import MemoryChatMessageHistory
from memory_retrievers import MemoryStore

SYSTEM = "You are a friendly assistant. Use the conversation so far."
QUESTIONS = ["My sister Carla lives in Lisbon.", "Where does my sister live?"]
ANSWERS = ["Noted: Carla lives in Lisbon.", "She lives in Lisbon."]


def seen(prompt: PromptValue) -> PromptValue:
    """Print how many messages the model is about to see (system + history + question)."""
    print(f"  (the model sees {len(prompt.to_messages())} messages)")
    return prompt


def with_runnable_history(store: MemoryStore, model: Any) -> None:
    """1. The deprecated way: ``RunnableWithMessageHistory`` around a prompt and a model."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LangChain's deprecation warning, acknowledged above
        chat = RunnableWithMessageHistory(
            prompt | RunnableLambda(seen) | model,
            lambda session_id: MemoryChatMessageHistory(store, namespace="alice", session_id=session_id),
            input_messages_key="question",
            history_messages_key="history",
        )
    for question in QUESTIONS:
        answer = chat.invoke({"question": question}, {"configurable": {"session_id": "runnable-chat"}})
        print(f"  user: {question}\n  assistant: {answer.text}")


def with_langgraph(store: MemoryStore, model: Any) -> None:
    """2. The current way: a LangGraph graph; the thread's history lives in the memory store."""

    def chat(state: MessagesState, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        thread = config["configurable"]["thread_id"]
        history = MemoryChatMessageHistory(store, namespace="alice", session_id=thread)
        new = state["messages"]
        messages = [SystemMessage(SYSTEM), *history.messages, *new]
        print(f"  (the model sees {len(messages)} messages)")
        answer = model.invoke(messages)
        history.add_messages([*new, answer])  # the turn, in one commit
        return {"messages": [answer]}

    graph = StateGraph(MessagesState).add_node("chat", chat).add_edge(START, "chat").compile()
    for question in QUESTIONS:
        out = graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "graph-chat"}})
        print(f"  user: {question}\n  assistant: {out['messages'][-1].text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store folder (default: a temporary one, removed at exit)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(args.store or tmp) as store:
        for title, run, session in [
            ("1. RunnableWithMessageHistory (deprecated upstream)", with_runnable_history, "runnable-chat"),
            ("2. LangGraph (current)", with_langgraph, "graph-chat"),
        ]:
            model, name = langchain_chat_model(ANSWERS)
            print(f"{title} with {name}")
            run(store, model)
            kept = MemoryChatMessageHistory(store, namespace="alice", session_id=session).messages
            print(f"  session {session!r} holds {len(kept)} messages: {[m.type for m in kept]}\n")


if __name__ == "__main__":
    main()
