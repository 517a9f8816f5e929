"""Search primitives, and the two recall sources: a view and the table give the same answers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memory_retrievers import FtsField, MemoryFilter, MemoryKind, StoreConfig
from memory_retrievers.filters import build_where
from memory_retrievers.recall import RecallSource
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.maintenance import Maintainer
from memory_retrievers.storage.search import Searcher
from memory_retrievers.storage.sources import TableSource, ViewSource
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.storage.views import ViewCache
from memory_retrievers.text.dates import DateSpan

from .conftest import EMBEDDER, T0, new_table, rows


@pytest.fixture
async def searcher(table: MemoryTable) -> Searcher:
    s = Searcher(table, AccessLog(table))
    Maintainer(table, StoreConfig(), AccessLog(table))  # builds the FTS indexes after the first write
    await table.add(rows("u", ["the cat sat", "a cat and a dog", "dogs bark"], entities=["pets"]))
    await table.add(rows("u", ["tea in the morning"], kind="preference", tags=["drink"]))
    await table.add(rows("u", ["cat food is in the cupboard"], entities=["pets", "kitchen"], tags=["house"]))
    await table.add(rows("other", ["cat from another tenant"]))
    return s


async def test_searches_rank_ties_by_id_and_never_leave_the_namespace(searcher: Searcher) -> None:
    where = build_where("u")
    fts = await searcher.fts("cat", where, 10, FtsField.TEXT, ["id", "text"])
    assert "cat from another tenant" not in fts.column("text").to_pylist() and fts.num_rows == 3
    scores = fts.column("_score").to_pylist()
    assert scores == sorted(scores, reverse=True)
    near = await searcher.nearest(EMBEDDER.embed_query("cat"), where, 10, ["id"])
    assert near.num_rows == 5
    ents = await searcher.by_entities(["PETS", "kitchen"], where, 10, ["id", "text"])
    assert ents.column("text").to_pylist()[0] == "cat food is in the cupboard"
    assert ents.column("_score").to_pylist() == [2.0, 1.0, 1.0, 1.0]


async def test_the_entity_cue_cache_learns_from_commits(table: MemoryTable) -> None:
    s = Searcher(table, AccessLog(table))
    assert await s.has_entities("u") is False
    await table.add(rows("u", ["tagged"], entities=["alice"]))
    assert await s.has_entities("u") is True  # set by the commit, without waiting for the cache to age


async def test_the_speaker_cache_reads_the_newest_chat_turns_and_learns_from_commits(tmp_path: Path) -> None:
    table = new_table(tmp_path / "db", read_consistency_interval=timedelta(0))
    await table.open()
    s = Searcher(table, AccessLog(table))
    assert await s.speakers("u") == frozenset()
    await table.add(rows("u", ["Caroline: I went to the group", "Melanie: I painted a sunset"], kind="message"))
    await table.add(rows("u", ["Note: a fact, not a turn"], kind="fact"))
    await table.add(rows("u", ["user: lower-case roles are not names"], kind="message"))
    await table.add(rows("other", ["Zed: another tenant"], kind="message"))
    assert await s.speakers("u", max_age_s=0) == {"Caroline", "Melanie"}
    await table.add(rows("u", ["Bob: I just joined"], kind="message"))
    assert await s.speakers("u") == {"Caroline", "Melanie", "Bob"}  # from the commit, the cache not aged
    # Another process's write is not a commit of this store: seen once the cache has aged.
    other = new_table(tmp_path / "db")
    await other.open()
    await other.add(rows("u", ["Dana: hello from elsewhere"], kind="message"))
    assert "Dana" not in await s.speakers("u")
    assert "Dana" in await s.speakers("u", max_age_s=0)
    assert await s.speakers("other") == {"Zed"}


FILTERS = [
    MemoryFilter(),
    MemoryFilter(kinds=[MemoryKind.PREFERENCE]),
    MemoryFilter(tags_any=["house", "drink"]),
    MemoryFilter(entities_any=["Pets"]),
    MemoryFilter(include_superseded=True),
]


@pytest.mark.parametrize("flt", FILTERS)
async def test_view_and_table_sources_give_the_same_results(
    searcher: Searcher, table: MemoryTable, flt: MemoryFilter
) -> None:
    view = await ViewCache(table, max_rows=100).get("u")
    assert view is not None
    sources = [ViewSource(view, flt, searcher), TableSource("u", flt, searcher)]
    assert all(isinstance(s, RecallSource) for s in sources)
    a, b = sources
    for field in FtsField:
        hits_a, hits_b = await a.text_search("cat dog pets", field, 10), await b.text_search("cat dog pets", field, 10)
        assert hits_a.ids == hits_b.ids and hits_a.scores == pytest.approx(hits_b.scores)
    q = EMBEDDER.embed_query("a cat in the kitchen")
    va, vb = await a.vector_search(q, 10), await b.vector_search(q, 10)
    assert va.ids == vb.ids and va.scores == pytest.approx(vb.scores, abs=1e-5)
    assert (await a.entity_search(["pets"], 10)).ids == (await b.entity_search(["pets"], 10)).ids
    assert (await a.recency_search(10)).ids == (await b.recency_search(10)).ids
    # The dated channel: only memories created within the spans (each batch above starts at T0).
    spans = [DateSpan(T0, T0 + timedelta(seconds=1))]
    wa, wb = await a.vector_search(q, 10, within=spans), await b.vector_search(q, 10, within=spans)
    assert wa.ids == wb.ids and wa.scores == pytest.approx(wb.scores, abs=1e-5)
    assert list(wa.ids) == [i for i in va.ids if a.memory(i).created_at == T0]  # the same order, those within
    assert await a.speakers() == await b.speakers()
    for id_ in va.ids:
        assert a.memory(id_) == b.memory(id_)
        assert np.allclose(a.vector(id_), b.vector(id_))
    every = list(view.index)
    assert await a.fetch([*every, "no-such-id"]) == await b.fetch([*every, "no-such-id"])


async def test_fetch_applies_the_filter(searcher: Searcher, table: MemoryTable) -> None:
    view = await ViewCache(table, max_rows=100).get("u")
    assert view is not None
    flt = MemoryFilter(kinds=[MemoryKind.PREFERENCE])
    ids = list(view.index)
    for source in (ViewSource(view, flt, searcher), TableSource("u", flt, searcher)):
        fetched = await source.fetch(ids)
        assert [source.memory(i).text for i in fetched] == ["tea in the morning"]


async def test_equal_timestamps_are_ordered_by_id_in_both_sources(table: MemoryTable) -> None:
    # Regression: a frozen clock gives many rows one created_at; the view and LanceDB broke those
    # ties differently, so recall depended on the namespace's size.
    searcher = Searcher(table, AccessLog(table))
    for batch in range(4):
        await table.add(rows("u", [f"memory {batch}"], entities=["same"]))  # every batch starts at T0
    view = await ViewCache(table, max_rows=100).get("u")
    assert view is not None
    by_id = sorted(view.index)
    for source in (ViewSource(view, MemoryFilter(), searcher), TableSource("u", MemoryFilter(), searcher)):
        assert (await source.recency_search(10)).ids == tuple(by_id)
        assert (await source.entity_search(["same"], 10)).ids == tuple(by_id)
    page = await searcher.page("u", MemoryFilter(), limit=2, offset=2, newest_first=True)
    assert [m.id for m in page] == by_id[2:]


async def test_equal_vectors_rank_by_id_in_both_sources(table: MemoryTable) -> None:
    # Regression (found by the two-writers property test): a view ranked equal vectors by their
    # position (a matrix product rounds rows in blocks differently), LanceDB by id.
    searcher = Searcher(table, AccessLog(table))
    texts = [f"note {i} about {'garden' if i % 3 else 'kettle'} things" for i in range(40)]
    for i in (2, 9, 17, 26, 38):
        texts[i] = "the kettle in the garden"  # five equal vectors, far apart in the matrix
    await table.add(rows("u", texts))
    view = await ViewCache(table, max_rows=100).get("u")
    assert view is not None
    q = EMBEDDER.embed_query("the kettle in the garden")
    found = []
    for source in (ViewSource(view, MemoryFilter(), searcher), TableSource("u", MemoryFilter(), searcher)):
        hits = await source.vector_search(q, 3)  # the cut falls inside the tie
        equal = sorted(i for i in view.index if view.memory(view.index[i]).text == "the kettle in the garden")
        assert list(hits.ids) == equal[:3]
        found.append(hits)
    assert found[0] == found[1]


async def test_the_context_field_votes_only_for_memories_that_have_a_context(table: MemoryTable) -> None:
    s = Searcher(table, AccessLog(table))
    Maintainer(table, StoreConfig(), AccessLog(table))
    await table.add(rows("u", ["sushi is Bob's favourite food"]))  # a plain fact: no context
    await table.add(rows("u", ["yes, every Friday"], context="do you eat sushi?\nwith Bob"))
    view = await ViewCache(table, max_rows=100).get("u")
    assert view is not None
    for source in (ViewSource(view, MemoryFilter(), s), TableSource("u", MemoryFilter(), s)):
        ctx = await source.text_search("sushi Bob", FtsField.CONTEXT, 10, with_context_only=True)
        assert [source.memory(i).text for i in ctx.ids] == ["yes, every Friday"]
        every = await source.text_search("sushi Bob", FtsField.CONTEXT, 10)  # rewrites and feedback terms
        assert {source.memory(i).text for i in every.ids} == {"yes, every Friday", "sushi is Bob's favourite food"}
        text = await source.text_search("sushi Bob", FtsField.TEXT, 10)
        assert [source.memory(i).text for i in text.ids] == ["sushi is Bob's favourite food"]
    # The public primitive still searches every memory's text with its context.
    assert (await s.fts("sushi Bob", build_where("u"), 10, FtsField.CONTEXT, ["id"])).num_rows == 2


async def test_the_context_channel_finds_a_memory_with_context_below_k_plain_ones(table: MemoryTable) -> None:
    # The context channel over-fetches and keeps memories that have a context (a prefilter on that
    # would scan the whole column): plain memories ranked above must not crowd one out.
    s = Searcher(table, AccessLog(table))
    Maintainer(table, StoreConfig(), AccessLog(table))
    await table.add(rows("u", [f"sushi sushi with Bob, plain note {i}" for i in range(3)]))
    await table.add(rows("u", ["yes, every Friday"], context="sushi?"))
    view = await ViewCache(table, max_rows=100).get("u")
    assert view is not None
    for source in (ViewSource(view, MemoryFilter(), s), TableSource("u", MemoryFilter(), s)):
        every = await source.text_search("sushi Bob", FtsField.CONTEXT, 2)
        assert all("plain note" in source.memory(i).text for i in every.ids)  # k=2: both places taken
        ctx = await source.text_search("sushi Bob", FtsField.CONTEXT, 2, with_context_only=True)
        assert [source.memory(i).text for i in ctx.ids] == ["yes, every Friday"]


async def test_a_patched_view_finds_new_entities_and_its_predecessor_does_not(table: MemoryTable) -> None:
    # The entity index is built once per view and extended by appends, copy on write: a recall
    # still holding the older view must not see rows past its end.
    s = Searcher(table, AccessLog(table))
    await table.add(rows("u", ["Alice likes tea", "Bob likes coffee"], entities=["alice"]))
    cache = ViewCache(table, max_rows=100)
    old = await cache.get("u")
    assert old is not None
    assert len((await ViewSource(old, MemoryFilter(), s).entity_search(["Alice"], 10)).ids) == 2  # index built
    await table.add(rows("u", ["Alice moved to Paris"], entities=["alice", "paris"]))
    new = await cache.get("u")
    assert new is not None and new is not old
    found = await ViewSource(new, MemoryFilter(), s).entity_search(["alice", "PARIS"], 10)
    assert new.memory(new.index[found.ids[0]]).text == "Alice moved to Paris"
    assert len(found.ids) == 3 and found.scores[0] == 2.0
    assert (await ViewSource(old, MemoryFilter(), s).entity_search(["paris"], 10)).ids == ()
    assert len((await ViewSource(old, MemoryFilter(), s).entity_search(["alice"], 10)).ids) == 2
