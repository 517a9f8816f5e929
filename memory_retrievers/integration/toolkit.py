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
  (a serialised store reopened), the ``recall_config``/``channels``/``llm``/``former``/key fields
  checked (:data:`AdapterChannels` declares ``channels``), and
  copies (``copy``, ``deepcopy``, ``model_copy``) and ``pickle`` that share the store.
- :data:`DEFAULT_K` and :data:`DEFAULT_TOKEN_BUDGET`: the defaults every adapter shares, those of
  :class:`~memory_retrievers.RecallConfig`.
- The block a chat adapter hands its model (:mod:`memory_retrievers.integration.window`):
  :class:`ModelWindow` (the query and what the prompt already shows), :func:`recall_window` /
  :func:`arecall_window` and :func:`headed_block`; the memory inspector models the adapters with
  the same functions.
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
    AdapterChannels,
    AdapterModel,
    RecallBinding,
    StoreBinding,
)
from memory_retrievers.integration.chat import chat_text, clean_text, query_text
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
from memory_retrievers.integration.window import (
    MIDDLEWARE_HEADER,
    ModelWindow,
    arecall_window,
    headed_block,
    recall_window,
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
    "MIDDLEWARE_HEADER",
    "AdapterChannels",
    "AdapterModel",
    "ModelWindow",
    "RecallBinding",
    "StoreBinding",
    "MAX_QUERY_CHARS",
    "PAGE_SIZE",
    "SPEC_KEY",
    "WrappedEmbedder",
    "aall_memories",
    "adelete_ids",
    "aiter_memories",
    "arecall_window",
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
    "headed_block",
    "is_store_spec",
    "next_stamp",
    "open_store",
    "ordered_messages",
    "query_text",
    "recall_window",
    "register",
    "render_line",
    "run_sync",
    "store_spec",
    "unit_rows",
    "validated",
]


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
