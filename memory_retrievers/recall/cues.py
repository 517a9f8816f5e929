"""Who and when a query names: the speaker cue and the date cue.

See :mod:`memory_retrievers.text.speakers` and :mod:`memory_retrievers.text.dates`. Both are read once per
recall, before the searches: the speakers a query names need the namespace's speakers (cached by
the store), the dates only the query text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.scoring import ScoringContext
from memory_retrievers.text.query import QueryFeatures
from memory_retrievers.text.speakers import may_name_a_speaker, named_speakers, without_names

__all__ = ["Cues", "read_cues"]


@dataclass(frozen=True, slots=True)
class Cues:
    """What one query names.

    Attributes:
        speakers: Chat speakers of the namespace the query names, in query order.
        speaker_free: The query without those names, for the vector channel (``None``: not used,
            because no speaker is named, ``speaker_free_vector`` is off, or nothing would remain).
    """

    speakers: tuple[str, ...] = ()
    speaker_free: str | None = None

    def scoring(self, ctx: ScoringContext, features: QueryFeatures) -> ScoringContext:
        """``ctx`` with the speakers and dates the query names (the multipliers' inputs)."""
        return replace(ctx, speakers=frozenset(s.casefold() for s in self.speakers), dates=features.dates)


async def read_cues(
    query: str, speakers: Callable[[], Awaitable[frozenset[str]]], cfg: RecallConfig, *, own_vector: bool
) -> Cues:
    """The speakers ``query`` names among the namespace's, and the query without them.

    Args:
        query: The query as asked.
        speakers: Reads the namespace's speakers (cached by the store; not through the recall
            source, so that the query is embedded while a cold namespace's view still loads).
        cfg: The recall's config; with ``speaker_boost`` 1 and ``speaker_free_vector`` off the
            namespace's speakers are not even read.
        own_vector: Whether recall embeds the query itself (a caller's ``query_vector`` is used
            as given: no speaker-free embedding then).
    """
    if (cfg.scoring.speaker_boost == 1.0 and not cfg.query.speaker_free_vector) or not may_name_a_speaker(query):
        return Cues()
    names = named_speakers(query, await speakers())
    if not names:
        return Cues()
    free = without_names(query, names) if cfg.query.speaker_free_vector and own_vector else None
    return Cues(names, free if free is not None and free != query else None)
