"""Long queries: what recall searches when the query is a pasted log or a long message (pure).

The default model reads only its first 256 word pieces (about 1,000 characters of English), and
BM25 over hundreds of words is slow and matches every memory a little. A query longer than
``RecallConfig.query.searched_query_chars`` is searched by its opening and its end (its first and last
lines, when it has several), cut at word boundaries: in a chat turn the ask is usually at one end
of what was pasted ("here is the log: ... why does it fail?"). The plan's notes say what was
searched.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HEAD_SHARE", "SearchedQuery", "searched_query"]

#: Share of ``searched_query_chars`` taken from the opening of a long query (the rest from its end).
HEAD_SHARE = 0.3


@dataclass(frozen=True, slots=True)
class SearchedQuery:
    """What recall searches for a query, and the plan note when it is not the query itself."""

    text: str
    note: str | None = None


def searched_query(query: str, limit: int) -> SearchedQuery:
    r"""``query`` itself when it has at most ``limit`` characters, else its opening and end.

    A long query of several lines (a pasted log or code between the ask and a follow-up) is
    searched by its first and last lines, each cut to its share of ``limit``: they are where a chat
    turn says what it wants. Otherwise by its first 30% and last 70% of ``limit`` characters, cut
    at word boundaries.

    >>> searched_query("where do I live?", 100).text
    'where do I live?'
    >>> long = "intro words here " + "log line " * 200 + "why does it fail?"
    >>> short = searched_query(long, 100)
    >>> short.text.startswith("intro words"), short.text.endswith("why does it fail?"), len(short.text) <= 103
    (True, True, True)
    >>> searched_query("Here is my log:\n" + "ERROR timeout\n" * 300 + "Why does it fail?", 1000).text
    'Here is my log:\n…\nWhy does it fail?'
    """
    if len(query) <= limit:
        return SearchedQuery(query)
    head_chars = int(limit * HEAD_SHARE)
    tail_chars = limit - head_chars
    lines = [line.strip() for line in query.strip().splitlines() if line.strip()]
    if len(lines) >= 3:
        head, tail = _words_from_start(lines[0], head_chars), _words_from_end(lines[-1], tail_chars)
        how = "first and last lines"
    else:
        head, tail = _words_from_start(query, head_chars), _words_from_end(query, tail_chars)
        how = "opening and end"
    text = f"{head}\n…\n{tail}"
    note = (
        f"long query ({len(query):,} characters): searched by its {how} ({len(head):,} and {len(tail):,} "
        f"characters; RecallConfig.query.searched_query_chars={limit:,})"
    )
    return SearchedQuery(text, note)


def _words_from_start(text: str, chars: int) -> str:
    """The opening of ``text``, at most ``chars`` long, never ending on half a word."""
    if len(text) <= chars:
        return text.strip()
    head = text[:chars]
    if not text[chars].isspace() and " " in head:
        head = head[: head.rindex(" ")]
    return head.strip()


def _words_from_end(text: str, chars: int) -> str:
    """The end of ``text``, at most ``chars`` long, never starting on half a word."""
    if len(text) <= chars:
        return text.strip()
    tail = text[len(text) - chars :]
    if not text[len(text) - chars - 1].isspace() and " " in tail:
        tail = tail[tail.index(" ") + 1 :]
    return tail.strip()
