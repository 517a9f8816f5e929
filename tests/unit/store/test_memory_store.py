"""MemoryStore against real LanceDB tables in tmp dirs, with the deterministic hash embedder."""

from __future__ import annotations

import io
import random
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import lancedb
import numpy as np
import pytest

from memory_retrievers import (
    DedupPolicy,
    DimensionMismatchError,
    FtsField,
    HashEmbedder,
    InvalidInputError,
    Memory,
    MemoryKind,
    MemoryStore,
    NotFoundError,
    SchemaMismatchError,
    WriteAction,
)

Make = Callable[..., MemoryStore]


def table_version(store: MemoryStore) -> int:
    return int(lancedb.connect(store.uri).open_table(store.table_name).version)


def open_table(store: MemoryStore):  # a fresh handle sees the latest version
    return lancedb.connect(store.uri).open_table(store.table_name)


def test_add_returns_full_record(store: MemoryStore, clock) -> None:
    mem = store.add(
        "Alice prefers the dark theme",
        namespace="alice",
        kind="preference",
        session_id="s1",
        project="ui",
        topic="settings",
        tags=["theme"],
        entities=["Alice"],
        priority=2.0,
        pinned=True,
        importance=0.9,
        links=["other"],
        metadata={"source": "chat", "turn": 3},
    )
    assert mem.action is WriteAction.ADDED and mem.duplicate_of is None
    assert len(mem.id) == 32
    assert mem.kind is MemoryKind.PREFERENCE and mem.pinned and mem.priority == 2.0
    assert mem.entities == ("alice",) and mem.tags == ("theme",) and mem.links == ("other",)
    assert mem.created_at == clock.now and mem.updated_at == clock.now
    assert mem.access_count == 0 and mem.last_accessed_at is None
    assert mem.metadata == {"source": "chat", "turn": 3}
    got = store.get(mem.id, namespace="alice")
    assert isinstance(got, Memory) and not isinstance(got, type(mem))
    assert got.to_dict() == {
        k: v for k, v in mem.to_dict().items() if k not in ("action", "duplicate_of", "similarity", "reason")
    }


def test_caller_id_is_kept_and_reused_as_upsert(store: MemoryStore, clock) -> None:
    first = store.add("v1 of the note", namespace="n", id="note-1", tags=["a"])
    clock.advance(hours=1)
    second = store.add("v2 of the note", namespace="n", id="note-1")
    assert first.action is WriteAction.ADDED and second.action is WriteAction.UPDATED
    assert second.id == "note-1"
    got = store.get("note-1", namespace="n")
    assert got.text == "v2 of the note" and got.tags == ()
    assert got.created_at == first.created_at  # history survives an upsert
    assert got.updated_at == clock.now
    assert store.count("n") == 1


def test_same_id_in_two_namespaces_are_two_memories(store: MemoryStore) -> None:
    store.add("alice's note", namespace="alice", id="shared")
    store.add("bob's note", namespace="bob", id="shared")
    assert store.get("shared", namespace="alice").text == "alice's note"
    assert store.get("shared", namespace="bob").text == "bob's note"


def test_add_many_commits_once_per_batch(store: MemoryStore) -> None:
    store.add("warm up so indexes exist", namespace="n")
    before = table_version(store)
    out = store.add_many(
        [{"text": f"distinct memory number {i} about topic {i * 7}"} for i in range(25)], namespace="n", batch_size=10
    )
    assert [m.action for m in out] == [WriteAction.ADDED] * 25
    assert table_version(store) - before == 3  # 10 + 10 + 5
    assert store.count("n") == 26
    # order of the batch is preserved in created_at
    created = [m.created_at for m in out]
    assert created == sorted(created) and len(set(created)) == 25


def test_add_many_validates_everything_before_writing(store: MemoryStore) -> None:
    store.add("existing", namespace="n")
    before = table_version(store)
    records = [{"text": "fine"}] * 5 + [{"text": ""}]
    with pytest.raises(InvalidInputError, match="record 5: text is empty"):
        store.add_many(records, namespace="n", batch_size=2)
    assert table_version(store) == before and store.count("n") == 1


def test_add_many_rejects_a_single_dict_and_bad_batch_size(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="list of dicts"):
        store.add_many({"text": "x"}, namespace="n")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="batch_size"):
        store.add_many([{"text": "x"}], namespace="n", batch_size=0)


def test_add_many_progress_bar(store: MemoryStore, capsys) -> None:
    store.add_many([{"text": f"memory {i} unique words {i}"} for i in range(3)], namespace="n", progress=True)
    assert "add_many" in capsys.readouterr().err


def test_new_memory_found_by_fts_and_vector_immediately(store: MemoryStore) -> None:
    store.add_many([{"text": f"filler memory {i} about gardening"} for i in range(20)], namespace="n")
    store.admin.optimize()
    fresh = store.add("The wifi password is hunter2", namespace="n")
    assert store.fts_search("wifi password", namespace="n")[0].id == fresh.id
    assert store.vector_search("wifi password hunter2", namespace="n", k=1)[0].id == fresh.id
    # and by the caller's own vector
    vec = HashEmbedder(32).embed_query("The wifi password is hunter2")
    hit = store.vector_search(vec, namespace="n", k=1)[0]
    assert hit.id == fresh.id and hit.score == pytest.approx(1.0, abs=1e-5)


def test_exact_duplicate_is_skipped_by_default(store: MemoryStore) -> None:
    a = store.add("I live in Berlin", namespace="n")
    b = store.add("I live in   Berlin \n", namespace="n")  # only whitespace differs
    assert b.action is WriteAction.SKIPPED and b.duplicate_of == a.id and b.similarity == 1.0
    assert b.id == a.id and b.text == "I live in Berlin" and "exact duplicate" in (b.reason or "")
    assert store.count("n") == 1
    # case is not whitespace: "Hunter2" is not "hunter2" (see tests/unit/storage/test_duplicates.py)
    assert store.add("i live in berlin", namespace="n").action is WriteAction.ADDED


def test_dedup_is_per_namespace(store: MemoryStore) -> None:
    store.add("I live in Berlin", namespace="alice")
    b = store.add("I live in Berlin", namespace="bob")
    assert b.action is WriteAction.ADDED and store.count("bob") == 1


def test_near_duplicate_detected_with_threshold(make_store: Make) -> None:
    store = make_store(config={"near_duplicate_threshold": 0.8})
    first, second = "alice likes green tea in the morning", "alice likes the green tea, in the morning!"
    a = store.add(first, namespace="n")
    b = store.add(second, namespace="n")
    sim = float(HashEmbedder(32).embed_query(first) @ HashEmbedder(32).embed_query(second))
    assert sim >= 0.8  # the premise of this test
    assert b.action is WriteAction.SKIPPED and b.duplicate_of == a.id and b.similarity == pytest.approx(sim, abs=1e-4)
    c = store.add("the stock market crashed on monday", namespace="n")
    assert c.action is WriteAction.ADDED


def test_dedup_policy_update_rewrites_the_existing_memory(make_store: Make, clock) -> None:
    store = make_store(config={"dedup_policy": "update"})
    a = store.add("I live in Berlin", namespace="n", tags=["home"])
    clock.advance(days=1)
    b = store.add("I live in Berlin!", namespace="n", tags=["city"])
    assert b.action is WriteAction.UPDATED and b.id == a.id and b.duplicate_of == a.id
    got = store.get(a.id, namespace="n")
    assert got.text == "I live in Berlin!" and got.tags == ("city",)
    assert got.created_at == a.created_at and got.updated_at == clock.now
    assert store.count("n") == 1


def test_dedup_policy_keep_both(make_store: Make) -> None:
    store = make_store(config={"dedup_policy": DedupPolicy.KEEP_BOTH})
    a = store.add("I live in Berlin", namespace="n")
    b = store.add("I live in Berlin", namespace="n")
    assert b.action is WriteAction.ADDED and b.id != a.id and b.duplicate_of == a.id
    assert store.count("n") == 2


def test_in_batch_duplicates(store: MemoryStore) -> None:
    out = store.add_many([{"text": "same"}, {"text": "other thing"}, {"text": "same."}], namespace="n")
    assert [m.action for m in out] == [WriteAction.ADDED, WriteAction.ADDED, WriteAction.SKIPPED]
    assert out[2].duplicate_of == out[0].id and out[2].id == out[0].id
    assert store.count("n") == 2


def test_messages_are_exempt_from_dedup_and_dedup_can_be_disabled(store: MemoryStore) -> None:
    store.add_many([{"text": "ok", "kind": "message"}, {"text": "ok", "kind": "message"}], namespace="n")
    assert store.count("n") == 2
    store.add("a fact", namespace="n")
    assert store.add("a fact", namespace="n", dedup=False).action is WriteAction.ADDED
    assert store.count("n") == 4


def test_same_id_twice_in_a_batch_last_wins(store: MemoryStore) -> None:
    out = store.add_many([{"id": "x", "text": "first"}, {"id": "x", "text": "second"}], namespace="n")
    assert out[0].action is WriteAction.SKIPPED and out[0].duplicate_of is None
    assert out[1].action is WriteAction.ADDED
    assert store.get("x", namespace="n").text == "second" and store.count("n") == 1


def test_context_window_fills_neighbouring_turns(make_store: Make) -> None:
    store = make_store(config={"context_window": 1})
    turns = [{"text": f"turn {i}", "kind": "message", "session_id": "s"} for i in range(3)]
    out = store.add_many(turns, namespace="n")
    assert [store.get(m.id, namespace="n").context for m in out] == ["turn 1", "turn 0\nturn 2", "turn 1"]
    # a later single turn is one commit; extending its predecessor's context is a second,
    # update-only one (so a predecessor deleted meanwhile, even by another process, stays deleted:
    # see tests/reliability for that race)
    before = table_version(store)
    new = store.add("turn 3", namespace="n", kind="message", session_id="s")
    assert table_version(store) - before == 2
    assert new.context == "turn 2"
    assert store.get(out[2].id, namespace="n").context == "turn 1\nturn 3"
    # other sessions and caller-given contexts are left alone
    own = store.add("turn x", namespace="n", kind="message", session_id="other", context="my context")
    assert store.get(own.id, namespace="n").context == "my context"
    assert store.get(new.id, namespace="n").context == "turn 2"


def test_context_is_searchable_by_fts(store: MemoryStore) -> None:
    store.add_many(
        [
            {"text": "Do you still have the blue bicycle?", "kind": "message", "session_id": "s"},
            {"text": "Yes, I ride it every day.", "kind": "message", "session_id": "s"},
        ],
        namespace="n",
    )

    def texts(field: FtsField) -> set[str]:
        return {store.get(h.id, namespace="n").text for h in store.fts_search("bicycle", namespace="n", field=field)}

    assert texts(FtsField.TEXT) == {"Do you still have the blue bicycle?"}
    # the reply never says "bicycle" but is found through its context
    assert texts(FtsField.CONTEXT) == {"Do you still have the blue bicycle?", "Yes, I ride it every day."}


def test_default_window_is_two_turns_each_side(store: MemoryStore) -> None:
    out = store.add_many([{"text": f"t{i}", "kind": "message", "session_id": "s"} for i in range(5)], namespace="n")
    assert store.get(out[2].id, namespace="n").context == "t0\nt1\nt3\nt4"
    later = store.add("t5", namespace="n", kind="message", session_id="s")
    assert later.context == "t3\nt4"
    assert store.get(out[3].id, namespace="n").context == "t1\nt2\nt4\nt5"
    assert store.get(out[4].id, namespace="n").context == "t2\nt3\nt5"


def test_context_window_zero_disables(make_store: Make) -> None:
    store = make_store(config={"context_window": 0})
    out = store.add_many([{"text": f"t{i}", "kind": "message", "session_id": "s"} for i in range(2)], namespace="n")
    assert all(store.get(m.id, namespace="n").context is None for m in out)


def test_update_changes_fields_and_reembeds_text(store: MemoryStore, clock) -> None:
    m = store.add("old text about cats", namespace="n", tags=["pets"])
    clock.advance(minutes=5)
    u = store.update(m.id, namespace="n", text="new text about dogs", priority=3.0)
    assert u.text == "new text about dogs" and u.priority == 3.0 and u.tags == ("pets",)
    assert u.created_at == m.created_at and u.updated_at == clock.now
    assert store.vector_search("new text about dogs", namespace="n", k=1)[0].score == pytest.approx(1.0, abs=1e-5)
    assert store.fts_search("dogs", namespace="n")[0].id == m.id
    assert store.fts_search("cats", namespace="n") == []


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({}, InvalidInputError, "at least one field"),
        ({"id": "other"}, InvalidInputError, "cannot be changed"),
        ({"colour": "red"}, InvalidInputError, "unknown field"),
        ({"priority": 99}, InvalidInputError, "priority"),
    ],
)
def test_update_rejects_bad_fields(store: MemoryStore, fields: dict, error: type[Exception], message: str) -> None:
    m = store.add("some memory", namespace="n")
    with pytest.raises(error, match=message):
        store.update(m.id, namespace="n", **fields)
    assert store.get(m.id, namespace="n").priority == 1.0


def test_update_missing_id(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError, match="no memory 'nope'"):
        store.update("nope", namespace="n", text="x")


def test_supersede_links_both_and_hides_the_old(store: MemoryStore) -> None:
    old = store.add("Alice lives in Paris", namespace="n", kind="fact", tags=["home"], entities=["alice"])
    before = table_version(store)
    new = store.supersede(old.id, "Alice lives in Berlin", namespace="n")
    # Two commits: the new memory (insert-only), then the old one's link (update-only). One merge
    # of both would insert the old memory back if another process deleted it meanwhile.
    assert table_version(store) - before == 2
    assert new.supersedes == old.id and new.tags == ("home",) and new.entities == ("alice",)
    assert store.get(old.id, namespace="n").superseded_by == new.id
    assert store.count("n") == 1 and store.count("n", filter={"include_superseded": True}) == 2
    assert [h.id for h in store.fts_search("Alice lives", namespace="n")] == [new.id]
    assert {h.id for h in store.fts_search("Alice lives", namespace="n", filter={"include_superseded": True})} == {
        old.id,
        new.id,
    }
    with pytest.raises(InvalidInputError, match="already superseded"):
        store.supersede(old.id, "Alice lives in Rome", namespace="n")
    newer = store.supersede(new.id, {"text": "Alice lives in Rome", "tags": ["moved"]}, namespace="n")
    assert newer.tags == ("moved",)
    with pytest.raises(NotFoundError):
        store.supersede("missing", "x", namespace="n")


def test_supersede_interrupted_between_its_two_commits_loses_nothing(store: MemoryStore) -> None:
    old = store.add("Alice lives in Paris", namespace="n", kind="fact")

    async def crash(data: object) -> None:
        raise RuntimeError("the process dies here")  # after the new memory's commit

    store._table.rewrite = crash  # type: ignore[method-assign,assignment]
    with pytest.raises(RuntimeError, match="dies here"):
        store.supersede(old.id, {"text": "Alice lives in Berlin", "id": "berlin"}, namespace="n")
    del store._table.rewrite
    # Both live, linked one way: nothing lost, and the supersession can be finished by hand.
    assert store.get(old.id, namespace="n").superseded_by is None
    assert store.get("berlin", namespace="n").supersedes == old.id
    assert store.count("n") == 2
    newer = store.supersede(old.id, "Alice lives in Rome", namespace="n")
    assert store.get(old.id, namespace="n").superseded_by == newer.id


def test_delete_is_all_or_nothing_on_missing_ids(store: MemoryStore) -> None:
    a = store.add("first", namespace="n")
    b = store.add("second", namespace="n")
    with pytest.raises(NotFoundError, match="nothing was deleted") as info:
        store.delete([a.id, "missing"], namespace="n")
    assert info.value.missing == ["missing"]
    assert store.count("n") == 2
    assert store.delete([a.id, "missing"], namespace="n", missing_ok=True) == 1
    assert store.delete(b.id, namespace="n") == 1
    assert store.count("n") == 0


def test_forget_removes_only_that_namespace(store: MemoryStore) -> None:
    store.add_many([{"text": f"a{i} unique"} for i in range(3)], namespace="alice")
    store.add("bob's", namespace="bob")
    assert store.forget("alice") == 3
    assert store.count("alice") == 0 and store.count("bob") == 1
    assert store.forget("alice") == 0


def test_namespaces_lists_every_tenant_with_memories(store: MemoryStore) -> None:
    assert store.namespaces() == []
    store.add_many([{"text": "a"}, {"text": "b"}], namespace="bob")
    store.add("c", namespace="alice' OR 1=1 --")
    assert store.namespaces() == ["alice' OR 1=1 --", "bob"]
    store.forget("bob")
    assert store.namespaces() == ["alice' OR 1=1 --"]


def test_columns_reads_a_few_fields_of_one_or_several_namespaces(store: MemoryStore) -> None:
    turn = store.add("Alice: I have a dog called Rex", namespace="alice", kind="message")
    fact = store.add("Alice's dog is called Rex", namespace="alice", kind="fact", links=[turn.id])
    newer = store.supersede(fact.id, "Alice's dog Rex is a beagle", namespace="alice")
    store.add("Bob likes coffee", namespace="bob")
    store.add("a decoy linking the turn", namespace="alice' OR 1=1 --", links=[turn.id])
    live = store.columns("alice", ["kind", "text"])
    assert live.column_names == ["kind", "text"]
    assert sorted(zip(*(live.column(c).to_pylist() for c in live.column_names), strict=True)) == [
        ("fact", "Alice's dog Rex is a beagle"), ("message", "Alice: I have a dog called Rex")
    ]  # fmt: skip
    every = store.columns("alice", ["id"], filter={"include_superseded": True}).column("id").to_pylist()
    assert sorted(every) == sorted([turn.id, fact.id, newer.id])
    linking = store.columns("alice", ["id"], filter={"links_any": [turn.id], "include_superseded": True})
    assert sorted(linking.column("id").to_pylist()) == sorted([fact.id, newer.id])  # the decoy is another tenant's
    both = store.columns(["bob", "alice", "bob"], ["namespace"]).column("namespace").to_pylist()
    assert sorted(both) == ["alice", "alice", "bob"]
    assert store.columns("alice", ["id"], limit=1).num_rows == 1
    assert store.columns("nobody", ["id"]).num_rows == 0


@pytest.mark.parametrize(
    ("namespace", "columns", "limit", "message"),
    [
        ("alice", ["search_text"], None, "unknown column"),  # internal: not a field of Memory
        ("alice", "text", None, "columns must be a non-empty list"),
        ("alice", [], None, "columns must be a non-empty list"),
        ([], ["text"], None, "namespace must be"),
        (["alice", ""], ["text"], None, "namespace"),
        ("alice", ["text"], 0, "limit"),
    ],
)
def test_columns_refuses_bad_arguments(
    store: MemoryStore, namespace: object, columns: object, limit: object, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        store.columns(namespace, columns, limit=limit)  # type: ignore[arg-type]


def test_version_changes_with_every_commit(store: MemoryStore) -> None:
    before = store.version("alice")
    store.add("Alice likes tea", namespace="alice")
    after = store.version("alice")
    assert after > before and store.version("bob") == after  # one table: one version for every namespace
    with pytest.raises(InvalidInputError, match="namespace"):
        store.version("")


def test_get_order_missing_and_vectors(store: MemoryStore) -> None:
    a = store.add("first thing", namespace="n")
    b = store.add("second thing", namespace="n")
    got = store.get([b.id, a.id], namespace="n")
    assert [m.id for m in got] == [b.id, a.id]
    with pytest.raises(NotFoundError) as info:
        store.get([a.id, "x", "y"], namespace="n")
    assert info.value.missing == ["x", "y"]
    with_vec = store.get(a.id, namespace="n", include_vector=True)
    assert with_vec.vector is not None and len(with_vec.vector) == 32
    assert np.allclose(with_vec.vector, HashEmbedder(32).embed_query("first thing"), atol=1e-6)


def test_list_orders_filters_and_pages(store: MemoryStore, clock) -> None:
    ids = []
    for i in range(5):
        ids.append(store.add(f"memory {i} words{i}", namespace="n", kind="event" if i % 2 else "fact").id)
        clock.advance(minutes=1)
    assert [m.id for m in store.list("n")] == ids[::-1]
    assert [m.id for m in store.list("n", newest_first=False, limit=2, offset=1)] == ids[1:3]
    assert [m.id for m in store.list("n", filter={"kinds": ["event"]})] == [ids[3], ids[1]]
    assert store.count("n", filter={"kinds": "fact"}) == 3


def test_filters_apply_to_every_search(store: MemoryStore, clock) -> None:
    store.add("apples in the garden", namespace="n", project="home", tags=["fruit"], entities=["garden"])
    clock.advance(days=2)
    late = store.add("apples at work", namespace="n", project="work", tags=["fruit", "office"], entities=["garden"])
    only_work = {"projects": ["work"]}
    assert [h.id for h in store.fts_search("apples", namespace="n", filter=only_work)] == [late.id]
    assert [h.id for h in store.vector_search("apples", namespace="n", filter=only_work)] == [late.id]
    assert [h.id for h in store.entity_search(["garden"], namespace="n", filter=only_work)] == [late.id]
    assert [h.id for h in store.recency_search(namespace="n", filter={"tags_all": ["fruit", "office"]})] == [late.id]
    after = {"created_after": clock.now - timedelta(days=1)}
    assert [h.id for h in store.fts_search("apples", namespace="n", filter=after)] == [late.id]


def test_entity_search_scores_overlap_then_recency(store: MemoryStore, clock) -> None:
    one = store.add("met alice", namespace="n", entities=["Alice"])
    clock.advance(minutes=1)
    two = store.add("alice and bob", namespace="n", entities=["alice", "bob"])
    clock.advance(minutes=1)
    newer_one = store.add("bob again", namespace="n", entities=["Bob"])
    hits = store.entity_search(["ALICE", "bob"], namespace="n")
    assert [(h.id, h.score) for h in hits] == [(two.id, 2.0), (newer_one.id, 1.0), (one.id, 1.0)]
    assert store.entity_search(["carol"], namespace="n") == []
    with pytest.raises(InvalidInputError, match="wrap it"):
        store.entity_search("alice", namespace="n")  # type: ignore[arg-type]


def test_recency_search(store: MemoryStore, clock) -> None:
    a = store.add("older", namespace="n")
    clock.advance(hours=1)
    b = store.add("newer", namespace="n")
    hits = store.recency_search(namespace="n", k=5)
    assert [h.id for h in hits] == [b.id, a.id]
    assert hits[0].score == clock.now.timestamp()


def test_search_on_empty_store_returns_nothing(store: MemoryStore) -> None:
    assert store.fts_search("anything", namespace="n") == []
    assert store.vector_search("anything", namespace="n") == []
    assert store.entity_search(["x"], namespace="n") == []
    assert store.recency_search(namespace="n") == []
    assert store.list("n") == [] and store.count("n") == 0


def test_access_statistics_are_batched(make_store: Make, clock) -> None:
    store = make_store(config={"access_flush_size": 1000})
    m = store.add("remember me", namespace="n")
    before = table_version(store)
    for _ in range(3):
        store.record_access([m.id], namespace="n")
    assert table_version(store) == before  # nothing written on the hot path
    got = store.get(m.id, namespace="n")
    assert got.access_count == 3 and got.last_accessed_at == clock.now  # pending counts are visible
    clock.advance(hours=1)
    store.record_access([m.id], namespace="n")
    assert store.admin.flush_access() == 1
    assert table_version(store) == before + 1
    got = store.get(m.id, namespace="n")
    assert got.access_count == 4 and got.last_accessed_at == clock.now
    assert store.admin.flush_access() == 0


def test_access_flush_triggers_in_background_at_threshold(make_store: Make) -> None:
    import time

    store = make_store(config={"access_flush_size": 2})
    a = store.add("one", namespace="n")
    b = store.add("two", namespace="n")
    before = table_version(store)
    store.record_access([a.id, b.id], namespace="n")
    deadline = time.monotonic() + 10
    while table_version(store) == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert table_version(store) > before  # written without a flush or a close
    store.flush()  # the optimize that wrote them is done
    assert store._access.pending == 0  # written, not only held in memory
    assert [m.access_count for m in store.get([a.id, b.id], namespace="n")] == [1, 1]


def test_reopen_after_close_keeps_everything(make_store: Make) -> None:
    store = make_store()
    m = store.add("persist me", namespace="n", tags=["t"], metadata={"k": [1, 2]})
    store.record_access([m.id], namespace="n")
    store.close()
    again = make_store()
    got = again.get(m.id, namespace="n")
    assert got.text == "persist me" and got.tags == ("t",) and got.metadata == {"k": [1, 2]}
    assert got.access_count == 1  # close() wrote the pending access
    assert again.fts_search("persist", namespace="n")[0].id == m.id


def test_closed_store_refuses_work(store: MemoryStore) -> None:
    from memory_retrievers import StorageError

    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.add("x", namespace="n")


def test_reopen_with_other_dimension_or_model_is_refused(make_store: Make) -> None:
    make_store().add("x", namespace="n")
    with pytest.raises(DimensionMismatchError, match="dimension 32"):
        make_store(embedder=HashEmbedder(16))
    with pytest.raises(SchemaMismatchError, match="pass the original embedder"):
        make_store(embedder=HashEmbedder(32, name="another-model"))


def test_foreign_table_is_refused(tmp_path) -> None:
    import pyarrow as pa

    db = lancedb.connect(tmp_path)
    db.create_table("memories", schema=pa.schema([pa.field("id", pa.string())]))
    with pytest.raises(SchemaMismatchError, match="not created by memory-retrievers"):
        MemoryStore(tmp_path, embedder=HashEmbedder(8))


def test_indexes_are_built_after_first_write_and_optimize_on_threshold(make_store: Make) -> None:
    store = make_store(config={"optimize_after_commits": 3})
    assert open_table(store).list_indices() == []
    store.add("first", namespace="n")
    kinds = {(i.index_type, i.columns[0]) for i in open_table(store).list_indices()}
    # full-text search needs its indexes at once; the scalar ones pay off on large tables only
    assert kinds == {("FTS", "text"), ("FTS", "search_text"), ("FTS", "entities")}
    store.add("second", namespace="n")
    store.add("third", namespace="n")
    assert open_table(store).index_stats("text_idx").num_unindexed_rows == 2
    store.add("fourth", namespace="n")  # third commit since the index build: optimize runs, in the background
    store.flush()
    assert open_table(store).index_stats("text_idx").num_unindexed_rows == 0
    kinds = {(i.index_type, i.columns[0]) for i in open_table(store).list_indices()}
    assert {("Bitmap", "namespace"), ("BTree", "id"), ("LabelList", "tags")} <= kinds  # built by that optimize


def test_ann_index_built_past_threshold(make_store: Make) -> None:
    store = make_store(config={"ann_index_min_rows": 300})
    store.add_many([{"text": f"memory {i} about item {i}"} for i in range(320)], namespace="n", dedup=False)
    store.admin.optimize()
    assert any(i.columns == ["vector"] for i in open_table(store).list_indices())
    hit = store.vector_search("memory 17 about item 17", namespace="n", k=1)[0]
    assert store.get(hit.id, namespace="n").text == "memory 17 about item 17"


def test_default_path_is_user_data_dir_not_tmp() -> None:
    from memory_retrievers import default_store_path

    path = str(default_store_path())
    assert "memory-retrievers" in path and not path.startswith("/tmp")


def test_never_overwrites_existing_table(make_store: Make) -> None:
    make_store().add("keep me", namespace="n")
    assert make_store().count("n") == 1


def test_store_rejects_bad_constructor_args(tmp_path) -> None:
    from memory_retrievers import ConfigError

    with pytest.raises(ConfigError, match="Embedder protocol"):
        MemoryStore(tmp_path, embedder=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown key 'bogus'"):
        MemoryStore(tmp_path, embedder=HashEmbedder(8), config={"bogus": 1})
    with pytest.raises(ConfigError, match="table_name"):
        MemoryStore(tmp_path, embedder=HashEmbedder(8), table_name="x'; drop")


def test_timestamps_are_utc_aware(store: MemoryStore) -> None:
    m = store.add("x", namespace="n", created_at=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))
    got = store.get(m.id, namespace="n")
    assert got.created_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert got.created_at.utcoffset() == timedelta(0)


def test_lancedb_uri_store_needs_no_local_folder(embedder, clock) -> None:
    # Any LanceDB URI is passed through (here the in-memory backend; s3:// works the same way).
    store = MemoryStore("memory://", embedder=embedder, clock=clock)
    m = store.add("kept in memory", namespace="n")
    assert store.fts_search("memory", namespace="n")[0].id == m.id
    store.close()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("tty", "n", "shown"), [(True, 30, True), (True, 5, False), (False, 30, False)])
def test_add_many_shows_progress_on_a_terminal_by_default(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, tty: bool, n: int, shown: bool
) -> None:
    err = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    store.add_many([{"text": f"note number {i}"} for i in range(n)], namespace="n", batch_size=10)
    assert ("add_many" in err.getvalue()) is shown
    with pytest.raises(InvalidInputError, match="progress"):
        store.add_many([{"text": "x"}], namespace="n", progress="yes")  # type: ignore[arg-type]


def test_recency_search_stays_exact_while_memories_come_and_go(store: MemoryStore, clock, monkeypatch) -> None:
    # The recency search reads only rows newer than the k-th newest it last found (a sort of the
    # whole namespace is 17 ms at 100,000 memories); it must still give what a full sort gives.
    rng = random.Random(7)
    table = store._table
    reads: list[str] = []
    original = table.rows

    async def recorded(where: str, *args, **kwargs):
        reads.append(where)
        return await original(where, *args, **kwargs)

    monkeypatch.setattr(table, "rows", recorded)
    ids: list[str] = []
    for step in range(60):
        clock.advance(minutes=1)
        op = rng.random()
        if op < 0.55 or len(ids) < 6:
            # Some memories arrive with a time in the past (imports) or in the near future.
            when = clock.now + timedelta(minutes=rng.choice([0, 0, -30, -3, 2]))
            kind = rng.choice(["fact", "preference"])
            ids.append(store.add(f"note {step}", namespace="n", kind=kind, created_at=when, dedup=False).id)
        elif op < 0.8:
            newest = store.list("n", limit=3)
            store.delete(rng.choice(newest).id, namespace="n")  # often one of the newest k
        for k, flt in ((5, None), (3, {"kinds": ["preference"]})):
            want = [m.id for m in store.list("n", limit=k, filter=flt)]
            assert [h.id for h in store.recency_search(namespace="n", k=k, filter=flt)] == want, step
    assert any("created_at >=" in where for where in reads)  # the cheap read was used


def test_lancedb_cache_ceilings_reach_the_connection(make_store, monkeypatch) -> None:
    import lancedb

    made: list[tuple[int | None, int | None]] = []
    real = lancedb.Session

    def session(index_cache_size_bytes=None, metadata_cache_size_bytes=None):
        made.append((index_cache_size_bytes, metadata_cache_size_bytes))
        return real(index_cache_size_bytes=index_cache_size_bytes, metadata_cache_size_bytes=metadata_cache_size_bytes)

    monkeypatch.setattr(lancedb, "Session", session)
    store = make_store(config={"index_cache_bytes": 8 << 20, "metadata_cache_bytes": 4 << 20})
    kept = store.add("the cache is small but the store works", namespace="n")
    assert [h.id for h in store.fts_search("cache", namespace="n")] == [kept.id]
    assert made == [(8 << 20, 4 << 20)]


# One real LongMemEval assistant turn is 76,566 characters (issue 42): stored whole, by default.
LONG_TURN = "The build ran its checks. " * 800 + "The nightly export runs on worker-3. " + "Done. " * 9_400


def test_a_77k_character_turn_is_stored_whole_by_add_add_many_and_add_later(make_store: Make) -> None:
    from memory_retrievers import MemoryRetriever

    store = make_store()
    assert len(LONG_TURN) > 77_000
    ids = [
        store.add(LONG_TURN, namespace="a", kind="message").id,
        store.add_many([{"text": LONG_TURN, "kind": "message"}], namespace="b")[0].id,
        store.add_later(LONG_TURN, namespace="c", kind="message").result(timeout=60).id,
    ]
    for namespace, id_ in zip("abc", ids, strict=True):
        assert store.get(id_, namespace=namespace).text == LONG_TURN  # the exact text, not cut
        found = MemoryRetriever(store).recall("which worker runs the nightly export?", namespace=namespace)
        assert found.memories[0].id == id_ and "worker-3" in found.memories[0].line  # the passage asked about


def test_only_a_pathological_text_is_refused_naming_the_limit(make_store: Make) -> None:
    store = make_store()
    with pytest.raises(InvalidInputError, match=r"1,000,000.*max_text_chars"):
        store.add("x" * 1_000_001, namespace="a")
    with pytest.raises(InvalidInputError, match="max_text_chars"):
        store.add_many_later([{"text": "y" * 1_000_001}], namespace="a")
    assert store.count("a") == 0
