"""Issue 27 item 2: ``purge()`` leaves nothing of a forgotten or deleted memory in any file.

Every file under the store is audited after ``purge()``, after a later write and after
``optimize()``, for every forgotten value (text, namespace, ids, session id, tags, entities,
project, topic, metadata value), two ways:

- **bytes**: every file, read whole, lower-cased, searched for each value. This alone can miss a
  value: Lance compresses or dictionary-encodes columns (a plain grep of a fresh data file finds no
  ``entities`` or ``session_id`` value at all) and a full-text index keeps its tokens in an FST.
- **decoded**: what LanceDB itself reads back. For every version that remains, no deletion file
  (so every row of every data file it references is one a scan returns) and a scan of every
  column, decoded by Lance, that holds no forgotten value; every data file and index folder is
  referenced by a remaining version (nothing orphaned that a scan would not see); and no index
  folder from before the purge is left (each index was rebuilt from the remaining rows).

The helpers here are shared with ``tests/object_storage/test_purge_on_s3.py``, which runs the
same audit on every object of a bucket, listed and read through the S3 API.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import lancedb
import pytest
from lancedb.index import BTree

import memory_retrievers.runtime.fork as _fork
from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.storage.remote import RemoteTable

Make = Callable[..., MemoryStore]
Files = Mapping[str, bytes]  # path inside the table folder -> content

FORGOTTEN_USER = 7


def user_records(user: int, count: int = 5) -> list[dict[str, Any]]:
    """``count`` memories of user ``user``, each field carrying a value unique to that user."""
    u = f"{user:02d}"
    return [
        {
            "text": f"secret-{u}-{j}: the clinic confirmed the diagnosis for patient quokka{u}",
            "namespace": f"person{u}@example.com",
            "id": f"mem-{u}-{j}",
            "session_id": f"sess-{u}-{j % 2}",
            "tags": [f"tag-{u}-health"],
            "entities": [f"Ent-{u}-Clinic"],
            "project": f"proj-{u}-care",
            "topic": f"topic-{u}-medical",
            "metadata": {"diagnosis": f"diag-{u}-hiv"},
        }
        for j in range(count)
    ]


def user_values(user: int) -> list[str]:
    """What must not survive of user ``user``: a piece of each field's value (unique to that user)."""
    u = f"{user:02d}"
    return [
        f"secret-{u}-",
        f"quokka{u}",
        f"person{u}@example.com",
        f"mem-{u}-",
        f"sess-{u}-",
        f"tag-{u}-",
        f"ent-{u}-",
        f"proj-{u}-",
        f"topic-{u}-",
        f"diag-{u}-",
    ]


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of a local store's table, by path inside the table folder."""
    table = folder / "memories.lance"
    return {str(p.relative_to(table)): p.read_bytes() for p in table.rglob("*") if p.is_file()}


def byte_hits(files: Files, values: list[str]) -> dict[str, list[str]]:
    """Files whose raw bytes contain a value (case-insensitive): value -> paths."""
    hits: dict[str, list[str]] = {}
    for path, data in files.items():
        lowered = data.lower()
        for value in values:
            if value.lower().encode() in lowered:
                hits.setdefault(value, []).append(path)
    return hits


def _cells(table: Any) -> list[str]:
    """Every non-vector cell of an Arrow table as lower-case text (list items and JSON included)."""
    out = []
    for name in table.column_names:
        if name == "vector":
            continue
        for cell in table.column(name).to_pylist():
            out.append(json.dumps(cell, default=str).lower() if isinstance(cell, list) else str(cell).lower())
    return out


def decoded_problems(table: Any, files: Files, values: list[str], old_indexes: set[str]) -> list[str]:
    """What a decoding read finds of ``values`` (see the module docstring); empty when nothing.

    Args:
        table: A LanceDB table opened on the store (its own connection).
        files: Every file of the table, by path inside the table folder.
        values: The forgotten values.
        old_indexes: Index folder names that existed before the purge.
    """
    problems: list[str] = []
    manifests = [data for path, data in files.items() if path.startswith("_versions/") and path.endswith(".manifest")]
    for version in table.list_versions():
        number, summary = version["version"], version["metadata"]
        if summary.get("total_deletion_files") != "0":
            problems.append(f"version {number} hides deleted rows behind {summary.get('total_deletion_files')} file(s)")
        table.checkout(number)
        cells = _cells(table.to_arrow())
        problems += [f"version {number} reads back {v!r}" for v in values if any(v.lower() in c for c in cells)]
    table.checkout_latest()
    for path in files:
        top, _, rest = path.partition("/")
        if top == "data" and not any(rest.encode() in m for m in manifests):
            problems.append(f"{path} is referenced by no version")
        if top == "_indices":
            folder = rest.split("/")[0]
            if folder in old_indexes:
                problems.append(f"{path} is an index from before the purge")
            if not any(uuid.UUID(folder).bytes in m for m in manifests):
                problems.append(f"{path} is referenced by no version")
        if top == "_deletions":
            problems.append(f"{path} is a deletion file")
    return problems


def index_folders(files: Files) -> set[str]:
    return {p.split("/")[1] for p in files if p.startswith("_indices/")}


def audit(table: Any, files: Files, values: list[str], old_indexes: set[str]) -> list[str]:
    """Every way a forgotten value is still on disk: raw bytes, then decoded reads."""
    found = [f"{v!r} in the bytes of {paths}" for v, paths in byte_hits(files, values).items()]
    return found + decoded_problems(table, files, values, old_indexes)


def open_table(store: MemoryStore, **storage_options: Any) -> Any:
    """The store's table on a connection of its own (LanceDB's sync API)."""
    db = lancedb.connect(store.uri, storage_options=storage_options or None)
    return db.open_table("memories")


def test_item2_purge_erases_a_forgotten_user_of_twenty_from_every_file(make_store: Make) -> None:
    """The issue's shape: 20 users x 5 memories in one fragment, one forgotten (5% of its rows).

    Before the fix the text stayed in the data file (LanceDB materialises deletions only past 10%
    of a fragment) and the namespace, ids, tags, project and topic in the scalar indexes.
    """
    store = make_store(config={"optimize_after_commits": 10_000, "optimize_after_rows": 10_000_000})
    records = [r for user in range(20) for r in user_records(user)]
    store.add_many(records, batch_size=len(records), dedup=False, progress=False)  # one commit, one fragment
    store.admin.optimize()
    folder = Path(store.uri)
    gone, kept = user_values(FORGOTTEN_USER), user_values(FORGOTTEN_USER + 1)
    before = folder_files(folder)
    table = open_table(store)
    assert byte_hits(before, gone)  # the grep sees them: the audit has something to find
    assert store.forget(f"person{FORGOTTEN_USER:02d}@example.com") == 5
    assert audit(table, folder_files(folder), gone, set())  # forgotten, yet on disk

    store.admin.purge()
    old = index_folders(before)
    assert audit(table, folder_files(folder), gone, old) == []
    store.add("a memory written after the purge", namespace=f"person{FORGOTTEN_USER + 1:02d}@example.com")
    assert audit(table, folder_files(folder), gone, old) == []
    store.admin.optimize()
    assert audit(table, folder_files(folder), gone, old) == []
    store.admin.purge()  # the purge, optimize, purge
    assert audit(table, folder_files(folder), gone, old) == []

    # Nothing kept is lost, every index is whole, and the kept user's values are still found.
    assert store.admin.stats().rows == 96 and len(store.namespaces()) == 19
    assert not byte_hits(folder_files(folder), gone) and byte_hits(folder_files(folder), kept)
    assert all(i.unindexed_rows == 0 and i.indexed_rows == 96 for i in store.admin.stats().indexes)
    assert [h.id for h in store.fts_search("quokka08", namespace="person08@example.com", k=10)]
    assert store.recency_search(namespace="person08@example.com", filter={"tags_any": ["tag-08-health"]})


@pytest.mark.long  # trains a vector index twice
def test_item2_purge_erases_one_deleted_row_in_a_thousand_and_rebuilds_the_vector_index(make_store: Make) -> None:
    """One row in 1,000 deleted by id (0.1% of the fragment), with an ANN index on the vectors."""
    store = make_store(config={"ann_index_min_rows": 256, "optimize_after_commits": 10_000})
    doomed = user_records(FORGOTTEN_USER, 1)[0]
    others = [
        {"text": f"ordinary memory number {i} about the garden", "namespace": f"n{i % 10}@example.com"}
        for i in range(999)
    ]
    store.add_many([*others[:500], doomed, *others[500:]], batch_size=1000, dedup=False, progress=False)
    store.admin.optimize()
    folder = Path(store.uri)
    before = folder_files(folder)
    assert any(i.name == "vector_idx" for i in store.admin.stats().indexes)
    assert store.delete([doomed["id"]], namespace=doomed["namespace"]) == 1
    gone = user_values(FORGOTTEN_USER)
    table = open_table(store)
    assert audit(table, folder_files(folder), gone, set())

    store.admin.purge()
    old = index_folders(before)
    assert audit(table, folder_files(folder), gone, old) == []
    store.add("written after the purge", namespace="n1@example.com")
    store.admin.optimize()
    assert audit(table, folder_files(folder), gone, old) == []
    assert store.admin.stats().rows == 1000
    assert any(i.name == "vector_idx" for i in store.admin.stats().indexes)
    assert store.vector_search("ordinary memory number 3", namespace="n3@example.com", k=3)


def test_item2_purge_with_nothing_left_drops_the_indexes_and_the_next_write_rebuilds_them(make_store: Make) -> None:
    store = make_store()
    store.add_many(user_records(FORGOTTEN_USER), dedup=False, progress=False)
    store.admin.optimize()
    folder = Path(store.uri)
    before = folder_files(folder)
    store.forget(f"person{FORGOTTEN_USER:02d}@example.com")
    store.admin.purge()
    gone = user_values(FORGOTTEN_USER)
    assert audit(open_table(store), folder_files(folder), gone, index_folders(before)) == []
    assert store.admin.stats().indexes == ()
    new = store.add("a new memory about quokkas", namespace="later")
    assert [h.id for h in store.fts_search("quokkas", namespace="later")] == [new.id]
    assert {"text_idx", "search_text_idx", "entities_idx"} <= {i.name for i in store.admin.stats().indexes}
    store.admin.optimize()
    assert {"namespace_idx", "id_idx"} <= {i.name for i in store.admin.stats().indexes}


def test_item2_purge_is_safe_against_writers_in_this_process(make_store: Make) -> None:
    """Writes from other threads while purge runs wait for it; none is lost, nothing forgotten returns."""
    store = make_store()
    store.add_many([r for user in range(20) for r in user_records(user)], dedup=False, progress=False)
    store.admin.optimize()
    store.forget(f"person{FORGOTTEN_USER:02d}@example.com")
    errors: list[BaseException] = []
    start = threading.Barrier(5)

    def write(worker: int) -> None:
        start.wait()
        try:
            for i in range(10):
                store.add(f"written by worker {worker}, number {i}", namespace=f"w{worker}", dedup=False)
        except BaseException as exc:  # reported below, with the test's own assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    start.wait()
    store.admin.purge()
    for t in threads:
        t.join(timeout=120)
    store.admin.purge()
    assert errors == []
    assert [store.count(f"w{w}") for w in range(4)] == [10] * 4 and store.admin.stats().rows == 95 + 40
    folder = Path(store.uri)
    assert byte_hits(folder_files(folder), user_values(FORGOTTEN_USER)) == {}


def test_item2_purge_rebuilds_every_index_and_drops_one_it_cannot(
    make_store: Make, caplog: pytest.LogCaptureFixture
) -> None:
    """Every index is rebuilt; one the library does not build (it could hold deleted values) is dropped."""
    store = make_store()
    store.add_many(user_records(1) + user_records(FORGOTTEN_USER), dedup=False, progress=False)
    store.admin.optimize()
    table = open_table(store)
    table.create_index("lifecycle", config=BTree())
    before = {i.name: i.index_uuid for i in table.list_indices()}
    assert "lifecycle_idx" in before
    store.forget(f"person{FORGOTTEN_USER:02d}@example.com")
    with caplog.at_level(logging.WARNING):
        store.admin.purge()
    table.checkout_latest()
    after = {i.name: i.index_uuid for i in table.list_indices()}
    assert set(after) == set(before) - {"lifecycle_idx"}
    assert all(after[name] != before[name] for name in after)  # every one rebuilt
    assert "purge dropped index 'lifecycle_idx'" in caplog.text


@pytest.mark.long
def test_item2_purge_through_the_engine_process_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked child's store runs LanceDB in an engine process; its purge must work the same."""
    monkeypatch.setattr(_fork, "lancedb_inherited", lambda: True)
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)) as store:
        assert isinstance(store._table.handle, RemoteTable)
        store.add_many([r for user in range(20) for r in user_records(user)], dedup=False, progress=False)
        store.admin.optimize()
        before = folder_files(tmp_path / "db")
        store.forget(f"person{FORGOTTEN_USER:02d}@example.com")
        store.admin.purge()
        assert store.admin.stats().rows == 95
    monkeypatch.setattr(_fork, "lancedb_inherited", lambda: False)
    files = folder_files(tmp_path / "db")
    table = lancedb.connect(tmp_path / "db").open_table("memories")
    assert audit(table, files, user_values(FORGOTTEN_USER), index_folders(before)) == []
