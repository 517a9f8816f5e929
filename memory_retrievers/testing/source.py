"""An in-memory :class:`~memory_retrievers.recall.RecallSource`: a channel tested without a store.

A channel reads one namespace through a recall source. :class:`FakeRecallSource` is one over a few
memories held in memory: each search ranks the way the store's does in kind (BM25 over words,
cosine over the embedder's unit vectors, shared entities, newest first), without LanceDB, so a
channel's unit tests run in milliseconds and say exactly what it was given.

Replaced (``superseded_by``) and expired (``expires_at`` passed) memories are left out, as recall's
default filter leaves them out of the store's sources; full-text search approximates LanceDB's
English index (stop words out, common endings stemmed). It keeps the contract the real sources
keep, strictly: an id can be resolved (:meth:`memory`,
:meth:`vector`) only once a search or :meth:`fetch` returned it, so a channel that makes up ids
fails here (``KeyError``) before it fails in production; :attr:`FakeRecallSource.handed_out` lists
every id it returned, for a test to compare with a channel's lists.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from memory_retrievers.embeddings import Embedder, HashEmbedder
from memory_retrievers.errors import ConfigError
from memory_retrievers.models import FtsField, Memory, MemoryKind
from memory_retrievers.recall.channel import Channel, ChannelInput, ChannelQuery, Need
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.fusion import RankedList, weighted_rrf
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.recall.source import SourceHits
from memory_retrievers.storage.pending import searched_text
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.text.query import analyze
from memory_retrievers.text.speakers import speaker_of

__all__ = ["FakeRecallSource", "channel_input"]

_WORD = re.compile(r"\w+")
#: The English stop words LanceDB's full-text index leaves out (tantivy's list, Lucene's classic set).
_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
# BM25's usual constants (Lucene's and Tantivy's defaults): term saturation and length normalisation.
_K1, _B = 1.2, 0.75
_START = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def _words(text: str) -> list[str]:
    """Index terms as LanceDB's English full-text index makes them, approximately.

    Lower-cased and ASCII-folded, stop words left out, and a light stemmer for the English
    endings that matter most ("drinks"/"drink", "running"/"run", "moved"/"move"); LanceDB uses a
    Snowball stemmer, so rarer forms may still differ.
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().casefold()
    return [_stem(w) for w in _WORD.findall(folded) if w not in _STOP_WORDS]


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "i"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for ending in ("ing", "ed"):
        if len(word) > len(ending) + 2 and word.endswith(ending):
            word = word[: -len(ending)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":  # running -> run
                word = word[:-1]
            break
    return word


class FakeRecallSource:
    """A recall source over memories held in memory, for testing a channel.

    Args:
        memories: Texts, dicts of :class:`~memory_retrievers.Memory` fields (``text`` required), or
            memories. Missing ids are ``m0``, ``m1``...; missing ``created_at`` one minute apart
            from 2024-05-01 12:00 UTC, in the given order.
        namespace: The namespace every memory belongs to.
        embedder: Embeds the memories (and a channel test's queries); default ``HashEmbedder(64)``.

    Raises:
        ConfigError: Two memories share an id, or an item is none of the above.

    Example:
        >>> import asyncio
        >>> from memory_retrievers import FtsField
        >>> source = FakeRecallSource(["the kettle is in the kitchen", "tea at five"])
        >>> asyncio.run(source.text_search("kettle", FtsField.TEXT, 5)).ids
        ('m0',)
    """

    def __init__(
        self,
        memories: Sequence[str | Mapping[str, Any] | Memory] = (),
        *,
        namespace: str = "test",
        embedder: Embedder | None = None,
    ) -> None:
        self._namespace = namespace
        self.embedder: Embedder = embedder or HashEmbedder(64)
        self._memories: dict[str, Memory] = {}
        given: set[str] = set()
        now = datetime.now(timezone.utc)
        for i, item in enumerate(memories):
            memory = _as_memory(item, i, namespace)
            if memory.id in given:
                raise ConfigError(f"memories: id {memory.id!r} is given twice")
            given.add(memory.id)
            # What the store's sources leave out under recall's default filter: replaced and expired memories.
            if memory.superseded_by is None and (memory.expires_at is None or memory.expires_at > now):
                self._memories[memory.id] = memory
        ids = list(self._memories)
        texts = [self._memories[i].text for i in ids]
        vectors = self.embedder.embed_documents(texts) if texts else np.zeros((0, self.embedder.dimension))
        self._vectors = {id_: np.asarray(v, dtype=np.float32) for id_, v in zip(ids, vectors, strict=True)}
        self._handed_out: set[str] = set()

    def __repr__(self) -> str:
        return f"FakeRecallSource({len(self._memories)} memories, namespace={self._namespace!r})"

    @property
    def namespace(self) -> str:
        """The namespace read."""
        return self._namespace

    @property
    def description(self) -> str:
        """What the source is, for a recall plan's notes."""
        return f"fake source: {len(self._memories)} memories in memory"

    @property
    def handed_out(self) -> frozenset[str]:
        """Every id a search or :meth:`fetch` returned so far: the ids a channel may list."""
        return frozenset(self._handed_out)

    def _hits(self, scored: Sequence[tuple[str, float]], k: int) -> SourceHits:
        # Best first; equal scores newest first, then by id, so every run gives the same order.
        order = sorted(scored, key=lambda pair: (-pair[1], -self._seconds(pair[0]), pair[0]))[: max(k, 0)]
        self._handed_out.update(id_ for id_, _ in order)
        return SourceHits(tuple(id_ for id_, _ in order), tuple(float(s) for _, s in order))

    def _seconds(self, id_: str) -> float:
        created = self._memories[id_].created_at
        return created.timestamp() if created is not None else 0.0

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """BM25 over the memory text, the text with its context, or the entities."""
        field = FtsField(field)
        docs = {
            id_: _words(searched_text(m, field))
            for id_, m in self._memories.items()
            if not with_context_only or m.context
        }
        terms = set(_words(text))
        if not terms or not docs:
            return self._hits([], k)
        average = sum(map(len, docs.values())) / len(docs) or 1.0
        holding = Counter(term for words in docs.values() for term in set(words) & terms)
        scored = []
        for id_, words in docs.items():
            counts = Counter(words)
            score = 0.0
            for term in terms & counts.keys():
                idf = math.log(1 + (len(docs) - holding[term] + 0.5) / (holding[term] + 0.5))
                tf = counts[term]
                score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * len(words) / average))
            if score > 0:
                scored.append((id_, score))
        return self._hits(scored, k)

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """Cosine similarity to a unit ``vector``; only memories created within ``within`` if given."""
        query = np.asarray(vector, dtype=np.float32)
        scored = [
            (id_, float(self._vectors[id_] @ query))
            for id_, m in self._memories.items()
            if not within or (m.created_at is not None and any(span.contains(m.created_at) for span in within))
        ]
        return self._hits(scored, k)

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """Number of shared entities (case-insensitive), ties newest first."""
        wanted = {e.casefold() for e in entities}
        scored = [(id_, float(len(wanted & {e.casefold() for e in m.entities}))) for id_, m in self._memories.items()]
        return self._hits([pair for pair in scored if pair[1] > 0], k)

    async def recency_search(self, k: int) -> SourceHits:
        """Newest first (score: ``created_at`` in POSIX seconds)."""
        return self._hits([(id_, self._seconds(id_)) for id_ in self._memories], k)

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """Of ``ids``, those that exist; they become resolvable."""
        found = tuple(dict.fromkeys(i for i in ids if i in self._memories))
        self._handed_out.update(found)
        return found

    async def has_entities(self) -> bool:
        """Whether any memory has entities."""
        return any(m.entities for m in self._memories.values())

    async def speakers(self) -> frozenset[str]:
        """Names of ``"Name: text"`` memories of kind ``message`` (as the store reads them)."""
        found = (speaker_of(m.text) for m in self._memories.values() if m.kind is MemoryKind.MESSAGE)
        return frozenset(name for name in found if name)

    def memory(self, id_: str) -> Memory:
        """A memory an earlier search or fetch returned (``KeyError`` otherwise, as a real source may)."""
        if id_ not in self._handed_out:
            raise KeyError(f"{id_!r} was not returned by a search or fetch of this source")
        return self._memories[id_]

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """``memory()`` of each id, in order."""
        return [self.memory(id_) for id_ in ids]

    def vector(self, id_: str) -> np.ndarray:
        """Its unit vector (``KeyError`` unless a search or fetch returned it)."""
        self.memory(id_)
        return self._vectors[id_]


async def channel_input(
    channel: Channel,
    source: FakeRecallSource,
    query: str,
    *,
    config: RecallConfig | None = None,
    depth: int = 30,
) -> ChannelInput:
    """What recall hands ``channel.search`` for ``query``, on a fake source.

    The query is analysed as recall does (keywords, entities, dates); embedded with the source's
    embedder when the channel needs :attr:`Need.VECTOR`; and a channel that needs
    :attr:`Need.FUSED` gets a first pass of its own (the source's vector and BM25 hits, fused). The
    weight is the config's for the channel's name, else its ``default_weight``.

    Args:
        channel: The channel to be searched.
        source: The fake source it reads.
        query: The query's text.
        config: The recall config (default ``RecallConfig()``).
        depth: Hits a list should hold (recall's default: 30).
    """
    features = analyze(query)
    terms = " ".join(features.keywords) or query
    vector = source.embedder.embed_query(query) if Need.VECTOR in channel.needs else None
    fused: tuple[Any, ...] = ()
    if Need.FUSED in channel.needs:
        by_vector = (await source.vector_search(source.embedder.embed_query(query), depth)).ids
        by_words = (await source.text_search(terms, FtsField.TEXT, depth)).ids
        fused = tuple(weighted_rrf([RankedList("vector", by_vector), RankedList("bm25", by_words)]))
    config = config or RecallConfig()
    weight = ChannelRegistry([channel]).weight(channel.name, config.weights)
    given = ChannelQuery(query, terms, features, vector=vector)
    return ChannelInput(source, given, config, weight, depth, fused)


def _as_memory(item: str | Mapping[str, Any] | Memory, i: int, namespace: str) -> Memory:
    created = _START + timedelta(minutes=i)
    if isinstance(item, Memory):
        return replace(item, namespace=namespace, created_at=item.created_at or created)
    if isinstance(item, str):
        return Memory(id=f"m{i}", namespace=namespace, text=item, created_at=created)
    if isinstance(item, Mapping) and isinstance(item.get("text"), str):
        fields = {"id": f"m{i}", "created_at": created, **item, "namespace": namespace}
        for name in ("tags", "entities", "links"):
            if name in fields:
                fields[name] = tuple(fields[name])
        try:
            return Memory(**fields)
        except TypeError as exc:  # an unknown field
            raise ConfigError(f"memories[{i}]: {exc}") from None
    raise ConfigError(f"memories[{i}] must be a text, a dict with a 'text' or a Memory, got {type(item).__name__}")
