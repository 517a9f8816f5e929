"""The recall stages, one by one, over a hand-made RecallSource (no store, no LanceDB)."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memory_retrievers import FtsField, LLMFallbackWarning, Memory, MemoryKind, RankedList, RecallConfig
from memory_retrievers.recall import RecallSource, SourceHits
from memory_retrievers.recall.assemble import Assembly, assemble
from memory_retrievers.recall.blend import final_scores, fuse, rerank, semantic_blend
from memory_retrievers.recall.calibration import RANK_CALIBRATION
from memory_retrievers.recall.cues import Cues, read_cues
from memory_retrievers.recall.expansion import LLMStages, feedback_pass
from memory_retrievers.recall.fusion import FusedHit, weighted_rrf
from memory_retrievers.recall.links import spread
from memory_retrievers.recall.plan import route
from memory_retrievers.recall.scoring import ScoringContext
from memory_retrievers.recall.stage_searches import Channels
from memory_retrievers.recall.tasks import RecallTasks
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.text.query import analyze
from memory_retrievers.text.speakers import speaker_of
from memory_retrievers.tokens import TiktokenCounter

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)


class FakeSource:
    """Memories in a dict; text search = shared words, vectors given."""

    def __init__(self, memories: Sequence[Memory], vectors: dict[str, np.ndarray]) -> None:
        self.memories = {m.id: m for m in memories}
        self.vectors = vectors
        self.fetched: list[list[str]] = []

    namespace = "u"
    description = "fake"

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        words = set(text.lower().split())
        scored = sorted(
            ((len(words & set(m.text.lower().split())), m.id) for m in self.memories.values()),
            key=lambda t: (-t[0], t[1]),
        )
        kept = [(s, i) for s, i in scored if s > 0][:k]
        return SourceHits(tuple(i for _, i in kept), tuple(float(s) for s, _ in kept))

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        def inside(i: str) -> bool:
            created = self.memories[i].created_at or NOW
            return not within or any(span.contains(created) for span in within)

        pairs = ((float(v @ vector), i) for i, v in self.vectors.items() if inside(i))
        sims = sorted(pairs, key=lambda t: (-t[0], t[1]))[:k]
        return SourceHits(tuple(i for _, i in sims), tuple(s for s, _ in sims))

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        return SourceHits((), ())

    async def recency_search(self, k: int) -> SourceHits:
        ids = sorted(self.memories, key=lambda i: self.memories[i].created_at or NOW, reverse=True)[:k]
        return SourceHits(tuple(ids), tuple(0.0 for _ in ids))

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        self.fetched.append(list(ids))
        return tuple(i for i in ids if i in self.memories)

    async def has_entities(self) -> bool:
        return False

    async def speakers(self) -> frozenset[str]:
        return frozenset(s for m in self.memories.values() if (s := speaker_of(m.text)) is not None)

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        return [self.memory(i) for i in ids]

    def memory(self, id_: str) -> Memory:
        return self.memories[id_]

    def vector(self, id_: str) -> np.ndarray:
        return self.vectors[id_]


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def mem(id_: str, text: str, **kw: object) -> Memory:
    return Memory(id=id_, namespace="u", text=text, created_at=NOW, **kw)  # type: ignore[arg-type]


@pytest.fixture
def source() -> FakeSource:
    memories = [
        mem("a", "the cat sat on the mat", links=("c",)),
        mem("b", "a dog in the park"),
        mem("c", "cat food in the cupboard by the mat", links=("d",)),
        mem("d", "the cupboard is blue"),
    ]
    vectors = {"a": unit(1, 0, 0), "b": unit(0, 1, 0), "c": unit(1, 1, 0), "d": unit(0, 0, 1)}
    return FakeSource(memories, vectors)


def test_a_hand_made_source_satisfies_the_protocol(source: FakeSource) -> None:
    assert isinstance(source, RecallSource)


def test_route_by_mode_and_cues() -> None:
    cfg = RecallConfig()
    auto = route(analyze("what does the cat eat?"), cfg, has_llm=False)
    assert auto.channels == ["vector", "bm25", "context", "links"] and auto.expansion == "off"
    cued = route(analyze("What is the latest news from Alice?"), cfg, has_llm=True)
    assert {"entity", "recency"} <= set(cued.channels) and cued.expansion == "llm" and cued.hyde == "llm"
    hybrid = route(analyze("cat"), RecallConfig(mode="hybrid"), has_llm=False)
    assert hybrid.expansion == "feedback" and hybrid.hyde == "rocchio"
    assert route(analyze("cat"), RecallConfig(mode="vector"), has_llm=True).channels == ["vector"]


async def test_channels_collect_in_launch_order_with_tied_bm25_ranks(source: FakeSource) -> None:
    async with RecallTasks() as tasks:
        channels = Channels(source, tasks, 10, embed=lambda text: asyncio.sleep(0, unit(1, 0, 0)))
        channels.text("bm25", "bm25", 1.0, "cat cupboard", FtsField.TEXT)
        channels.vector("vector", "vector", 2.0, unit(0, 1, 0))
        channels.vector_of_text("hyde", "hyde", 1.0, "anything")
        lists = await channels.collect()
    assert [lst.label for lst in lists] == ["bm25", "vector", "hyde"]
    bm25 = lists[0]
    assert bm25.ids == ("c", "a", "d") and bm25.ranks == (1, 2, 2)  # a and d share one word each
    assert lists[1].ids[0] == "b" and lists[1].ranks is None and lists[1].weight == 2.0
    assert lists[2].ids[0] == "a"
    assert await channels.collect() == []


async def test_the_dated_channel_searches_only_memories_created_within_the_spans() -> None:
    day = datetime(2024, 5, 2, tzinfo=timezone.utc)
    memories = [
        mem("old", "x"),
        replace(mem("that day", "y"), created_at=day),
        replace(mem("later", "z"), created_at=day + timedelta(days=1)),
    ]
    vectors = {"old": unit(1, 0, 0), "that day": unit(0, 1, 0), "later": unit(1, 1, 0)}
    fake = FakeSource(memories, vectors)
    async with RecallTasks() as tasks:
        channels = Channels(fake, tasks, 10, embed=lambda text: asyncio.sleep(0, unit(1, 0, 0)))
        channels.vector("dated", "dated", 2.0, unit(1, 0, 0), within=[DateSpan(day, day + timedelta(days=1))])
        channels.vector("vector", "vector", 1.0, unit(1, 0, 0))
        dated, plain = await channels.collect()
    assert dated.ids == ("that day",) and dated.channel == "dated"
    assert plain.ids == ("old", "later", "that day")


class CountingSource(FakeSource):
    asked = 0

    async def speakers(self) -> frozenset[str]:
        self.asked += 1
        return await super().speakers()


async def test_cues_name_the_namespaces_speakers_and_strip_them_for_the_vector_query() -> None:
    memories = [mem("a", "Caroline: I went to the group"), mem("b", "Melanie: I painted", kind=MemoryKind.MESSAGE)]
    fake = CountingSource(memories, {"a": unit(1, 0, 0), "b": unit(0, 1, 0)})
    query = "What did Melanie's kids paint with Caroline?"
    cues = await read_cues(query, fake.speakers, RecallConfig(), own_vector=True)
    assert cues.speakers == ("Melanie", "Caroline")
    assert cues.speaker_free == "What did kids paint with?"
    ctx = cues.scoring(ScoringContext(now=NOW), analyze("on 2 May 2024, " + query))
    assert ctx.speakers == {"melanie", "caroline"} and ctx.dates[0].start == datetime(2024, 5, 2, tzinfo=timezone.utc)
    # A caller's query_vector is used as given: nothing to embed without the names.
    assert (await read_cues(query, fake.speakers, RecallConfig(), own_vector=False)).speaker_free is None
    no_free = RecallConfig(query={"speaker_free_vector": False})
    assert (await read_cues(query, fake.speakers, no_free, own_vector=True)).speaker_free is None
    assert (await read_cues("What did Dana say?", fake.speakers, RecallConfig(), own_vector=True)).speakers == ()
    # Both cues off: the namespace's speakers are not even read.
    asked = fake.asked
    off = RecallConfig(scoring={"speaker_boost": 1.0}, query={"speaker_free_vector": False})
    assert await read_cues(query, fake.speakers, off, own_vector=True) == Cues()
    assert fake.asked == asked


async def test_recall_tasks_cancel_what_is_still_running_when_the_recall_fails() -> None:
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def boom() -> None:
        raise RuntimeError("channel failed")

    with pytest.raises(RuntimeError, match="channel failed"):
        async with RecallTasks() as tasks:
            tasks.start(forever())
            await tasks.start(boom())
    assert cancelled.is_set()


async def test_links_spread_activation_by_hand(source: FakeSource) -> None:
    fused = weighted_rrf([RankedList("x", ("a", "b"))])
    cfg = RecallConfig(channels={"link_hops": 2, "link_decay": 0.5, "link_seeds": 2})
    links = await spread(fused, source, cfg)
    assert links is not None and links.ids == ("c", "d")  # a -> c (1/1 * 0.5), c -> d (0.5 * 0.5)
    assert source.fetched == [["c"], ["d"]]  # one fetch per hop
    assert await spread(weighted_rrf([RankedList("x", ("b",))]), source, cfg) is None


def test_semantic_blend_by_hand() -> None:
    fused = [FusedHit("a", 0.04, 0.0, ()), FusedHit("b", 0.02, 0.0, ())]
    assert semantic_blend(fused, {"a": 0.1, "b": 0.9}, 0.0) == {"a": 0.04, "b": 0.02}
    blended = semantic_blend(fused, {"a": 0.1, "b": -0.5}, 0.5)
    assert blended["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.1) and blended["b"] == pytest.approx(0.5 * 0.5)


async def test_rerank_blends_within_the_head_and_skips_a_broken_reranker(source: FakeSource) -> None:
    from memory_retrievers.recall.plan import Plan

    fused = [FusedHit(i, s, 0.0, ()) for i, s in (("a", 0.3), ("b", 0.2), ("c", 0.1))]
    base = {"a": 0.3, "b": 0.2, "c": 0.1}
    cfg = RecallConfig(rerank={"rerank_depth": 2, "rerank_weight": 1.0})
    plan = Plan(cfg.mode, analyze("q"))

    class Flip:
        def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
            return [0.0, 1.0]

        async def arerank(self, query: str, texts: Sequence[str]) -> list[float]:
            return [0.0, 1.0]

    raw, out = await rerank(Flip(), "q", fused, source.memories, base, cfg, plan)
    assert raw == {"a": 0.0, "b": 1.0}
    assert out == {"a": pytest.approx(0.2), "b": pytest.approx(0.3), "c": 0.1}  # c, below the head, keeps its place

    class Garbage(Flip):
        async def arerank(self, query: str, texts: Sequence[str]) -> list[float]:
            return [float("nan")]

    with pytest.warns(RuntimeWarning, match="reranker failed"):
        raw, out = await rerank(Garbage(), "q", fused, source.memories, base, cfg, plan)
    assert raw == {} and out == base and "reranker failed; skipped" in plan.notes


def test_final_scores_multiply_and_sort(source: FakeSource) -> None:
    fused = fuse([RankedList("x", ("a", "b"))], RecallConfig())
    memories = {"a": mem("a", "x", kind=MemoryKind.RAW), "b": mem("b", "y", pinned=True)}
    scored = final_scores(fused, memories, {"a": 1.0, "b": 1.0}, ScoringContext(now=NOW), RecallConfig())
    assert [s.hit.id for s in scored] == ["b", "a"]
    assert scored[0].score == pytest.approx(1.1) and scored[1].score == pytest.approx(0.5)


def test_assemble_cuts_below_the_floor_and_fits_the_budget(source: FakeSource) -> None:
    from memory_retrievers.recall.plan import Plan

    cfg = RecallConfig(relevance={"relevance_floor": 0.5}, selection={"mmr": False})
    fused = fuse([RankedList("x", ("a", "b", "c", "d"))], cfg)
    base = {h.id: h.score for h in fused}
    base["d"] = 0.0001
    scored = final_scores(
        fused, source.memories, base, ScoringContext(now=NOW), cfg.model_copy(update={"scoring": {"decay": "none"}})
    )
    parts = Assembly("q", source.memories, source.vectors, {}, base, {}, Plan(cfg.mode, analyze("q")), ["x"])
    counter = TiktokenCounter()
    result = assemble(
        scored, parts, cfg, k=10, budget=None, explain=True, counter=counter, calibration=RANK_CALIBRATION
    )
    # d is under the floor; the others come in calibrated order (more content words lift c over b).
    assert [m.id for m in result.memories] == ["a", "c", "b"] and [c.id for c in result.cut] == ["d"]
    assert [m.score for m in result.memories] == sorted((m.score for m in result.memories), reverse=True)
    tight = assemble(scored, parts, cfg, k=10, budget=20, explain=False, counter=counter, calibration=RANK_CALIBRATION)
    assert tight.tokens_used <= 20 and tight.trimmed and len(tight.memories) < 3
    assert tight.tokens_used == counter.count(tight.to_context())


async def test_feedback_pass_reads_the_top_hits_through_the_source(source: FakeSource) -> None:
    cfg = RecallConfig(mode="hybrid", query_expansion={"feedback_docs": 2, "feedback_terms": 2})
    plan = route(analyze("cat"), cfg, has_llm=False)
    fused = weighted_rrf([RankedList("x", ("a", "c"))])
    async with RecallTasks() as tasks:
        channels = Channels(source, tasks, 10, embed=lambda t: asyncio.sleep(0, unit(1, 0, 0)))
        feedback_pass(plan, fused, unit(1, 0, 0), cfg, source, channels)
        lists = await channels.collect()
    assert [lst.label for lst in lists] == ["context:feedback", "hyde:rocchio"]
    assert "feedback terms: mat" in plan.notes  # the word both top hits share


async def test_llm_stages_fall_back_on_timeouts_and_garbage(source: FakeSource) -> None:
    class Slow:
        def complete(self, prompt: str) -> str:  # pragma: no cover
            raise AssertionError

        async def acomplete(self, prompt: str) -> str:
            if "hypothetical" in prompt or "Message:" in prompt:
                return "\x00"
            await asyncio.sleep(10)
            return ""

    cfg = RecallConfig(query_expansion={"llm_timeout_s": 0.05})
    plan = route(analyze("what does the cat eat?"), cfg, has_llm=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with RecallTasks() as tasks:
            stages = LLMStages(Slow(), plan, "what does the cat eat?", cfg, tasks)
            channels = Channels(source, tasks, 10, embed=lambda t: asyncio.sleep(0, unit(1, 0, 0)))
            await stages.launch_lists(channels)
            assert await channels.collect() == []
    assert plan.expansion == "off" and plan.hyde == "off"
    assert any(issubclass(w.category, LLMFallbackWarning) and "timed out" in str(w.message) for w in caught)
