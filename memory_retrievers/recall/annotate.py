"""Notes shown under a memory in the context block: the facts folded into it, and contradictions.

A memory formed from a conversation can carry two relations the model should see, not just the
ranking: the facts extracted from a chat turn (folded into it by provenance folding), and the
memories it contradicts (``metadata["contradicts"]``, set by memory formation's zero-LLM scan).
Each becomes a short note on the memory's line; the note's tokens count against the budget like
the line itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memory_retrievers.recall.fusion import FusedHit
from memory_retrievers.recall.source import RecallSource

__all__ = ["MAX_NOTE_TEXT", "notes_for"]

#: Characters of another memory's text quoted in a note.
MAX_NOTE_TEXT = 200


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return f'"{flat[:MAX_NOTE_TEXT]}{"…" if len(flat) > MAX_NOTE_TEXT else ""}"'


async def notes_for(
    fused: Sequence[FusedHit], folded: Mapping[str, tuple[str, ...]], source: RecallSource
) -> dict[str, str]:
    """The note of each candidate that has one (candidates without a note are absent)."""
    candidates = {h.id for h in fused}
    parts: dict[str, list[str]] = {}
    for target, facts in folded.items():
        if target in candidates:
            parts.setdefault(target, []).extend(f"fact: {_quote(source.memory(f).text)}" for f in facts)
    claims: dict[str, list[str]] = {}
    for hit in fused:
        named = source.memory(hit.id).metadata.get("contradicts")
        if isinstance(named, list):
            claims[hit.id] = [x for x in named if isinstance(x, str)]
    targets = sorted({x for xs in claims.values() for x in xs})
    live = set(await source.fetch(targets)) if targets else set()
    for later, earlier in claims.items():
        for other in earlier:
            if other not in live:
                continue  # deleted, superseded or filtered out: nothing to weigh against
            parts.setdefault(later, []).append(f"contradicts an earlier memory: {_quote(source.memory(other).text)}")
            if other in candidates:
                quote = _quote(source.memory(later).text)
                parts.setdefault(other, []).append(f"contradicted by a later memory: {quote}")
    return {id_: "; ".join(notes) for id_, notes in parts.items()}
