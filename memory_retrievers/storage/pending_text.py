"""Where a record queued for a commit ranks among LanceDB's BM25 hits (see :mod:`.pending`): pure functions."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from memory_retrievers.recall.source import SourceHits
from memory_retrievers.text.query import STOP_WORDS

__all__ = ["placed"]

_WORD = re.compile(r"\w+", re.UNICODE)
_K1, _B = 1.2, 0.75  # LanceDB's (and Lucene's) BM25 constants


def _terms(text: str) -> list[str]:
    """Words as a full-text index reads them, roughly: lower-cased, stop words out, suffixes cut."""
    out = []
    for word in _WORD.findall(text.casefold()):
        if word in STOP_WORDS:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        out.append(word)
    return out


def _local_bm25(query: str, texts: Sequence[str]) -> list[float]:
    """BM25 of each text for ``query``, with document statistics taken from ``texts`` themselves."""
    docs = [_terms(t) for t in texts]
    wanted = set(_terms(query))
    n = len(docs)
    if not n or not wanted:
        return [0.0] * n
    average = sum(len(d) for d in docs) / n or 1.0
    counts = [{t: d.count(t) for t in wanted} for d in docs]
    df = {t: sum(1 for c in counts if c[t]) for t in wanted}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    scores = []
    for doc, count in zip(docs, counts, strict=True):
        norm = _K1 * (1 - _B + _B * len(doc) / average)
        scores.append(sum(idf[t] * c * (_K1 + 1) / (c + norm) for t, c in count.items() if c))
    return scores


def placed(
    base: Sequence[tuple[str, float]],
    base_texts: Sequence[str],
    queued: Sequence[tuple[str, str]],
    query: str,
    k: int,
) -> SourceHits:
    """LanceDB's BM25 hits (``base``, best first) with queued records placed among them.

    A full-text index does not hold records queued for a commit, and its scores depend on the
    whole index: a queued record cannot be scored on the same scale. So every text (the hits' and
    the queued records') is scored by one local BM25, and a queued record goes right above the
    first hit that scores lower than it locally; it takes a score strictly between its neighbours'
    (the hits keep theirs, and their order). A queued record with none of the query's words is
    not a hit. At most ``k`` hits are returned.

    >>> placed([("a", 9.0), ("b", 4.0)], ["red apple pie", "apple"], [("q", "red apple")], "red apple", 3).ids
    ('a', 'q', 'b')
    """
    scores = _local_bm25(query, [*base_texts, *(t for _, t in queued)])
    mine = scores[len(base) :]
    theirs = scores[: len(base)]
    slots: dict[int, list[tuple[float, str]]] = {}
    for (id_, _), score in zip(queued, mine, strict=True):
        if score > 0:
            slot = sum(1 for s in theirs if s >= score)
            slots.setdefault(slot, []).append((score, id_))
    out: list[tuple[str, float]] = []
    for j in range(len(base) + 1):
        if j in slots:
            ahead = sorted(slots[j], key=lambda p: (-p[0], p[1]))
            upper = base[j - 1][1] if j > 0 else None
            lower = base[j][1] if j < len(base) else None
            out.extend(
                (id_, s) for (_, id_), s in zip(ahead, _between(upper, lower, [s for s, _ in ahead]), strict=True)
            )
        if j < len(base):
            out.append(base[j])
    return SourceHits(tuple(i for i, _ in out[:k]), tuple(float(s) for _, s in out[:k]))


def _between(upper: float | None, lower: float | None, local: Sequence[float]) -> list[float]:
    """``len(local)`` decreasing scores strictly between ``upper`` and ``lower`` (either may be open)."""
    m = len(local)
    if upper is None and lower is None:
        return list(local)
    if upper is None:
        assert lower is not None
        upper = lower + max(1.0, abs(lower))
    if lower is None:
        lower = min(0.0, upper - 1.0)
    return [upper - (upper - lower) * (i + 1) / (m + 1) for i in range(m)]
