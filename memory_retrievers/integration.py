"""Building blocks for framework adapters (the LangChain and LlamaIndex packages use only these).

An adapter turns a framework's objects into memories and back. What every adapter needs, and used
to copy, lives here: running the async core from sync framework hooks, storing chat messages as
``message`` memories in their order, reading or deleting everything of a session page by page, and
the checks and conversions the core applies to its own arguments.

Everything here is public API: stable across minor versions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from ._loop import run_sync
from ._sequence import next_stamp
from .config import validated
from .embeddings import WrappedEmbedder, unit_rows
from .filters import MemoryFilter, coerce_filter
from .llm import as_llm
from .models import Memory, MemoryKind
from .results import render_line
from .store import MemoryStore
from .validation import MAX_QUERY_CHARS, check_key

__all__ = [
    "MAX_QUERY_CHARS",
    "PAGE_SIZE",
    "WrappedEmbedder",
    "aall_memories",
    "adelete_ids",
    "aiter_memories",
    "as_llm",
    "chat_record",
    "chat_text",
    "check_key",
    "clean_text",
    "coerce_filter",
    "next_stamp",
    "ordered_messages",
    "query_text",
    "render_line",
    "run_sync",
    "unit_rows",
    "validated",
]

#: Memories read or deleted per call by the paging helpers.
PAGE_SIZE = 1000


def clean_text(text: str, max_chars: int) -> str:
    """``text`` made storable: NUL replaced by U+FFFD, lone surrogates by ``?``, cut to ``max_chars``.

    For the *searchable* text of framework objects whose exact form is kept elsewhere (in
    metadata), so cleaning loses nothing the adapter returns.
    """
    cleaned = text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return cleaned[:max_chars]


def query_text(text: str) -> str:
    """A chat message cut to the longest query recall accepts (:data:`MAX_QUERY_CHARS`)."""
    return text[:MAX_QUERY_CHARS]


def chat_text(role: str, body: str, *, max_chars: int, kind: str | None = None) -> str:
    """What recall searches for a chat message: ``"role: body"``, cleaned and cut.

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


async def aiter_memories(
    store: MemoryStore,
    namespace: str,
    *,
    filter: MemoryFilter | Mapping[str, Any] | None = None,
    newest_first: bool = True,
) -> AsyncIterator[list[Memory]]:
    """Every memory of a namespace matching ``filter``, a page (:data:`PAGE_SIZE`) at a time."""
    offset = 0
    while True:
        page = await store.alist(namespace, filter=filter, limit=PAGE_SIZE, offset=offset, newest_first=newest_first)
        if page:
            yield page
        if len(page) < PAGE_SIZE:
            return
        offset += PAGE_SIZE


async def aall_memories(
    store: MemoryStore,
    namespace: str,
    *,
    filter: MemoryFilter | Mapping[str, Any] | None = None,
    newest_first: bool = False,
) -> list[Memory]:
    """Every memory of a namespace matching ``filter`` (oldest first by default)."""
    out: list[Memory] = []
    async for page in aiter_memories(store, namespace, filter=filter, newest_first=newest_first):
        out.extend(page)
    return out


async def adelete_ids(store: MemoryStore, namespace: str, ids: Sequence[str]) -> int:
    """Delete ``ids`` (those already gone are skipped), :data:`PAGE_SIZE` per commit; returns the count."""
    deleted = 0
    for start in range(0, len(ids), PAGE_SIZE):
        deleted += await store.adelete(list(ids[start : start + PAGE_SIZE]), namespace=namespace, missing_ok=True)
    return deleted
