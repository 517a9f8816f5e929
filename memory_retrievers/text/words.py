"""Word-level text features shared by the zero-LLM formation steps and recall (pure functions)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence

from memory_retrievers.text.speakers import strip_speaker

__all__ = ["NEGATIONS", "meaning_words", "pairs_sharing_a_word", "strip_speaker"]

#: Words (after contractions are split) that flip a statement.
NEGATIONS = frozenset("not no never nor none nobody nothing nowhere neither without cannot".split())

# Function words that carry no claim. Smaller than the search stop words on purpose: "like",
# "very" or "more" matter to whether two statements agree.
# "may" stays a word: it is also a month ("in May" vs "in June" is a change, not a duplicate).
_FUNCTION = frozenset(
    """a an the and or but if of to in on at by for from with about as into onto over under than then
    so this that these those it its it's i me my mine we us our you your he him his she her they them
    their there here what which who whom whose when where why how i'm i've i'd i'll you're we're
    they're he's she's is are was were be been being am do does did has have had having will would
    shall should can could might must just really very also too""".split()
)
_TOKEN = re.compile(r"[\w'\u2019]+", re.UNICODE)
_IRREGULAR = {"can't": "can", "won't": "will", "shan't": "shall", "ain't": "is"}


def meaning_words(text: str) -> tuple[str, ...]:
    """The words that carry a statement, case-folded, in order.

    Every ``…n't`` becomes its verb and ``not`` (so "doesn't like" reads as "does not like"), then
    function words go. A plain plural or third-person "s" is dropped ("likes" reads as "like").
    """
    out: list[str] = []
    for raw in _TOKEN.findall(text.replace("\u2019", "'")):
        low = raw.strip("'").casefold()
        if low.endswith("n't"):
            out.append("not")
            low = _IRREGULAR.get(low, low[:-3])
        if not low or low in _FUNCTION:
            continue
        if len(low) >= 4 and low.isalpha() and low.endswith("s") and not low.endswith("ss"):
            low = low[:-1]
        out.append(low)
    return tuple(out)


def pairs_sharing_a_word(word_sets: Sequence[frozenset[str]], min_words: int) -> Iterator[tuple[int, int]]:
    """Each pair ``(i, j)``, ``i < j``, of sets with at least ``min_words`` words that share a word, once.

    An inverted index of the words: a scan of thousands of texts compares only texts that share one.
    """
    index: dict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(word_sets):
        if len(words) >= min_words:
            for word in words:
                index[word].append(i)
    for i, words in enumerate(word_sets):
        if len(words) < min_words:
            continue
        seen: set[int] = set()
        for word in words:
            for j in index[word]:
                if j > i and j not in seen:
                    seen.add(j)
                    yield i, j
