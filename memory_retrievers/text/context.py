"""Pure helper for the ``context`` field of chat turns: the neighbouring turns of a session."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NEIGHBOUR_CHARS", "window_contexts"]


#: Characters a neighbouring turn lends a turn's context: the part nearest the turn (the end of an
#: earlier turn, the start of a later one). Context finds a short turn ("yes, the blue one") by what
#: surrounds it; the far paragraphs of a long reply say nothing about it, and LongMemEval-length
#: replies copied whole into four neighbours' contexts made every full-text search several times
#: slower (benchmarks/long_turns.py). LoCoMo's longest turn is 496 characters: untouched.
NEIGHBOUR_CHARS = 1_000


def window_contexts(turns: Sequence[str], window: int, *, only: range | None = None) -> dict[int, str]:
    """Context text for turns of one session, in conversation order.

    The context of turn ``i`` is turns ``i-window .. i-1`` then ``i+1 .. i+window``, one per line,
    each cut to its :data:`NEIGHBOUR_CHARS` nearest turn ``i``; the turn itself is left out (it is
    the memory's own text).

    Args:
        turns: The session's turn texts, oldest first.
        window: Turns taken on each side; 0 gives empty contexts.
        only: Indices to compute (default: all).

    Returns:
        Mapping from turn index to its context ("" when it has no neighbours).
    """
    indices = only if only is not None else range(len(turns))
    out: dict[int, str] = {}
    for i in indices:
        before = turns[max(0, i - window) : i] if window else []
        after = turns[i + 1 : i + 1 + window] if window else []
        out[i] = "\n".join([*(t[-NEIGHBOUR_CHARS:] for t in before), *(t[:NEIGHBOUR_CHARS] for t in after)])
    return out
