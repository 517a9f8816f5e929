"""What recall asks of a namespace besides its searches, answered from its view's columns.

Recall asks who speaks in the namespace (the speaker cue) and whether any memory has entities
(else the entity channel is skipped). The store used to answer each with a LanceDB query of its
own; a namespace's view already holds every row, so both come from its columns instead, computed
once per view and carried forward as the view is patched. They agree with the searcher's caches
(:meth:`.search.Searcher.speakers`, :meth:`.search.Searcher.has_entities`): speakers of the
:data:`.search.SPEAKER_SAMPLE` messages written last (superseded ones included), at most
:data:`.search.MAX_SPEAKERS`, joined by speakers of every message written since; entities once
any memory had some.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.models import MemoryKind
from memory_retrievers.storage.search import SPEAKER_SAMPLE, joined_speakers
from memory_retrievers.text.speakers import speaker_of

__all__ = ["VectorBuffer", "message_speakers", "speakers_in", "tagged"]


def speakers_in(table: pa.Table, rows: np.ndarray | None = None) -> frozenset[str]:
    """Speakers of the :data:`SPEAKER_SAMPLE` messages of ``table`` written last (by ``updated_at``).

    Args:
        table: View rows (``kind``, ``text``, ``updated_at``).
        rows: Which rows count (a view's ``present``); every row when ``None``.
    """
    keep = np.asarray(_messages(table).to_numpy(zero_copy_only=False), dtype=bool)
    if rows is not None:
        keep &= rows
    candidates = np.flatnonzero(keep)
    if len(candidates) > SPEAKER_SAMPLE:
        written = pc.cast(table.column("updated_at"), pa.timestamp("us", tz="UTC")).cast(pa.int64())
        when = np.asarray(pc.fill_null(written, -1).to_numpy(zero_copy_only=False), dtype=np.int64)[candidates]
        candidates = candidates[np.argsort(-when, kind="stable")[:SPEAKER_SAMPLE]]
    texts = table.column("text").take(pa.array(candidates, pa.int64())).to_pylist()
    return joined_speakers(frozenset(), (speaker_of(t or "") for t in texts))


def message_speakers(rows: pa.Table) -> list[str | None]:
    """Speakers of every message among ``rows`` (just written: no sample to take)."""
    texts = pc.filter(rows.column("text"), _messages(rows)).to_pylist()
    return [speaker_of(t or "") for t in texts]


def _messages(table: pa.Table) -> pa.ChunkedArray:
    return pc.equal(table.column("kind"), MemoryKind.MESSAGE.value).fill_null(False)


def tagged(table: pa.Table) -> bool:
    """Whether any row of ``table`` has at least one entity."""
    lengths = pc.list_value_length(table.column("entities")).fill_null(0)
    return table.num_rows > 0 and bool(pc.any(pc.greater(lengths, 0)).as_py())


class VectorBuffer:
    """A vector matrix with spare rows at the end, shared by a view and the views appended to it.

    Appending writes into the spare rows and hands out a longer slice; the older views keep their
    shorter slice, which those rows are not part of. Only the view that ends at the buffer's
    current length may append in place (patches run on one thread, one at a time); any other
    gets a fresh copy.
    """

    def __init__(self, vectors: np.ndarray) -> None:
        self.array = vectors
        self.length = len(vectors)

    def extended(self, vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``vectors`` (a view's matrix) followed by ``rows``, in place when ``vectors`` ends the buffer."""
        if not len(rows):
            return vectors
        length = len(vectors)
        end = length + len(rows)
        ends_here = length == self.length and (vectors is self.array or vectors.base is self.array)
        if ends_here and end <= len(self.array):
            self.array[length:end] = rows
            self.length = end
            return self.array[:end]
        # Grow by a quarter (at least 256 rows): a copy every few thousand appends, and at most
        # 25% more memory than the rows held.
        capacity = max(end + 256, int(end * 1.25))
        grown = np.empty((capacity, rows.shape[1]), dtype=rows.dtype)
        grown[:length] = vectors
        grown[length:end] = rows
        self.array, self.length = grown, end
        return grown[:end]
