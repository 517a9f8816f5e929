"""A LangChain 1.x agent with long-term memory across conversations (``MemoryMiddleware``).

Why this example: agents forget everything between threads. The middleware recalls what matters
before each model call (a budgeted block in the system message, never piled into the chat state)
and stores what the user said in each finished turn, so a new thread can use it. Offline
with LangChain's fake chat model; set ``MEMORY_RETRIEVERS_CHAT_MODEL`` for a real model.

    python examples/langchain_agent_memory.py [--store PATH]
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from _models import langchain_chat_model
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import HumanMessage

from langchain_memory_retrievers import MemoryMiddleware
from memory_retrievers import MemoryStore


class ShowPrompt(AgentMiddleware):
    """Print the system message the model receives, so you can see the recalled memories."""

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        if request.system_message is not None:
            shown = str(request.system_message.text).replace("\n", "\n    ")
            print(f"  system message seen by the model:\n    {shown}")
        return handler(request)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store folder (default: a temporary one, removed at exit)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(args.store or tmp) as store:
        model, name = langchain_chat_model(
            ["Lovely, I'll remember that your sister Carla lives in Lisbon.", "Carla lives in Lisbon."]
        )
        print(f"model: {name}")
        agent = create_agent(
            model,
            tools=[],
            system_prompt="You are a friendly assistant.",
            middleware=[MemoryMiddleware(store, namespace="alice", k=3, token_budget=400), ShowPrompt()],
        )
        for thread, question in [("monday", "My sister Carla lives in Lisbon."), ("friday", "Where does Carla live?")]:
            print(f"\n[thread {thread}] user: {question}")
            out = agent.invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": thread}})
            print(f"[thread {thread}] agent: {out['messages'][-1].text}")
        print(f"\nstored memories (the user's turns): {store.count('alice')}")


if __name__ == "__main__":
    main()
