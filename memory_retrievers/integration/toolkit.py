"""Building blocks for framework adapters (the LangChain and LlamaIndex packages use only these).

An adapter turns a framework's objects into memories and back. What every adapter needs, and used
to copy, lives here: running the async core from sync framework hooks, storing chat messages as
``message`` memories in their order, reading or deleting everything of a session page by page
(:mod:`memory_retrievers.store.paging`), the checks and conversions the core applies to its own
arguments, and the adapter base (:mod:`memory_retrievers.integration.adapter`) that does an adapter's wiring
once:

- :class:`StoreBinding` / :class:`RecallBinding` for adapters that are plain classes: the store
  checked and registered, keys checked against its limit, one shared
  :class:`~memory_retrievers.MemoryRetriever` that every namespace is recalled through.
- :class:`AdapterModel` for adapters that are pydantic models: the same, plus the ``store`` field
  (a serialised store reopened), the ``recall_config``/``llm``/``former``/key fields checked, and
  copies (``copy``, ``deepcopy``, ``model_copy``) and ``pickle`` that share the store.
- :data:`DEFAULT_K` and :data:`DEFAULT_TOKEN_BUDGET`: the defaults every adapter shares, those of
  :class:`~memory_retrievers.RecallConfig`.
- The store handle helpers (:mod:`memory_retrievers.integration.handles`): :func:`check_arguments`,
  :func:`check_store_key`, :func:`store_spec`, :func:`open_store`, :func:`register`,
  :func:`deepcopy_memo`, :func:`check_former`.

Nothing here imports a framework: the core never depends on LangChain or LlamaIndex.

Everything here is public API: stable across minor versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_retrievers.config import validated
from memory_retrievers.embeddings import WrappedEmbedder, unit_rows
from memory_retrievers.filters import coerce_filter
from memory_retrievers.integration.adapter import (
    ADAPTER_MODEL_CONFIG,
    DEFAULT_K,
    DEFAULT_TOKEN_BUDGET,
    AdapterModel,
    RecallBinding,
    StoreBinding,
)
from memory_retrievers.integration.handles import (
    SPEC_KEY,
    check_arguments,
    check_former,
    check_store_key,
    deepcopy_memo,
    is_store_spec,
    open_store,
    register,
    store_spec,
)
from memory_retrievers.llm import as_llm
from memory_retrievers.models import Memory, MemoryKind
from memory_retrievers.recall.results import render_line
from memory_retrievers.runtime.loop import run_sync
from memory_retrievers.runtime.sequence import next_stamp
from memory_retrievers.store.paging import PAGE_SIZE, aall_memories, adelete_ids, aiter_memories
from memory_retrievers.validation import MAX_QUERY_CHARS, check_key

__all__ = [
    "ADAPTER_MODEL_CONFIG",
    "DEFAULT_K",
    "DEFAULT_TOKEN_BUDGET",
    "AdapterModel",
    "RecallBinding",
    "StoreBinding",
    "MAX_QUERY_CHARS",
    "PAGE_SIZE",
    "SPEC_KEY",
    "WrappedEmbedder",
    "aall_memories",
    "adelete_ids",
    "aiter_memories",
    "as_llm",
    "chat_record",
    "chat_text",
    "check_arguments",
    "check_former",
    "check_key",
    "check_store_key",
    "clean_text",
    "coerce_filter",
    "deepcopy_memo",
    "is_store_spec",
    "next_stamp",
    "open_store",
    "ordered_messages",
    "query_text",
    "register",
    "render_line",
    "run_sync",
    "store_spec",
    "unit_rows",
    "validated",
]


def clean_text(text: str, max_chars: int | None) -> str:
    """``text`` made storable: NUL replaced by U+FFFD, lone surrogates by ``?``, cut to ``max_chars``.

    For the *searchable* text of framework objects whose exact form is kept elsewhere (in
    metadata), so cleaning loses nothing the adapter returns. ``max_chars=None`` cuts nothing: a
    chat message is stored whole, and one over ``StoreConfig.max_text_chars`` is refused by the
    store, as any memory is.
    """
    cleaned = text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return cleaned if max_chars is None else cleaned[:max_chars]


def query_text(text: str, max_chars: int) -> str:
    """A chat message as a recall query, cut to ``max_chars``.

    ``max_chars`` is a retriever's ``config.max_query_chars``, so an adapter never fails on a long
    message. Recall itself searches a long query by its opening and end
    (``RecallConfig.searched_query_chars``).
    """
    return text[:max_chars]


def chat_text(role: str, body: str, *, max_chars: int | None, kind: str | None = None) -> str:
    """What recall searches for a chat message: ``"role: body"``, cleaned and cut (``None``: whole).

    A message without text becomes ``"role: [kind message without text]"`` (``kind`` defaults to
    the role), so tool calls and images still leave a findable turn.
    """
    if not body.strip():
        body = f"[{kind or role} message without text]"
    return clean_text(f"{role}: {body}", max_chars)


def chat_record(
    *,
    text: str,
    role: str,
    session_id: str | None,
    payload_key: str,
    payload: Any,
    seq_key: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A store record for one chat message: kind ``message`` (no dedup, gets its turns' context).

    The exact framework message is kept in ``metadata[payload_key]`` and a process-wide increasing
    stamp in ``metadata[seq_key]``, so :func:`ordered_messages` restores the order it was added in
    even when several messages share a timestamp.
    """
    return {
        "text": text,
        "kind": MemoryKind.MESSAGE,
        "session_id": session_id,
        "metadata": {**(extra or {}), "role": role, seq_key: next_stamp(), payload_key: payload},
    }


def ordered_messages(memories: Sequence[Memory], *, payload_key: str, seq_key: str) -> list[Memory]:
    """The memories that hold a stored message, in the order the messages were added."""
    stored = [m for m in memories if payload_key in m.metadata]
    stored.sort(key=lambda m: (m.metadata.get(seq_key, 0), m.created_at))
    return stored
