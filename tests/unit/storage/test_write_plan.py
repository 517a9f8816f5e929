"""The write path's typed rows: each vector is checked once, where it enters; duplicates keep theirs.

A caller's vector used to be checked three times on its way to the table (by the store's record
check, again when ``add_many`` embedded the batch, and again by the writer). It is checked where it
enters the store, and the rows a write plans carry their vector (``PendingRow``) instead of private
``_vector`` / ``_stored_vector`` keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from memory_retrievers import DimensionMismatchError, EmbeddingError, InvalidInputError, MemoryStore, WriteAction
from memory_retrievers.config import StoreConfig
from memory_retrievers.storage import vectors as vectors_module
from memory_retrievers.storage.fields import build_row
from memory_retrievers.storage.write_plan import PendingRecord, PendingRow, Planning, absorbed, kept, refuse_superseded
from memory_retrievers.validation import content_hash, validate_record

Make = Callable[..., MemoryStore]
DIM = 32  # the hash embedder of the conftest


def vec(*head: float) -> list[float]:
    """A vector of the store's width (not unit length: the store scales it)."""
    return [*head, *([0.0] * (DIM - len(head)))]


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The ``source`` of every vector check (a spy on the one check function the store uses)."""
    seen: list[str] = []
    real = vectors_module.check_vectors

    def spy(raw: Any, *, rows: int, dimension: int, source: str) -> np.ndarray:
        seen.append(source)
        return real(raw, rows=rows, dimension=dimension, source=source)

    monkeypatch.setattr(vectors_module, "check_vectors", spy)
    yield seen


def caller_checks(seen: list[str]) -> list[str]:
    return [s for s in seen if s.startswith("the vector of record")]


def test_add_checks_a_caller_vector_once(store: MemoryStore, checks: list[str]) -> None:
    mem = store.add("the sky is blue", namespace="u", vector=vec(3.0, 4.0))
    assert caller_checks(checks) == ["the vector of record 0"]
    stored = store.get(mem.id, namespace="u", include_vector=True)
    assert np.allclose(stored.vector[:2], [0.6, 0.8])  # scaled to unit length, once


def test_add_many_checks_each_caller_vector_once_and_embeds_the_others(store: MemoryStore, checks: list[str]) -> None:
    recs = [
        {"text": "first", "vector": vec(1.0)},
        {"text": "second"},
        {"text": "third", "vector": vec(0.0, 2.0)},
    ]
    out = store.add_many(recs, namespace="u", batch_size=2)
    assert caller_checks(checks) == ["the vector of record 0", "the vector of record 2"]
    # The record without a vector was embedded (one check, as it left the embedder).
    assert len([s for s in checks if s.startswith("embedder")]) == 1
    assert [m.action for m in out] == [WriteAction.ADDED] * 3


def test_add_later_and_replace_check_once(store: MemoryStore, checks: list[str]) -> None:
    store.add_later("queued", namespace="u", vector=vec(1.0)).result(timeout=30)
    assert caller_checks(checks) == ["the vector of record 0"]
    checks.clear()
    store.replace("u", [{"text": "new", "vector": vec(0.0, 1.0)}])
    assert caller_checks(checks) == ["the vector of record 0"]


@pytest.mark.parametrize(
    ("bad", "error", "says"),
    [
        ([1.0, 2.0], DimensionMismatchError, "2-dimensional"),
        (vec(float("nan")), EmbeddingError, "NaN"),
        ([0.0] * DIM, InvalidInputError, "all zeros"),
    ],
)
def test_a_bad_vector_is_refused_at_entry_naming_the_record(
    store: MemoryStore, checks: list[str], bad: list[float], error: type[Exception], says: str
) -> None:
    store.add("kept", namespace="u")
    recs = [{"text": "fine"}, {"text": "bad", "vector": bad}]
    with pytest.raises(error, match=f"the vector of record 1.*{says}|{says}.*record 1"):
        store.add_many(recs, namespace="u", batch_size=1)
    with pytest.raises(error):
        store.add_later("bad", namespace="u", vector=bad)  # refused before anything is queued
    assert [m.text for m in store.list("u")] == ["kept"]  # nothing of either write was stored
    assert "the vector of record 1" in caller_checks(checks)


def test_a_skipped_duplicate_keeps_the_stored_vector(make_store: Make) -> None:
    store = make_store()
    first = store.add("the deploy is on Friday", namespace="u", vector=vec(1.0), tags=["ops"])
    again = store.add("the deploy is on Friday", namespace="u", vector=vec(0.0, 1.0), tags=["release"])
    assert again.id == first.id and again.action is WriteAction.UPDATED  # a tag was merged in
    stored = store.get(first.id, namespace="u", include_vector=True)
    assert np.allclose(stored.vector[:2], [1.0, 0.0]) and set(stored.tags) == {"ops", "release"}


def test_an_update_duplicate_takes_the_new_vector(make_store: Make) -> None:
    store = make_store(config={"dedup_policy": "update"})
    first = store.add("the deploy is on Friday", namespace="u", vector=vec(1.0))
    store.add("the deploy is on Friday", namespace="u", vector=vec(0.0, 1.0))
    stored = store.get(first.id, namespace="u", include_vector=True)
    assert np.allclose(stored.vector[:2], [0.0, 1.0])


def test_a_duplicate_within_one_batch_keeps_the_first_records_vector(make_store: Make) -> None:
    store = make_store()
    out = store.add_many(
        [{"text": "same words", "vector": vec(1.0)}, {"text": "same words", "vector": vec(0.0, 1.0), "pinned": True}],
        namespace="u",
    )
    assert out[1].duplicate_of == out[0].id
    stored = store.get(out[0].id, namespace="u", include_vector=True)
    assert np.allclose(stored.vector[:2], [1.0, 0.0]) and stored.pinned  # merged, its vector kept


def test_a_pending_record_is_its_fields_without_private_keys() -> None:
    rec = {"namespace": "u", "text": "hi", "id": "a", "vector": [1.0], "_given": frozenset({"text", "id"})}
    pending = PendingRecord.of(rec, np.ones(2, dtype=np.float32), 7)
    assert pending.fields == {"namespace": "u", "text": "hi", "id": "a"}
    assert pending.given == {"text", "id"} and pending.offset == 7
    assert pending.namespace == "u" and pending.id == "a"
    with pytest.raises(AttributeError):
        pending.offset = 8  # type: ignore[misc]
    row = PendingRow({"id": "a"}, np.ones(2, dtype=np.float32), auto_context=True)
    with pytest.raises(AttributeError):
        row.auto_context = False  # type: ignore[misc]


# ---- the pure planning steps (storage/write_plan.py)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def pending(text: str, i: int = 0, **fields: Any) -> PendingRecord:
    rec = validate_record({"text": text, "namespace": "u", **fields}, StoreConfig())
    return PendingRecord.of(rec, np.eye(4, dtype=np.float32)[i % 4], i)


def stored_row(id_: str, text: str, *, revision: int, vector_at: int = 3, **fields: Any) -> dict[str, Any]:
    rec = validate_record({"text": text, "namespace": "u", "id": id_, **fields}, StoreConfig())
    row = build_row(rec, content_hash(text), None, NOW - timedelta(days=1), row_id=id_)
    return {**row, "revision": revision, "vector": np.eye(4, dtype=np.float32)[vector_at].tolist()}


def test_a_rewrite_planned_twice_in_one_batch_is_still_one_rewrite_of_the_stored_revision() -> None:
    recs = [pending("v1", 0, id="a"), pending("v2", 1, id="a")]
    state = Planning(recs, {("u", "a"): stored_row("a", "v0", revision=4)}, NOW)
    first = kept(state, 0, None)
    assert first.action is WriteAction.UPDATED and state.rows[("u", "a")].row["revision"] == 5
    second = kept(state, 1, None)
    planned = state.rows[("u", "a")]
    assert second.action is WriteAction.UPDATED and planned.row["text"] == "v2"
    assert planned.row["revision"] == 5  # from the stored revision 4, not from the planned 5
    assert np.array_equal(planned.vector, recs[1].vector) and planned.auto_context


def test_the_base_of_a_duplicate_is_the_planned_row_with_its_vector_else_the_stored_one() -> None:
    recs = [pending("hello", 2)]
    state = Planning(recs, {("u", "s"): stored_row("s", "stored", revision=0, vector_at=3)}, NOW)
    row, vector = state.base(("u", "s"))  # type: ignore[misc]
    assert row["text"] == "stored" and vector.tolist() == [0.0, 0.0, 0.0, 1.0] and vector.dtype == np.float32
    state.add(recs[0], recs[0].fields, "s")
    row, vector = state.base(("u", "s"))  # type: ignore[misc]
    assert row["text"] == "hello" and vector.tolist() == [0.0, 0.0, 1.0, 0.0]
    assert state.base(("u", "nothing")) is None


def test_absorbed_merges_annotations_or_takes_only_the_given_fields() -> None:
    base = stored_row("s", "same", revision=2, tags=["a"], priority=1.0, project="p")
    dup = pending("same", tags=["b"], priority=3.0)
    merged, changed = absorbed(base, dup, update=False)
    assert merged["tags"] == ["a", "b"] and merged["priority"] == 3.0 and merged["project"] == "p"
    assert set(changed) == {"tags", "priority"}
    rewritten, changed = absorbed(base, dup, update=True)
    assert changed == ["text"] and rewritten["tags"] == ["b"] and rewritten["project"] == "p"  # project not given


def test_a_superseded_stored_row_is_refused_naming_its_successor() -> None:
    refuse_superseded(None, "a")
    refuse_superseded({"superseded_by": None}, "a")
    with pytest.raises(InvalidInputError, match="'a' was superseded by 'b'"):
        refuse_superseded({"superseded_by": "b"}, "a")
