"""Pure duplicate detection within a batch of vectors/hashes (the table side is a LanceDB query)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["first_duplicate_in_batch"]


def first_duplicate_in_batch(
    hashes: Sequence[str],
    vectors: np.ndarray,
    candidates: Sequence[bool],
    threshold: float | None,
) -> list[tuple[int, float] | None]:
    """For each row, the earliest *earlier* candidate row it duplicates, with the similarity.

    Args:
        hashes: Content hash per row; equal hashes are exact duplicates (similarity 1.0).
        vectors: L2-normalised vectors, one row each.
        candidates: Which rows take part in deduplication (exempt kinds do not).
        threshold: Cosine similarity for near duplicates, or ``None`` for exact only.

    Returns:
        ``None`` for rows that are not duplicates, else ``(index_of_earlier_row, similarity)``.
        A row that is itself a duplicate is never chosen as the original of a later row: every
        duplicate points at the first occurrence.
    """
    n = len(hashes)
    out: list[tuple[int, float] | None] = [None] * n
    first_by_hash: dict[str, int] = {}
    originals: list[int] = []
    for i in range(n):
        if not candidates[i]:
            continue
        original = first_by_hash.get(hashes[i])
        if original is not None:
            out[i] = (original, 1.0)
            continue
        if threshold is not None and originals:
            sims = vectors[originals] @ vectors[i]
            best = int(np.argmax(sims))
            if float(sims[best]) >= threshold:
                out[i] = (originals[best], float(sims[best]))
                continue
        first_by_hash[hashes[i]] = i
        originals.append(i)
    return out
