"""Copies folded into one line: a chat says the same thing many times ("ok", a pasted reminder).

The block keeps the best-scored line of each text (same words: :func:`line_facts`' key) and notes
how often it was said and over which days, so the agent sees one line and still knows it was
repeated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memory_retrievers.models import Memory
from memory_retrievers.text.lines import line_facts

__all__ = ["fold_copies", "note_copies"]


def fold_copies(
    kept: list[int], ids: Sequence[str], memories: Mapping[str, Memory]
) -> tuple[list[int], dict[str, tuple[str, ...]], list[int]]:
    """Keep the first (best) candidate of each line.

    Args:
        kept: The kept candidates (indices into ``ids``), best first.
        ids: Every candidate's memory id.
        memories: The candidates' memories, by id.

    Returns:
        The kept candidates, each kept one's copies (oldest first), and the folded candidates.
    """
    first: dict[str, str] = {}
    out: list[int] = []
    copies: dict[str, list[str]] = {}
    folded: list[int] = []
    for i in kept:
        id_ = ids[i]
        original = first.setdefault(line_facts(memories[id_].text).key, id_)
        if original == id_:
            out.append(i)
        else:
            copies.setdefault(original, []).append(id_)
            folded.append(i)
    ordered = {
        k: tuple(sorted(v, key=lambda m: (memories[m].created_at is None, memories[m].created_at, m)))
        for k, v in copies.items()
    }
    return out, ordered, folded


def note_copies(notes: dict[str, str], copies: Mapping[str, tuple[str, ...]], memories: Mapping[str, Memory]) -> None:
    """Add to each kept line's note how often it was said, and when (in place)."""
    for id_, others in copies.items():
        said = _said(memories[id_], [memories[o] for o in others])
        notes[id_] = f"{notes[id_]}; {said}" if id_ in notes else said


def _said(kept: Memory, others: Sequence[Memory]) -> str:
    """The note of a line said several times: how often, and over which days."""
    days = sorted(m.created_at.date() for m in (kept, *others) if m.created_at is not None)
    times = f"said {1 + len(others)} times"
    if not days:
        return times
    if days[0] == days[-1]:
        return f"{times} on {days[0].isoformat()}"
    return f"{times}, {days[0].isoformat()} to {days[-1].isoformat()}"
