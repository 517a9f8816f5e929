"""Pick the chat model for the framework examples: offline fakes unless you configure a real one.

Set ``MEMORY_RETRIEVERS_CHAT_MODEL`` to a LangChain ``init_chat_model`` spec (for example
``openai:gpt-4o-mini``, with ``langchain-openai`` installed and ``OPENAI_API_KEY`` set) to run the
LangChain examples against a real model. The LlamaIndex examples read ``MEMORY_RETRIEVERS_LLAMA_LLM``
(``openai:gpt-4o-mini`` with ``llama-index-llms-openai`` installed).
"""

from __future__ import annotations

import os
from typing import Any


def langchain_chat_model(offline_answers: list[str]) -> tuple[Any, str]:
    """A real chat model if configured, else LangChain's fake model replaying ``offline_answers``."""
    spec = os.environ.get("MEMORY_RETRIEVERS_CHAT_MODEL")
    if spec:
        from langchain.chat_models import init_chat_model

        return init_chat_model(spec), spec
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    fake = FakeMessagesListChatModel(responses=[AIMessage(a) for a in offline_answers])
    return fake, "LangChain FakeMessagesListChatModel (offline; set MEMORY_RETRIEVERS_CHAT_MODEL for a real one)"


def llama_index_llm() -> tuple[Any, str]:
    """A real LlamaIndex LLM if configured, else ``MockLLM`` (which echoes part of its prompt)."""
    spec = os.environ.get("MEMORY_RETRIEVERS_LLAMA_LLM")
    if spec:
        provider, _, model = spec.partition(":")
        if provider != "openai":
            raise SystemExit(f"MEMORY_RETRIEVERS_LLAMA_LLM: only 'openai:<model>' is wired here, got {spec!r}")
        from llama_index.llms.openai import OpenAI  # pip install llama-index-llms-openai

        return OpenAI(model=model), spec
    from llama_index.core.llms.mock import MockLLM

    return MockLLM(max_tokens=24), "LlamaIndex MockLLM (offline; set MEMORY_RETRIEVERS_LLAMA_LLM for a real one)"
