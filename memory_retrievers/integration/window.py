"""What a model call shows, as recall needs it, and the block a chat adapter hands the model.

A chat adapter recalls for the latest user message of the model's window and leaves out what that
window already holds (those messages are in the prompt: a stored copy of one would repeat it).
LangChain's ``MemoryMiddleware`` and LlamaIndex's ``RecallMemoryBlock`` both build their block
with :func:`arecall_window` (or :func:`recall_window`) and :func:`headed_block`; the memory
inspector's "ask as the agent would" page models them with the same functions, so what it shows
is what the model is handed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_retrievers.integration.chat import chat_text, query_text
from memory_retrievers.recall.results import CONTEXT_HEADER, RecallResult

if TYPE_CHECKING:
    from memory_retrievers.integration.adapter import RecallBinding
    from memory_retrievers.recall.retriever import MemoryRetriever

__all__ = ["MIDDLEWARE_HEADER", "ModelWindow", "arecall_window", "headed_block", "recall_window"]

MIDDLEWARE_HEADER = "Long-term memory about the user (recalled; may be outdated):"
"""The first line of the LangChain ``MemoryMiddleware``'s block in the system message (its ``header``)."""


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """A model call's window as recall needs it.

    Attributes:
        query: What to recall for: the latest user message, cut to the retriever's
            ``config.query.max_query_chars`` (:func:`~memory_retrievers.integration.query_text`).
        shown_ids: Ids of the window's messages (a stored turn keeps its message id as memory id).
        shown_texts: The window's messages as the store holds them (``"role: text"``,
            :func:`~memory_retrievers.integration.chat_text`), for messages stored under another id
            or none.
    """

    query: str
    shown_ids: frozenset[str] = frozenset()
    shown_texts: tuple[str, ...] = ()

    @classmethod
    def of_question(cls, question: str, *, max_query_chars: int, max_text_chars: int) -> ModelWindow:
        """The window of a new conversation whose only message is the user's ``question``.

        The question itself is in the prompt, so a stored copy of it (asked before, kept by
        ``remember``) is left out, as the adapters leave it out.
        """
        shown = (chat_text("user", question, max_chars=max_text_chars),)
        return cls(query_text(question, max_query_chars), frozenset(), shown)


def _arguments(window: ModelWindow, k: int | None, token_budget: int | str | None) -> dict[str, Any]:
    return {"k": k, "token_budget": token_budget, "exclude_ids": window.shown_ids, "exclude_texts": window.shown_texts}


def recall_window(
    recaller: MemoryRetriever | RecallBinding,
    window: ModelWindow,
    *,
    namespace: str,
    k: int | None,
    token_budget: int | str | None,
    **options: Any,
) -> RecallResult:
    """Recall ``window.query`` in ``namespace``, leaving out what the window shows.

    Args:
        recaller: The adapter's retriever or recall binding.
        window: The model call's window.
        namespace: Whose memories.
        k: The adapter's ``k`` (``None``: the recall config's).
        token_budget: The adapter's budget (``"config"``: the recall config's; ``None``: unlimited).
        **options: Passed to ``recall`` as they are (``now``, ``config``...).
    """
    return recaller.recall(window.query, namespace=namespace, **_arguments(window, k, token_budget), **options)


async def arecall_window(
    recaller: MemoryRetriever | RecallBinding,
    window: ModelWindow,
    *,
    namespace: str,
    k: int | None,
    token_budget: int | str | None,
    **options: Any,
) -> RecallResult:
    """Async twin of :func:`recall_window`."""
    return await recaller.arecall(window.query, namespace=namespace, **_arguments(window, k, token_budget), **options)


def headed_block(result: RecallResult, header: str | None = None) -> str:
    """The block a model is handed: ``result.to_context()``, its first line replaced by ``header`` if given.

    One header, not two: an adapter's own header line (``MemoryMiddleware(header=...)``) takes the
    place of the block's "Relevant memories" line. ``""`` when nothing was recalled.
    """
    block = result.to_context()
    if not block or header is None:
        return block
    return header + block.removeprefix(CONTEXT_HEADER)
