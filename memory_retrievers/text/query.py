"""What a query asks for (pure functions): keywords, entities and intent cues.

Used for routing and the LLM-free expansion. Deliberately simple and predictable: word lists and
capitalisation, no model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memory_retrievers.text.dates import DateSpan, mentioned_dates

__all__ = ["QueryFeatures", "analyze", "feedback_terms", "keywords"]

#: A word as queries and memories are read (apostrophes and hyphens kept inside it).
WORD = re.compile(r"[\w'\u2019-]+", re.UNICODE)

# Standard English stop words plus question scaffolding ("did", "does", "ever"...): they carry no
# topic and make BM25 queries long and slow.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each ever few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself kind let's like likely me might more most
    much must mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll they're
    they've this those through to too under until up very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's will
    with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves also
    would've could've should've maybe many often s t
    """.split()
)

_PREFERENCE = frozenset(
    """
    like likes liked love loves loved prefer prefers preferred favorite favourite favorites
    enjoy enjoys enjoyed hate hates dislike dislikes want wants wish taste opinion fan
    """.split()
)
_TEMPORAL = frozenset(
    """
    when date dates day days week weeks month months year years ago since until before after
    during time times yesterday today tomorrow morning evening night weekend january february
    march april may june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday how long
    """.split()
)
_RECENCY = frozenset(
    """
    latest last recent recently lately now currently current newest today anymore
    """.split()
)
_AGGREGATION = frozenset(
    """
    all every list which ones things kinds types hobbies activities places events both various
    several many count
    """.split()
)
_AGGREGATION_PHRASES = ("how many", "what are", "what kinds", "what types", "what activities", "in total")


def _words(text: str) -> list[str]:
    return [w.strip("'\u2019-") for w in WORD.findall(text) if w.strip("'\u2019-")]


def keywords(text: str) -> list[str]:
    """Content words of ``text`` in order, lower-cased, stop words removed, no repeats."""
    out: dict[str, None] = {}  # ordered, and no list scan per word (a long memory has hundreds)
    for word in _words(text):
        low = word.casefold()
        if low not in STOP_WORDS:
            out[low] = None
    return list(out)


@dataclass(frozen=True, slots=True)
class QueryFeatures:
    """Cues found in a query."""

    words: int
    keywords: tuple[str, ...]
    entities: tuple[str, ...]
    preference: bool
    temporal: bool
    recency: bool
    aggregation: bool
    dates: tuple[DateSpan, ...] = ()
    """Days, months and years the query names (see :func:`memory_retrievers.text.dates.mentioned_dates`)."""

    @property
    def intent(self) -> str:
        """``"preference"``, ``"temporal"`` or ``"general"`` (prompt choice for LLM expansion)."""
        if self.preference:
            return "preference"
        if self.temporal:
            return "temporal"
        return "general"


def analyze(query: str) -> QueryFeatures:
    """Extract keywords, capitalised entities (not sentence-initial), and intent cues."""
    words = _words(query)
    lower = [w.casefold() for w in words]
    entities: list[str] = []
    sentence_start = True
    for raw in WORD.finditer(query):
        word = raw.group().strip("'\u2019-")
        before = query[: raw.start()].rstrip()
        sentence_start = not before or before[-1] in ".?!:\n"
        if word and (word[0].isupper() or (word.isupper() and len(word) > 1)) and not sentence_start:
            name = word.removesuffix("'s").removesuffix("\u2019s")
            if name.casefold() not in STOP_WORDS and name not in entities:
                entities.append(name)
    text = " ".join(lower)
    return QueryFeatures(
        words=len(words),
        keywords=tuple(keywords(query)),
        entities=tuple(entities),
        preference=any(w in _PREFERENCE for w in lower),
        temporal=any(w in _TEMPORAL for w in lower) or bool(re.search(r"\b(19|20)\d\d\b", query)),
        recency=any(w in _RECENCY for w in lower),
        aggregation=any(w in _AGGREGATION for w in lower) or any(p in text for p in _AGGREGATION_PHRASES),
        dates=mentioned_dates(query),
    )


def feedback_terms(query_keywords: Sequence[str], texts: Sequence[str], n: int) -> list[str]:
    """Pseudo-relevance feedback terms.

    The ``n`` content words most frequent across ``texts`` (the top first-pass hits) that the
    query does not already contain and that occur in at least two texts; ties broken by first
    appearance.
    """
    have = set(query_keywords)
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for text in texts:
        for word in keywords(text):  # already unique, and in text order: ties stay reproducible
            if word not in have and len(word) > 2:
                counts[word] += 1
                first.setdefault(word, len(first))
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return [w for w in ranked if counts[w] > 1][:n]
