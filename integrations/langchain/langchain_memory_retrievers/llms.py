"""Any LangChain chat model, LLM or Runnable as the core's :class:`~memory_retrievers.LLM`.

Query expansion and HyDE call the model through :class:`LangChainLLM`. When the call happens
inside a :class:`~langchain_memory_retrievers.RecallRetriever` run, the model run is nested under
the retriever run in traces (callbacks are handed down through a context variable, which the core
carries into its own event loop).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.runnables.config import patch_config

from memory_retrievers import LLM, ConfigError
from memory_retrievers.integration import as_llm

__all__ = ["LangChainLLM", "to_memory_llm"]

# The callbacks of the retriever run in progress, so model calls made during recall nest under it.
_parent_callbacks: ContextVar[BaseCallbackManager | None] = ContextVar("memory_retrievers_lc_callbacks", default=None)


@contextlib.contextmanager
def child_callbacks(callbacks: BaseCallbackManager) -> Iterator[None]:
    """Make model calls inside this block children of ``callbacks`` (used by the retriever)."""
    token = _parent_callbacks.set(callbacks)
    try:
        yield
    finally:
        _parent_callbacks.reset(token)


def message_text(output: Any) -> str:
    """The text of a model answer: a message's text content, or a plain string."""
    if isinstance(output, BaseMessage):
        return str(output.text)
    if isinstance(output, str):
        return output
    raise TypeError(
        f"the LangChain model returned {type(output).__name__}; expansion and HyDE need text: end a "
        "Runnable chain with a chat model, an LLM or StrOutputParser()"
    )


class LangChainLLM:
    """Wrap a LangChain chat model, LLM or any ``Runnable`` (prompt -> text) as a core LLM.

    Args:
        model: e.g. ``ChatOpenAI(...)``, ``OllamaLLM(...)`` or ``prompt | model | StrOutputParser()``.
            A chat model receives the prompt as one human message.
        config: A ``RunnableConfig`` for every call (tags, metadata, ``max_concurrency``...).

    Raises:
        ConfigError: ``model`` is not a LangChain ``Runnable``.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel          # doctest: +SKIP
        >>> llm = LangChainLLM(FakeListChatModel(responses=["dark theme", "Alice likes dark mode"]))
        >>> MemoryRetriever(store, namespace="alice", llm=llm)
    """

    def __init__(self, model: Runnable[Any, Any], *, config: RunnableConfig | None = None) -> None:
        if not isinstance(model, Runnable):
            raise ConfigError(
                f"model must be a LangChain Runnable (chat model, LLM or chain), got {type(model).__name__}"
            )
        self._model = model
        self._config = ensure_config(config)

    def __repr__(self) -> str:
        return f"LangChainLLM({self._model.get_name()})"

    @property
    def model(self) -> Runnable[Any, Any]:
        """The wrapped LangChain model."""
        return self._model

    def _call_config(self) -> RunnableConfig:
        callbacks = _parent_callbacks.get()
        if callbacks is None:
            return self._config
        return patch_config(self._config, callbacks=callbacks)

    def complete(self, prompt: str) -> str:
        """Invoke the model on ``prompt`` and return its text answer."""
        return message_text(self._model.invoke(prompt, self._call_config()))

    async def acomplete(self, prompt: str) -> str:
        """Natively async: ``ainvoke`` on the model."""
        return message_text(await self._model.ainvoke(prompt, self._call_config()))


def to_memory_llm(llm: Any) -> LLM | None:
    """Accept ``None``, a LangChain ``Runnable`` (wrapped), or anything the core accepts."""
    if isinstance(llm, Runnable):
        return LangChainLLM(llm)
    return as_llm(llm)
