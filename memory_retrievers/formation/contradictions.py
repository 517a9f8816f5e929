"""A negation-aware contradiction scan that needs no LLM (pure functions).

Two statements contradict when they say the same thing with opposite polarity: "Ana likes jazz" /
"Ana does not like jazz", "Bo is vegetarian" / "Bo is no longer vegetarian", "Cy loves
mornings" / "Cy hates mornings". A statement's *core* is its content words with negations removed
and a few antonyms folded onto one word (hate → love, flipping polarity); a pair contradicts when
polarities differ and the cores overlap by at least ``min_overlap`` (Jaccard), with at least
``min_core`` words each. It is deliberately conservative: word order and paraphrase are not
understood, so it misses contradictions rather than inventing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_retrievers.text.words import NEGATIONS, meaning_words, pairs_sharing_a_word, strip_speaker

__all__ = ["Contradiction", "contradiction_core", "find_contradictions"]

# Each word maps to (the word it is folded onto, or None to drop it; whether it flips polarity).
_ANTONYMS: dict[str, tuple[str | None, bool]] = {
    "hate": ("love", True),
    "hates": ("love", True),
    "hated": ("love", True),
    "loves": ("love", False),
    "loved": ("love", False),
    "dislike": ("like", True),
    "dislikes": ("like", True),
    "disliked": ("like", True),
    "likes": ("like", False),
    "liked": ("like", False),
    "unable": ("able", True),
    "unhappy": ("happy", True),
    "stopped": (None, True),
    "quit": (None, True),
    # "no longer X" and "not X anymore" are plain negations of "X".
    "longer": (None, False),
    "anymore": (None, False),
    "still": (None, False),
}
# Function words that carry no claim ("does not like" = "like").
_AUXILIARIES = frozenset("do does did is are was were be been am has have had can could will would".split())


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Two texts that say the same thing with opposite polarity.

    Attributes:
        first: Index of the first text in the scanned sequence.
        second: Index of the second (always greater than ``first``).
        overlap: Jaccard overlap of the two cores, in (0, 1].
        shared: The core words both share, sorted.
    """

    first: int
    second: int
    overlap: float
    shared: tuple[str, ...]


def contradiction_core(text: str) -> tuple[frozenset[str], bool]:
    """A text's core words and polarity (``True`` = negated an odd number of times)."""
    negated = False
    core: set[str] = set()
    for word in meaning_words(strip_speaker(text)):
        if word in NEGATIONS:
            negated = not negated
            continue
        base, flips = _ANTONYMS.get(word, (word, False))
        if flips:
            negated = not negated
        if base is not None and base not in _AUXILIARIES:
            core.add(base)
    return frozenset(core), negated


def find_contradictions(texts: Sequence[str], *, min_overlap: float = 0.75, min_core: int = 2) -> list[Contradiction]:
    """Every pair of ``texts`` that contradict, best overlap first.

    Candidate pairs come from an inverted index of core words, so a scan of thousands of texts
    compares only texts that share a word.
    """
    cores = [contradiction_core(t) for t in texts]
    found: list[Contradiction] = []
    for i, j in pairs_sharing_a_word([core for core, _ in cores], min_core):
        (core, negated), (other, other_negated) = cores[i], cores[j]
        if other_negated == negated:
            continue
        shared = core & other
        overlap = len(shared) / len(core | other)
        if overlap >= min_overlap:
            found.append(Contradiction(i, j, round(overlap, 3), tuple(sorted(shared))))
    found.sort(key=lambda c: (-c.overlap, c.first, c.second))
    return found
