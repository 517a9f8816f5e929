"""An offline fuzzy-duplicate scan: Jaccard overlap and containment of words (pure functions).

The write path only merges exact and near-exact duplicates (:mod:`memory_retrievers.text.dedup`), on
purpose: it must never lose a changed number or a negation. Over months a store still gathers
paraphrases ("Ana likes jazz" / "Ana really likes jazz music"). This scan finds them for review: a
pair is reported when the word sets overlap by ``min_jaccard`` or one text's words are (nearly)
all inside the other's (``min_containment``) — but never when the two differ in a number or in
polarity, which is a change, not a duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory_retrievers.formation.contradictions import contradiction_core
from memory_retrievers.text.words import meaning_words, pairs_sharing_a_word, strip_speaker

__all__ = ["FuzzyDuplicate", "find_fuzzy_duplicates"]

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


@dataclass(frozen=True, slots=True)
class FuzzyDuplicate:
    """Two texts that say nearly the same.

    Attributes:
        keep: Index of the text to keep (the one with more words: it contains the other's).
        drop: Index of the text it makes redundant.
        jaccard: Overlap of the two word sets.
        containment: Share of the shorter text's words found in the longer one.
        reason: ``"jaccard"`` or ``"containment"`` (``"substring"`` when one text holds the other).
    """

    keep: int
    drop: int
    jaccard: float
    containment: float
    reason: str


def find_fuzzy_duplicates(
    texts: Sequence[str], *, min_jaccard: float = 0.8, min_containment: float = 0.9, min_words: int = 3
) -> list[FuzzyDuplicate]:
    """Every fuzzy-duplicate pair in ``texts``, the most similar first."""
    words = [frozenset(meaning_words(strip_speaker(t))) for t in texts]
    numbers = [frozenset(_NUMBER.findall(t)) for t in texts]
    polarity = [contradiction_core(t)[1] for t in texts]
    flat = [" ".join(strip_speaker(t).casefold().split()) for t in texts]
    found: list[FuzzyDuplicate] = []
    for i, j in pairs_sharing_a_word(words, min_words):
        ws, other = words[i], words[j]
        if numbers[i] != numbers[j] or polarity[i] != polarity[j]:
            continue
        shared = len(ws & other)
        jaccard = shared / len(ws | other)
        containment = shared / min(len(ws), len(other))
        if jaccard < min_jaccard and containment < min_containment:
            continue
        keep, drop = (i, j) if (len(ws), len(flat[i])) >= (len(other), len(flat[j])) else (j, i)
        loose = "jaccard" if jaccard >= min_jaccard else "containment"
        reason = "substring" if flat[drop] in flat[keep] else loose
        found.append(FuzzyDuplicate(keep, drop, round(jaccard, 3), round(containment, 3), reason))
    found.sort(key=lambda d: (-d.containment, -d.jaccard, d.keep, d.drop))
    return found
