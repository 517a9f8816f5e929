"""The LLM plug-in: a minimal text-in/text-out protocol, prompts and parsing.

Prompts for query expansion and HyDE, and the parsing of their answers. Framework adapters wrap
LangChain / LlamaIndex models in the protocol.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from memory_retrievers.errors import ConfigError
from memory_retrievers.runtime.plugins import pool as plugin_pool

__all__ = ["LLM", "CallableLLM", "as_llm", "expansion_prompt", "hyde_prompt", "parse_rewrites"]


@runtime_checkable
class LLM(Protocol):
    """Anything that completes a prompt, synchronously and asynchronously."""

    def complete(self, prompt: str) -> str:
        """Return the model's text answer to ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        ...


class CallableLLM:
    """Wrap a plain function ``prompt -> str`` (sync or async) as an :class:`LLM`.

    A sync function runs in a worker thread for :meth:`acomplete`; an async one is run on a private
    loop for :meth:`complete`.
    """

    def __init__(self, fn: Callable[[str], str] | Callable[[str], Awaitable[str]]) -> None:
        if not callable(fn):
            raise ConfigError(f"llm must be callable or implement complete/acomplete, got {type(fn).__name__}")
        self._fn = fn
        call = type(fn).__call__ if not inspect.isfunction(fn) and not inspect.ismethod(fn) else fn
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)

    def __repr__(self) -> str:
        return f"CallableLLM({getattr(self._fn, '__name__', type(self._fn).__name__)})"

    def complete(self, prompt: str) -> str:
        """Call the function (async functions run to completion on a private loop)."""
        if self._is_async:
            from memory_retrievers.runtime.loop import run_sync

            return str(run_sync(self._fn(prompt)))  # type: ignore[arg-type]
        return str(self._fn(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Await the function, or run a sync one on the library's LLM threads.

        A sync call that never returns keeps its thread, not one the rest of the process needs:
        see :mod:`memory_retrievers.runtime.plugins`.
        """
        if self._is_async:
            return str(await self._fn(prompt))  # type: ignore[misc]
        return str(await plugin_pool("llm").run(self._fn, prompt))


def as_llm(obj: Any) -> LLM | None:
    """Accept ``None``, an :class:`LLM`, or a callable."""
    if obj is None or isinstance(obj, LLM):
        return obj
    if callable(obj):
        return CallableLLM(obj)
    raise ConfigError(
        f"llm must implement complete(prompt)/acomplete(prompt) or be a callable, got {type(obj).__name__}; "
        "for LangChain or LlamaIndex models use the adapter packages"
    )


_EXPANSION_PROMPTS = {
    "preference": (
        "You help search a user's long-term memory for their tastes and preferences.\n"
        "Rewrite the question below as {n} different short search queries that would match what the "
        "user once said about liking, disliking or preferring something (use first-person phrasing "
        "and synonyms).\nQuestion: {query}\nWrite one query per line, nothing else."
    ),
    "temporal": (
        "You help search a user's long-term memory for when things happened.\n"
        "Rewrite the question below as {n} different short search queries that would match the "
        "memory of the event itself (name the event, the people and places; mention dates or "
        "periods if the question does).\nQuestion: {query}\nWrite one query per line, nothing else."
    ),
    "general": (
        "You help search a user's long-term memory.\n"
        "Rewrite the question below as {n} different short search queries using other words, "
        "synonyms and the likely wording of the memory that answers it.\n"
        "Question: {query}\nWrite one query per line, nothing else."
    ),
}

_HYDE_PROMPT = (
    "Write one short message, as the user would have said it in a past conversation, that answers "
    "the question below. Invent plausible specifics; do not explain.\nQuestion: {query}\nMessage:"
)


def expansion_prompt(query: str, intent: str, n: int) -> str:
    """The rewrite prompt for an intent (``preference``, ``temporal`` or ``general``)."""
    return _EXPANSION_PROMPTS.get(intent, _EXPANSION_PROMPTS["general"]).format(query=query, n=n)


def hyde_prompt(query: str) -> str:
    """The hypothetical-memory prompt."""
    return _HYDE_PROMPT.format(query=query)


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|query\s*\d*\s*:)\s*", re.IGNORECASE)


def parse_rewrites(answer: str, query: str, n: int, *, max_chars: int = 300) -> list[str]:
    """Up to ``n`` distinct rewrites from an LLM answer.

    One per line; bullets, numbers and quotes stripped; the original query and empty or
    over-long lines dropped.
    """
    out: list[str] = []
    seen = {query.strip().casefold()}
    for line in answer.splitlines():
        text = _BULLET.sub("", line).strip().strip('"').strip("'").strip()
        if not text or len(text) > max_chars or text.casefold() in seen or "\x00" in text:
            continue
        seen.add(text.casefold())
        out.append(text)
        if len(out) == n:
            break
    return out
