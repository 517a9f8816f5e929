"""What one line of a context block says, for telling copies, echoes and questions apart (pure).

A chat namespace holds many lines that say the same thing: "thanks, that's helpful!" in thirty
sessions, "You're welcome! Anything else?" after each, a fact repeated across weeks. A block that
shows each copy spends its slots on one line; a block that repeats the messages already in the
model's window spends them on what the model has. Both are decided on the line's *body*: its text
without the role label an adapter writes (``"user: "``) and without a speaker label
(``"Caroline: "``), because the same words from the same person are the same line whatever the
store it came through.

- :func:`line_key`: equal for texts that read the same once case, Unicode form, punctuation,
  whitespace and a plain plural are set aside, with the speaker kept (``"user: Thanks!"`` and
  ``"user: thanks"`` are one line; ``"assistant: thanks"`` is another; ``"Caroline: ..."`` and
  ``"user: Caroline: ..."`` are Caroline's either way). A text with content words
  is keyed by them (so "thanks so much, that's helpful!" and "Thanks, that's helpful." are one
  line), and a question is never the same line as a statement of the same words.
- :func:`asks`: whether a line is a question (a stored question matches the query that repeats it
  better than the statement that answers it, so recall must know).
- :func:`content_word_count`: how much a line says (chatter says nothing).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memory_retrievers.text.dedup import content_words
from memory_retrievers.text.query import WORD, keywords
from memory_retrievers.text.speakers import speaker_of, strip_speaker

__all__ = [
    "LineFacts",
    "asks",
    "stem",
    "body_of",
    "content_word_count",
    "line_asks",
    "line_facts",
    "line_key",
    "role_of",
    "speaker_label",
]

# The role labels chat adapters write ("user: ...", "assistant: ..."): lower-case, as
# ``integration.chat_text`` writes them; a capitalised label is a speaker's name.
_ROLE = re.compile(r"^([a-z][a-z_\-]{0,19}):\s+(?=\S)")
_QUESTION_WORDS = frozenset(
    "who whom whose what which when where why how is are am was were do does did can could will would "
    "should shall may might have has had".split()
)
_NOT_WORD = re.compile(r"[^\w\s]+", re.UNICODE)


def role_of(text: str) -> str | None:
    """The lower-case role label of a stored chat turn (``"user"`` of ``"user: hi"``), or ``None``."""
    match = _ROLE.match(text)
    return match.group(1) if match else None


def _without_role(text: str) -> str:
    return _ROLE.sub("", text, count=1)


def speaker_label(text: str) -> str:
    """Who says a line: its speaker's name, case-folded, else its role label (``""``: neither).

    >>> speaker_label("user: Caroline: I went to the group."), speaker_label("assistant: ok"), speaker_label("Hi!")
    ('caroline', 'assistant', '')
    """
    speaker = speaker_of(text)
    return speaker.casefold() if speaker else role_of(text) or ""


def body_of(text: str) -> str:
    """A line without its role label and speaker label: what was said.

    >>> body_of("user: Caroline: I went to the group.")
    'I went to the group.'
    """
    return _without_role(strip_speaker(text)).strip()


def asks(text: str) -> bool:
    """Whether a line asks a question.

    It does when its body ends with ``?``, or when its last sentence opens with a question word and
    it has no full stop at the end.

    >>> asks("user: Where does my sister live?"), asks("My sister lives in Lisbon."), asks("how do I reset it")
    (True, False, True)
    """
    body = body_of(text).rstrip()
    if body.endswith("?"):
        return True
    if not body or body[-1] in ".!":
        return False
    last = re.split(r"[.!?]\s+", body)[-1].split(maxsplit=1)
    return bool(last) and last[0].casefold() in _QUESTION_WORDS


@functools.lru_cache(maxsize=65_536)
def line_asks(text: str) -> bool:
    """:func:`asks`, cached: all a channel's cut reads of each hit (most hits are never fused).

    The full :func:`line_facts` of a hit cost ~0.2 ms; a recall's channels return ~60 hits.
    """
    return asks(text)


def content_word_count(text: str) -> int:
    """How many content words a line's body has.

    Stop words and punctuation aside: see :func:`memory_retrievers.text.dedup.content_words`.
    """
    return len(content_words(body_of(text)))


def line_key(text: str) -> str:
    """The key two lines share when they say the same thing (see the module docstring).

    >>> line_key("user: Thanks, that's helpful!") == line_key("user: thanks so much, that's helpful")
    True
    >>> line_key("user: I moved to Berlin") == line_key("user: I moved to Berlin?")
    False
    """
    return _key(text, body_of(text), None)


def _key(text: str, body: str, words_of_body: tuple[str, ...] | None) -> str:
    """:func:`line_key` of ``text`` from its body (and the body's content words, when known)."""
    normal = unicodedata.normalize("NFKC", body)
    # Most bodies are NFKC already: their content words, read once for the count, serve here too.
    found = words_of_body if words_of_body is not None and normal == body else content_words(normal)
    body = normal
    words = [w.casefold() for w in found]
    # A line of stop words alone ("ok", "yes", "me too") is keyed by its words, punctuation aside.
    said = " ".join(words) if words else " ".join(_NOT_WORD.sub(" ", body.casefold()).split())
    return f"{speaker_label(text)}\x1f{'?' if asks(text) else '.'}\x1f{said}"


@dataclass(frozen=True, slots=True)
class LineFacts:
    """What recall reads of a memory's text, computed once per text (see :func:`line_facts`)."""

    key: str
    """Its :func:`line_key`."""
    asks: bool
    """Whether it is a question (:func:`asks`)."""
    content_words: int
    """Its :func:`content_word_count`."""
    keywords: frozenset[str]
    """The keywords of its body, as :func:`memory_retrievers.text.query.keywords` finds them in a query,
    each by its :func:`stem`."""


@functools.lru_cache(maxsize=65_536)
def line_facts(text: str) -> LineFacts:
    """Every fact recall reads of a line, cached: a namespace's memories recur from recall to recall.

    Measured on LoCoMo: reading them afresh for a recall's ~90 candidates took 3-4 ms.
    """
    body = body_of(text)
    words = content_words(body)
    return LineFacts(
        key=_key(text, body, words),
        asks=asks(text),
        content_words=len(words),
        keywords=frozenset(stem(k) for k in keywords(body)),
    )


def stem(word: str) -> str:
    """A keyword without a plain plural or third-person ``s``: "lives" and "live" match.

    As :func:`memory_retrievers.text.dedup.content_words` reads words.

    >>> stem("lives"), stem("glass"), stem("is")
    ('live', 'glass', 'is')
    """
    return word[:-1] if len(word) >= 4 and word.endswith("s") and not word.endswith("ss") else word


def excerpt(text: str, terms: Sequence[str], max_chars: int) -> str:
    """``text`` itself when it fits in ``max_chars``, else its passage holding the most of ``terms``.

    ``terms`` are stems, as :func:`stem` makes them; the passage has at most ``max_chars``
    characters and is marked with ``…`` where it was cut.

    A long memory (an assistant's 20-page reply) then costs a block only the part that answers: of
    the passages starting every quarter of ``max_chars``, the first with the most terms, led in by
    a third of its length before its first term, at word boundaries.

    >>> excerpt("The weather was fine. " * 20 + "Carla lives in Lisbon. " + "We ate cake. " * 20, ["lisbon"], 60)
    '…Carla lives in Lisbon. We ate cake. We ate cake. We ate…'
    """
    if len(text) <= max_chars:
        return text
    wanted = set(terms)
    starts, stems = _stemmed_words(text)
    found = [(p, w) for p, w in zip(starts, stems, strict=True) if w in wanted]  # where a term is said
    at = [p for p, _ in found]
    step = max(1, max_chars // 4)
    best_start, best_hits = 0, -1
    for start in range(0, max(1, len(text) - max_chars + step), step):
        i = bisect.bisect_left(starts, start)
        begin = starts[i] if i < len(starts) else len(text)
        inside = found[bisect.bisect_left(at, begin) : bisect.bisect_left(at, begin + max_chars)]
        hits = len({w for _, w in inside})
        if hits > best_hits:
            best_start, best_hits = begin, hits
    # Lead in to the first term found: a third of the passage before it, the rest after.
    j = bisect.bisect_left(at, best_start)
    first = at[j] if j < len(at) else best_start
    lead = max(0, first - max_chars // 3)
    k = bisect.bisect_left(starts, lead)
    best_start = starts[k] if k < len(starts) else best_start
    end = min(len(text), best_start + max_chars)
    cut = text[best_start:end]
    if end < len(text) and " " in cut:
        cut = cut[: cut.rindex(" ")]  # never end on half a word
    return f"{'…' if best_start > 0 else ''}{cut.strip()}{'…' if best_start + len(cut) < len(text) else ''}"


@functools.lru_cache(maxsize=256)
def _stemmed_words(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Where each word of a long text starts, and its stem (a long memory recurs across recalls)."""
    words = list(WORD.finditer(text))
    return tuple(m.start() for m in words), tuple(stem(m.group().casefold()) for m in words)
