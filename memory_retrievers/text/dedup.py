"""When two memories are duplicates (pure functions; the table side is a LanceDB query).

Storing one memory instead of two must never lose what the caller meant, so the tests are strict:

- **Exact duplicate**: the same text up to whitespace runs inside a line and trailing spaces
  (:func:`memory_retrievers.validation.content_hash`). Case, Unicode forms and indentation count:
  ``Hunter2`` is not ``hunter2``, ``10⁵`` is not ``105``, ``Maße`` is not ``Masse``.
- **Near duplicate**: cosine similarity at or above the threshold *and* :func:`same_words`: the same
  content words in the same order, letter for letter, only stop words and punctuation aside. So a
  changed number, date, time, name or a negation is never a duplicate ("the meeting is at 3pm"
  after "at 2pm"; "I like it" after "I don't like it").
- Either way only within one **scope** (:func:`scope_of`): the same kind, project and topic. A
  ``preference`` of project ``repo-b`` never duplicates a ``fact`` of ``repo-a``, and a fact never
  duplicates a chat message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memory_retrievers.text.query import STOP_WORDS

__all__ = ["Scope", "content_words", "first_duplicate_in_batch", "same_words", "scope_of"]

_TOKEN = re.compile(r"[\w'\u2019]+", re.UNICODE)
_NEGATIONS = frozenset("not no never nor none nobody nothing nowhere neither without cannot".split())
# Besides the stop words: "every" reads as "all" and "each", which are stop words.
_IGNORED = STOP_WORDS | {"every"}

#: What a duplicate must share: kind, project and topic.
Scope = tuple[str, str | None, str | None]


def scope_of(record: Mapping[str, Any]) -> Scope:
    """The duplicate scope of a validated record or a stored row."""
    kind = record["kind"]
    return (getattr(kind, "value", kind), record.get("project"), record.get("topic"))


def content_words(text: str) -> tuple[str, ...]:
    """The words that carry a text's meaning, in order and as written.

    Stop words are dropped, except negations ("not", "no", "never", and every "…n't"), which flip
    a meaning and must be kept. A plain plural "s" is dropped ("editors" reads as "editor"); case,
    digits and every other letter count.
    """
    out = []
    for raw in _TOKEN.findall(text):
        word = raw.replace("\u2019", "'").strip("'")
        low = word.casefold()
        if word and (low not in _IGNORED or low in _NEGATIONS or low.endswith("n't")):
            if len(word) >= 4 and word.isalpha() and word.endswith("s") and not word.endswith("ss"):
                word = word[:-1]
            out.append(word)
    return tuple(out)


def _shape(text: str) -> tuple[tuple[int, tuple[str, ...]], ...] | tuple[str, ...]:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return content_words(text)
    # Several lines (code, lists): each line's indentation is part of what it says.
    return tuple((len(line) - len(line.lstrip()), content_words(line)) for line in lines)


def same_words(a: str, b: str) -> bool:
    """Whether two texts say the same thing word for word (see the module docstring).

    Texts of several lines must also match line by line, indentation included (code).
    """
    return _shape(a) == _shape(b)


def first_duplicate_in_batch(
    hashes: Sequence[str],
    vectors: np.ndarray,
    candidates: Sequence[bool],
    threshold: float | None,
    *,
    texts: Sequence[str],
    scopes: Sequence[Scope],
) -> list[tuple[int, float] | None]:
    """For each row, the earliest *earlier* candidate row it duplicates, with the similarity.

    Args:
        hashes: Content hash per row; equal hashes are exact duplicates (similarity 1.0).
        vectors: L2-normalised vectors, one row each.
        candidates: Which rows take part in deduplication (exempt kinds do not).
        threshold: Cosine similarity for near duplicates, or ``None`` for exact only.
        texts: The rows' texts (a near duplicate must have :func:`same_words`).
        scopes: The rows' scopes (duplicates share one).

    Returns:
        ``None`` for rows that are not duplicates, else ``(index_of_earlier_row, similarity)``.
        A row that is itself a duplicate is never chosen as the original of a later row: every
        duplicate points at the first occurrence.
    """
    n = len(hashes)
    out: list[tuple[int, float] | None] = [None] * n
    first_by_key: dict[tuple[Scope, str], int] = {}
    originals: list[int] = []
    for i in range(n):
        if not candidates[i]:
            continue
        original = first_by_key.get((scopes[i], hashes[i]))
        if original is not None:
            out[i] = (original, 1.0)
            continue
        if threshold is not None and originals:
            sims = vectors[originals] @ vectors[i]
            for j in np.argsort(-sims, kind="stable"):
                other = originals[int(j)]
                if float(sims[j]) < threshold:
                    break
                if scopes[other] == scopes[i] and same_words(texts[other], texts[i]):
                    out[i] = (other, float(sims[j]))
                    break
            if out[i] is not None:
                continue
        first_by_key[(scopes[i], hashes[i])] = i
        originals.append(i)
    return out
