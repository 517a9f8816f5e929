"""A LlamaIndex chat engine whose memory spans conversations (``RecallMemory``).

Why this example: ``memory=`` in LlamaIndex chat engines and agents usually holds one
conversation. ``RecallMemory`` keeps the recent chat of this session (persisted on LanceDB, so it
survives restarts) and adds what the user said in earlier sessions, recalled for the new message.
Offline with ``MockLLM``; set ``MEMORY_RETRIEVERS_LLAMA_LLM=openai:gpt-4o-mini`` for a real model.

    python examples/llama_index_chat_memory.py [--store PATH]
"""

from __future__ import annotations

import argparse
import tempfile

from _models import llama_index_llm
from llama_index.core.chat_engine import SimpleChatEngine

from llama_index.memory_retrievers import RecallMemory
from memory_retrievers import MemoryStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store folder (default: a temporary one, removed at exit)")
    args = parser.parse_args()
    llm, name = llama_index_llm()
    print(f"llm: {name}")
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(args.store or tmp) as store:
        for session, message in [("monday", "My sister Carla lives in Lisbon."), ("friday", "Where does Carla live?")]:
            memory = RecallMemory.from_defaults(store=store, namespace="alice", session_id=session)
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
            print(f"\n[{session}] user: {message}")
            print(f"[{session}] assistant: {str(engine.chat(message)).strip()[:160]}")
            context = memory.get(message)
            if context and context[0].role.value == "system":
                print(f"[{session}] memory recalled for the model:\n  " + context[0].content.replace("\n", "\n  "))
        print(f"\nstored messages: {store.count('alice')}")


if __name__ == "__main__":
    main()
