"""The latest statement first: lines of a block about one subject, newest above older (pure functions).

A chat says "my sister's wedding is June 14", and weeks later "the wedding got moved to June 21".
Both match "when is the wedding?", and by relevance alone the first ranks higher (it names the
sister, the date): an agent reading the block top-down answers June 14. So before the block is
counted, every line is preceded by the lines that update it: said later by the same speaker,
about the same subject (both short statements, not pastes; vectors close, cosine at least
``subject_cosine``; a content word shared), and reading as an update (a word such as "moved",
"now", "actually", "switched", or a number the older lacks). The newer line moves up to just above
the best-scored line it updates, and that line is noted as updated, so the agent need not guess;
other lines keep their order (a newer line that merely mentions the subject again does not jump:
"when did I first ...?" wants the first), and the scores are handed out again in the new order
(the block stays in score order).

A newer line often scores too low to be in the block at all: it says "moved to Berlin", the
question asks where the user lives, and "I live in Lisbon" matches every word. So before
selection, a candidate cut by a floor comes back when it updates a line the block keeps
(:func:`updates_of`): the correction is found among the candidates the search already brought.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from memory_retrievers.models import Memory
from memory_retrievers.recall.results import ScoredMemory
from memory_retrievers.text.lines import body_of, speaker_label
from memory_retrievers.text.query import WORD, QueryFeatures
from memory_retrievers.text.words import meaning_words

__all__ = [
    "Line",
    "asks_about_the_past",
    "brought_back",
    "line_of",
    "newest_first",
    "numbers_update",
    "reads_as_update",
    "updates_first",
    "updates_of",
]

#: Words that say a statement replaces an earlier one ("moved to Berlin", "now Priya", "actually
#: the 21st", "no longer vegetarian"), after :func:`meaning_words` (plurals and "'s" folded).
UPDATE_WORDS = frozenset(
    """actually anymore became become changed correction corrected grew instead longer moved new now
    postponed renamed rescheduled replaced switched updated""".split()
)

#: The update words that say so on their own. "now" and "new" also open chatter ("bye for now",
#: "working on a new project"): two friends' chat (LoCoMo) has them in one line of ten, and a line
#: the floor cut comes back for a stronger word (or a changed number) only; see :func:`updates_of`.
STRONG_UPDATE_WORDS = UPDATE_WORDS - {"became", "become", "grew", "new", "now"}

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_YEAR = re.compile(r"(?:19|20)\d\d")

#: Query words that ask for what was said before, not what is true now ("when did I first ...",
#: "what did I use before ...", "where did I live originally?"), past tense included ("what was my
#: rent?": the event or the state then, not the latest).
PAST_WORDS = frozenset("before did earlier first formerly initially originally previously used was were".split())

#: Longest body (characters, role and speaker labels aside) of a line that takes part: a statement
#: that can update another is short (a tweet's length); a pasted log, file or long answer is not one,
#: and two pastes share words and vectors without being one subject.
STATEMENT_CHARS = 280


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a block, as this step reads it.

    Attributes:
        id: The memory's id.
        text: Its text (role and speaker labels are ignored).
        created_at: When it was said (``None``: it takes part in no reordering).
        vector: Its stored vector.
    """

    id: str
    text: str
    created_at: datetime | None
    vector: np.ndarray


def asks_about_the_past(query: str, features: QueryFeatures) -> bool:
    """Whether a query asks about a day it names, or about what was said before (then no line jumps)."""
    return bool(features.dates) or not PAST_WORDS.isdisjoint(w.casefold() for w in WORD.findall(query))


def updates_first(
    memories: Sequence[ScoredMemory], vectors: Mapping[str, np.ndarray], subject_cosine: float, query: str
) -> list[ScoredMemory]:
    """The selected memories in block order with the lines that update others above them (:func:`newest_first`).

    The scores are handed out again in the new order, so the block stays in score order; a line
    already marked as replaced (``superseded="flag"``) takes no part.
    """
    lines = [line_of(m.id, m.memory, vectors[m.id]) for m in memories]
    order, notes = newest_first(lines, subject_cosine, numbers=numbers_update(query))
    by_id = {m.id: m for m in memories}
    scores = sorted((m.score for m in memories), reverse=True)
    return [
        replace(by_id[i], score=score, note="; ".join(n for n in (by_id[i].note, notes.get(i)) if n) or None)
        for i, score in zip(order, scores, strict=True)
    ]


def line_of(id_: str, memory: Memory, vector: np.ndarray) -> Line:
    """A memory as this step reads it (a line already replaced takes part in nothing: no date)."""
    return Line(id_, memory.text, memory.created_at if memory.superseded_by is None else None, vector)


def numbers_update(query: str) -> bool:
    """Whether a new number reads as an update for this query: not when it names one itself.

    "what was in report 123?" asks about that one, not about report 243 written later.
    """
    return _NUMBER.search(query) is None


def reads_as_update(newer: str, older: str, *, numbers: bool = True, strong: bool = False) -> bool:
    """Whether ``newer`` reads as replacing ``older``: an update word, or (``numbers``) a number the older lacks.

    The new number must be of a kind the older also has (a time for a time, a year for a year,
    another number for another number): see :func:`_numbers_by_kind`. ``strong``: only the words
    of :data:`STRONG_UPDATE_WORDS` count.
    """
    if (STRONG_UPDATE_WORDS if strong else UPDATE_WORDS).intersection(_words_of(newer)):
        return True
    if not numbers:
        return False
    new_numbers, old_numbers = _numbers_by_kind(newer), _numbers_by_kind(older)
    return any(kind in old_numbers and found - old_numbers[kind] for kind, found in new_numbers.items())


@functools.lru_cache(maxsize=4096)
def _numbers_by_kind(text: str) -> dict[str, frozenset[str]]:
    """The numbers of a text by kind: a time of day ("1:52"), a year ("2019"), any other.

    A new number updates an older line only against a number of its own kind: "June 14" -> "June
    21" and "rent 900" -> "rent 950" do; "my half marathon PR is 1:52" does not update "the Chicago
    marathon, Oct 13", said the same day (a time against a day, noted as an update before).
    """
    out: dict[str, set[str]] = {}
    for number in _NUMBER.findall(text):
        kind = "time" if ":" in number else "year" if _YEAR.fullmatch(number) else "other"
        out.setdefault(kind, set()).add(number)
    return {kind: frozenset(found) for kind, found in out.items()}  # cached: never changed in place


def newest_first(
    lines: Sequence[Line], subject_cosine: float, *, numbers: bool = True
) -> tuple[list[str], dict[str, str]]:
    """The lines' ids in block order, newer lines about one subject above the older, and the notes.

    Args:
        lines: The block's lines in score order.
        subject_cosine: Cosine of two lines' vectors from which they may share a subject.
        numbers: Whether a new number reads as an update (off when the query names a number: "what
            was in report 123?" asks about that one, not about report 243 written later).

    Returns:
        The ids in their new order, and for each older line a newer one updates, its note
        (``"updated by the [2024-03-12] line above"``).
    """
    newer = _updated_by(lines, subject_cosine, numbers)
    order: list[str] = []
    placed: set[int] = set()

    def place(i: int) -> None:
        placed.add(i)
        for j in newer[i]:  # in score order: the best of the newer lines first
            if j not in placed:
                place(j)
        order.append(lines[i].id)

    for i in range(len(lines)):
        if i not in placed:
            place(i)
    notes = {}
    for i, later in newer.items():
        if later:
            latest = max(later, key=lambda j: _when(lines[j]))
            notes[lines[i].id] = f"updated by the [{_when(lines[latest]).date().isoformat()}] line above"
    return order, notes


def updates_of(
    kept: Sequence[Line], others: Sequence[Line], subject_cosine: float, *, numbers: bool = True
) -> dict[str, str]:
    """The lines of ``others`` that update a line of ``kept``, each with the id of the first it updates.

    The test of the block's own reordering (:func:`newest_first`): said later by the same speaker,
    both short statements, about one subject, reading as an update; but bringing a cut line back
    takes a word that says so on its own (:data:`STRONG_UPDATE_WORDS`) or a changed number.

    Args:
        kept: The lines the block keeps, in score order.
        others: The candidates it cut.
        subject_cosine: Cosine of two lines' vectors from which they may share a subject.
        numbers: Whether a new number reads as an update (see :func:`newest_first`).

    Returns:
        ``{other's id: the id of the best-scored kept line it updates}``.
    """
    olds, news = _statements(kept), _statements(others)
    out: dict[str, str] = {}
    # Row by row: for each new line, the best-scored kept line first.
    for a, b in _close_pairs(news, olds, subject_cosine):
        new, old = news[a], olds[b]
        if new.line.id not in out and _updates(new, old, numbers, strong=True):
            out[new.line.id] = old.line.id
    return out


def brought_back(
    kept: Sequence[Line], cut: Sequence[Line], subject_cosine: float, *, numbers: bool = True
) -> dict[str, str]:
    """The cut lines to bring back into a block: each updates a kept line or one brought back before it.

    Returns:
        ``{id of the line brought back: id of the line it updates}``, in the order found (a line
        brought back comes before the lines that update it in turn).
    """
    olds, others, out = list(kept), {line.id: line for line in cut}, {}
    while olds and others:
        found = updates_of(olds, list(others.values()), subject_cosine, numbers=numbers)
        out.update(found)
        olds = [others.pop(new) for new in found]
    return out


@dataclass(frozen=True, slots=True)
class _Statement:
    """A line that can update another or be updated, with what the test reads of it."""

    index: int
    line: Line
    when: float
    speaker: str


def _statements(lines: Sequence[Line]) -> list[_Statement]:
    """The dated short statements among ``lines`` (a paste or an undated line takes no part)."""
    return [
        _Statement(i, line, _when(line).timestamp(), speaker_label(line.text))
        for i, line in enumerate(lines)
        if line.created_at is not None and len(body_of(line.text)) <= STATEMENT_CHARS
    ]


def _close_pairs(news: Sequence[_Statement], olds: Sequence[_Statement], subject_cosine: float) -> np.ndarray:
    """``(new, old)`` index pairs, row by row, of a later line by the same speaker with close vectors.

    The cheap half of :func:`_updates`, for every pair at once: a recall's 70 cut candidates
    against its 25 kept lines are 1,750 pairs, of which a handful pass.
    """
    if not news or not olds:
        return np.empty((0, 2), dtype=np.intp)
    close = _units(news) @ _units(olds).T >= subject_cosine
    later = np.array([s.when for s in news])[:, None] > np.array([s.when for s in olds])[None, :]
    speakers = {name: code for code, name in enumerate({s.speaker for s in (*news, *olds)})}
    same = np.array([speakers[s.speaker] for s in news])[:, None] == np.array([speakers[s.speaker] for s in olds])
    return np.argwhere(close & later & same)


def _updates(new: _Statement, old: _Statement, numbers: bool, *, strong: bool = False) -> bool:
    """Whether ``new``, said later by the same speaker with a close vector (:func:`_close_pairs`), updates ``old``.

    Only a line of the same speaker updates another: the assistant's "Got it, Priya's your manager
    now" echoes the user's correction, it does not update it. Then a content word shared, and
    the newer reading as an update.
    """
    return bool(_subject_words(new.line.text) & _subject_words(old.line.text)) and reads_as_update(
        new.line.text, old.line.text, numbers=numbers, strong=strong
    )


def _updated_by(lines: Sequence[Line], subject_cosine: float, numbers: bool) -> dict[int, list[int]]:
    """For each line, the lines said after it by the same speaker about its subject that read as updating it."""
    out: dict[int, list[int]] = {i: [] for i in range(len(lines))}
    dated = _statements(lines)
    # Row by row (new b ascending), so each old line's list is in score order: the best newer line first.
    for b, a in _close_pairs(dated, dated, subject_cosine):
        if _updates(dated[b], dated[a], numbers):
            out[dated[a].index].append(dated[b].index)
    return out


@functools.lru_cache(maxsize=4096)
def _words_of(text: str) -> tuple[str, ...]:
    """:func:`meaning_words` of a line's body (cached: a recall asks for the same lines' words often)."""
    return meaning_words(body_of(text))


@functools.lru_cache(maxsize=4096)
def _subject_words(text: str) -> frozenset[str]:
    """The content words that can name a subject: not the update words, not bare numbers."""
    return frozenset(w for w in _words_of(text) if w not in UPDATE_WORDS and not w.isdigit())


def _when(line: Line) -> datetime:
    assert line.created_at is not None
    return line.created_at


def _units(statements: Sequence[_Statement]) -> np.ndarray:
    """The statements' vectors as unit rows, in float32 (a float64 product of these sizes is ~15x slower)."""
    matrix = np.stack([s.line.vector for s in statements]).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)
