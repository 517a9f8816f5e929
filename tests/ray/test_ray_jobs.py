"""The bulk jobs on a local Ray instance: import, re-embedding and formation backfill against single-process twins."""

from __future__ import annotations

import functools
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.bulk import backfill_formation, import_records, reembed
from memory_retrievers.errors import InvalidInputError
from memory_retrievers.formation import MemoryFormer
from testing.gated import GatedHashEmbedder
from testing.paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from _data import DEFAULT_LOCOMO, load_turns
from _replay import LoCoMoReplayLLM
from bulk_ray import records_of

# The checkout's own data folder, or the shared one beside the worktrees.
LOCOMO = next(
    (p for p in (DEFAULT_LOCOMO, ROOT.parents[1] / "shared" / "data" / "locomo" / "locomo_dev.json") if p.exists()),
    DEFAULT_LOCOMO,
)
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason="needs the LoCoMo dev split (shared/data/locomo)")

WHEN = datetime(2026, 1, 1, tzinfo=timezone.utc)
FORMED = ["fact", "preference", "event", "insight"]  # facts of every kind, and session summaries


def _locomo_records(limit: int, *, with_ids: bool) -> list[dict[str, Any]]:
    records = records_of(LOCOMO, limit)  # the benchmark's records, so both measure the same input
    if not with_ids:
        return records
    return [{"id": f"{r['namespace']}-{r['metadata']['dia_id']}", **r} for r in records]


def _exported(store: MemoryStore) -> dict[str, list[dict[str, Any]]]:
    return {ns: store.admin.export(ns) for ns in store.namespaces()}


def _same_but_vectors(a: dict[str, Any], b: dict[str, Any], *, ignore: tuple[str, ...] = ()) -> None:
    skip = {"vector", "updated_at", *ignore}
    assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}


@needs_locomo
@pytest.mark.integration
def test_the_ray_import_stores_what_add_many_stores(
    ray_instance: Any, tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    """Same LoCoMo turns through add_many and through the Ray import: same ids, fields, contexts, vectors."""
    records = _locomo_records(300, with_ids=True)
    with (
        MemoryStore(tmp_path / "plain", embedder=minilm) as plain,
        MemoryStore(tmp_path / "ray", embedder=SentenceTransformerEmbedder()) as on_ray,
    ):
        expected = plain.add_many(records, batch_size=64)
        report = import_records(on_ray, records, batch_size=64, workers=2, embed_batch=50)
        assert report.records == len(records) and report.batches == 5
        assert report.added == sum(r.action.value == "added" for r in expected) == len(records)
        mine, theirs = _exported(on_ray), _exported(plain)
        assert sorted(mine) == sorted(theirs) and sum(map(len, theirs.values())) == len(records)
        for ns, rows in theirs.items():
            assert [r["id"] for r in mine[ns]] == [r["id"] for r in rows]
            for a, b in zip(mine[ns], rows, strict=True):
                _same_but_vectors(a, b)
            # Embedded in other batches than add_many's (padding differs): equal to float32 noise.
            assert np.allclose([r["vector"] for r in mine[ns]], [r["vector"] for r in rows], atol=1e-5)


def test_without_ids_the_import_stores_the_same_memories_in_the_same_order(ray_instance: Any, tmp_path: Path) -> None:
    records = [
        {
            "text": f"{['Ann', 'Bo'][i % 2]}: turn {i} about {['tea', 'trains', 'tides'][i % 3]}",
            "namespace": f"user-{i % 4}",
            "kind": "message",
            "session_id": f"s{i % 3}",
            "created_at": WHEN + timedelta(seconds=i),
            "metadata": {"n": i, **({"odd": True} if i % 2 else {})},
        }
        for i in range(900)
    ]
    # The same fact twice: duplicate detection must decide the same way on both paths.
    records += [{"text": "Ann keeps bees.", "namespace": "user-1", "kind": "fact", "created_at": WHEN}] * 2
    with (
        MemoryStore(tmp_path / "plain", embedder=HashEmbedder(64)) as plain,
        MemoryStore(tmp_path / "ray", embedder=HashEmbedder(64)) as on_ray,
    ):
        plain.add_many(records, batch_size=200)
        report = import_records(on_ray, records, batch_size=200, workers=2, embed_batch=64)
        assert (report.records, report.added, report.skipped, report.batches) == (902, 901, 1, 5)
        mine, theirs = _exported(on_ray), _exported(plain)
        for ns, rows in theirs.items():
            assert len(mine[ns]) == len(rows) == 225 + (ns == "user-1")
            for a, b in zip(mine[ns], rows, strict=True):
                _same_but_vectors(a, b, ignore=("id",))  # fresh random ids on both sides
                assert np.array_equal(a["vector"], b["vector"])  # the hash embedder is exact


def test_a_bad_record_stops_the_import_before_anything_is_written(ray_instance: Any, tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        with pytest.raises(InvalidInputError, match=r"record 2: "):
            import_records(store, [{"text": "a"}, {"text": "b"}, {"text": ""}], namespace="n", workers=1)
        assert store.namespaces() == []


def test_reembedding_keeps_ids_timestamps_access_stats_and_supersession(ray_instance: Any, tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "old", embedder=HashEmbedder(64)) as old:
        for ns in ("ann", "bo", "cy"):
            old.add_many(
                [{"text": f"{ns} fact {i}", "created_at": WHEN + timedelta(minutes=i)} for i in range(120)],
                namespace=ns,
            )
        newer = old.supersede(old.list("ann", limit=1)[0].id, "ann fact 0, corrected", namespace="ann")
        read = old.list("bo", limit=3)
        old.record_access([m.id for m in read], namespace="bo")  # access statistics, pending until flushed
        with MemoryStore(tmp_path / "new", table_name="minilm2", embedder=HashEmbedder(32, name="other")) as new:
            report = reembed(old, new, namespaces=["ann", "bo"], batch_size=100, workers=2, embed_batch=40)
            assert (report.records, report.added, report.updated) == (241, 241, 0)
            assert new.namespaces() == ["ann", "bo"]
            before, after = _exported(old), _exported(new)
            for ns in ("ann", "bo"):
                assert [r["id"] for r in after[ns]] == [r["id"] for r in before[ns]]
                for a, b in zip(after[ns], before[ns], strict=True):
                    _same_but_vectors(a, b, ignore=("updated_at",))
                    assert a["updated_at"] == b["updated_at"]
                    assert np.array_equal(a["vector"], HashEmbedder(32).embed_documents([a["text"]])[0])
            assert sum(r["access_count"] for r in after["bo"]) == 3
            assert new.get(newer.id, namespace="ann").supersedes is not None
            # Run again: every memory replaced in place, nothing doubled.
            again = reembed(old, new, namespaces=["ann", "bo"], workers=2)
            assert (again.added, again.updated) == (0, 241)
        with pytest.raises(InvalidInputError, match="same table"):
            reembed(old, old)


def test_a_reembedding_beside_a_writer_copies_the_source_as_it_is_when_it_returns(
    ray_instance: Any, tmp_path: Path
) -> None:
    """Issue 40 item 2, with real Ray workers: writes made after the job read its snapshot (held at
    the first batch until the writes are committed) reach the copy before the job reports done."""
    gate = tmp_path / "gate"
    gate.mkdir()
    with MemoryStore(tmp_path / "old", embedder=HashEmbedder(64)) as old:
        facts = old.add_many([{"text": f"ann fact {i}"} for i in range(50)], namespace="ann")
        paris = old.add("ann lives in Paris", namespace="ann")
        with MemoryStore(tmp_path / "new", embedder=HashEmbedder(32, name="other")) as new:
            factory = functools.partial(GatedHashEmbedder, str(gate), 32, name="other")
            with ThreadPoolExecutor(1) as pool:
                job = pool.submit(reembed, old, new, workers=1, embed_batch=20, embedder_factory=factory)
                deadline = time.monotonic() + 120
                while not (gate / "started").exists() and not job.done() and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert (gate / "started").exists(), "the job never reached its first batch"
                berlin = old.supersede(paris.id, "ann lives in Berlin", namespace="ann")
                added = old.add("ann adopted a cat", namespace="ann")
                old.delete(facts[7].id, namespace="ann")
                (gate / "go").touch()
                report = job.result(timeout=300)
            assert (report.records, report.caught_up, report.skipped) == (51, 3, 1)
            usage = ("vector", "access_count", "last_accessed_at")
            for a, b in zip(new.admin.export("ann"), old.admin.export("ann"), strict=True):
                assert {k: v for k, v in a.items() if k not in usage} == {k: v for k, v in b.items() if k not in usage}
            live = [m.text for m in new.list("ann", limit=100)]
            assert "ann lives in Berlin" in live and "ann adopted a cat" in live and "ann lives in Paris" not in live
            assert new.get(berlin.id, namespace="ann").supersedes == paris.id
            assert new.get(added.id, namespace="ann").text == "ann adopted a cat"


@needs_locomo
def test_formation_backfill_forms_what_a_sequential_run_forms(ray_instance: Any, tmp_path: Path) -> None:
    """Two LoCoMo conversations' first sessions, formed by Ray tasks and by MemoryFormer in a loop."""
    conversations = json.loads(LOCOMO.read_text())[:2]
    wanted = {(c["sample_id"], s) for c in conversations for s in ("session_1", "session_2")}
    turns = [t for t in load_turns(LOCOMO) if (t.conversation, t.session) in wanted]
    records = [
        {
            "text": t.text,
            "namespace": t.conversation,
            "kind": "message",
            "session_id": t.session,
            "created_at": t.created_at + timedelta(seconds=i),
            "metadata": {"dia_id": t.dia_id},
        }
        for i, t in enumerate(turns)
    ]
    namespaces = [c["sample_id"] for c in conversations]
    facts: dict[str, dict[str, list[str]]] = {}
    for label in ("sequential", "ray"):
        with MemoryStore(tmp_path / label, embedder=HashEmbedder(64)) as store:
            store.add_many(records)
            if label == "ray":
                report = backfill_formation(
                    store, functools.partial(LoCoMoReplayLLM, LOCOMO), formation_config={"summarize": True}
                )
                assert [n.namespace for n in report.namespaces] == namespaces
                assert all(n.sessions == 2 and n.summaries == 2 and n.added > 0 for n in report.namespaces)
                assert sum(n.turns for n in report.namespaces) == len(records)
            else:
                former = MemoryFormer(store, llm=LoCoMoReplayLLM(LOCOMO), config={"summarize": True})
                for ns in namespaces:
                    stored = store.list(ns, filter={"kinds": ["message"]}, limit=1000, newest_first=False)
                    for session in ("session_1", "session_2"):
                        former.form([m for m in stored if m.session_id == session], namespace=ns, session_id=session)
            facts[label] = {
                ns: sorted(m.text for m in store.list(ns, filter={"kinds": FORMED}, limit=1000)) for ns in namespaces
            }
    assert facts["ray"] == facts["sequential"]
    assert all(len(texts) > 5 for texts in facts["ray"].values())
