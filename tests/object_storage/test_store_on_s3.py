"""Everything the store does on a local folder, on ``s3://`` (SeaweedFS on loopback).

The parity test runs one scripted session (writes, duplicates, supersession, deletes, every
search, recall) on a local folder and on the object store and requires the same transcript; the
other tests cover what differs underneath: maintenance, purge, leftovers of interrupted writes,
read consistency, the command line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore, NotFoundError
from memory_retrievers.testing import ManualClock
from testing.local_s3 import LocalS3Server

TURNS = [
    ("alice", "I adopted a greyhound called Comet last spring"),
    ("bob", "Nice! How is Comet settling in?"),
    ("alice", "He sleeps all day and sprints at the park in Berlin"),
    ("bob", "Greyhounds are famous couch potatoes"),
]


def session(store: MemoryStore, clock: ManualClock) -> list[Any]:
    """A scripted session; returns everything the store answered, in a comparable form."""
    out: list[Any] = []

    def hits(found: list[Any]) -> list[tuple[str, float]]:
        return [(h.id, round(h.score, 5)) for h in found]

    a = store.add("Alice prefers the dark theme", namespace="alice", id="theme", kind="preference", entities=["Alice"])
    clock.advance(hours=1)
    out.append(("add", a.action.value))
    dup = store.add("Alice prefers the dark  theme", namespace="alice", kind="preference")
    out.append(("exact-dup", dup.action.value, dup.duplicate_of))
    vector = store.get("theme", namespace="alice", include_vector=True).vector
    assert vector is not None
    near = [x + 0.01 for x in vector]  # cosine > 0.95: a near duplicate, whatever the embedder says
    dup = store.add("Alice prefers the dark theme.", namespace="alice", kind="preference", vector=near)
    out.append(("near-dup", dup.action.value, dup.duplicate_of))
    added = store.add_many(
        [
            {"text": text, "kind": "message", "session_id": "s1", "id": f"turn{i}", "entities": [who]}
            for i, (who, text) in enumerate(TURNS)
        ],
        namespace="alice",
        progress=False,
    )
    out.append(("add_many", [m.action.value for m in added]))
    clock.advance(hours=1)
    out.append(("context", store.get("turn1", namespace="alice").context))
    store.add("Bob prefers the light theme", namespace="bob", id="bob-theme", kind="preference")
    out.append(
        ("keep_both", store.add("Alice likes dark themes", namespace="alice", id="kb", dedup=False).action.value)
    )
    newer = store.supersede("theme", {"text": "Alice now prefers the light theme", "id": "theme2"}, namespace="alice")
    out.append(("superseded_by", store.get("theme", namespace="alice").superseded_by, newer.id))
    store.update("turn3", namespace="alice", tags=["dogs"], priority=3)
    out.append(("updated", store.get("turn3", namespace="alice").tags))
    clock.advance(days=1)
    out.append(("fts", hits(store.fts_search("greyhound", namespace="alice"))))
    out.append(("fts-context", hits(store.fts_search("Comet", namespace="alice", field="context"))))
    out.append(("vector", hits(store.vector_search("which theme does she like", namespace="alice", k=3))))
    out.append(("entity", hits(store.entity_search(["alice"], namespace="alice"))))
    out.append(("recency", hits(store.recency_search(namespace="alice", filter={"kinds": ["message"]}))))
    out.append(("tags", hits(store.recency_search(namespace="alice", filter={"tags_any": ["dogs"]}))))
    retriever = MemoryRetriever(store, namespace="alice")
    result = retriever.recall("what does Alice's dog do all day?", k=3, now=clock())
    out.append(("recall", [(m.id, round(m.score, 5)) for m in result.memories], result.to_context()))
    store.delete(["theme2"], namespace="alice")  # the predecessor is live again
    out.append(("revived", store.get("theme", namespace="alice").superseded_by))
    with pytest.raises(NotFoundError):
        store.get("bob-theme", namespace="alice")  # ids are looked up inside the namespace only
    out.append(("list", [m.id for m in store.list("alice", limit=50)]))
    out.append(("count", store.count(namespace="alice"), store.count(namespace="bob")))
    store.forget("bob")
    out.append(("namespaces", store.namespaces()))
    store.admin.optimize()
    out.append(("after optimize", hits(store.fts_search("theme", namespace="alice"))))
    return out


def test_a_session_on_s3_answers_exactly_as_on_a_local_folder(
    make_s3_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    local_clock, s3_clock = ManualClock(), ManualClock()
    with MemoryStore(tmp_path / "local", embedder=HashEmbedder(32), clock=local_clock) as local:
        expected = session(local, local_clock)
    got = session(make_s3_store(clock=s3_clock), s3_clock)
    assert got == expected
    said = {k[0]: k[1:] for k in got}
    assert said["exact-dup"] == said["near-dup"] == ("skipped", "theme")  # the transcript says something


def _maintenance(store: MemoryStore) -> list[Any]:
    for i in range(12):  # one commit and one small fragment each
        store.add(f"fact number {i} about zebras", namespace="z", id=f"f{i}")
    before = store.admin.stats()
    time.sleep(1.1)  # every version but the latest is past the retention now
    store.admin.optimize()
    after = store.admin.stats()
    indexes = sorted((i.name, i.indexed_rows, i.unindexed_rows) for i in after.indexes)
    hits = [h.id for h in store.fts_search("number 7", namespace="z", k=1)]
    return [before.fragments, before.versions, after.fragments, after.versions, indexes, hits]


def test_indexes_and_optimize_on_s3_as_on_a_local_folder(
    make_s3_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    config = {"version_retention": timedelta(seconds=1), "optimize_after_commits": 1000}
    with MemoryStore(tmp_path / "local", embedder=HashEmbedder(32), config=config) as local:
        expected = _maintenance(local)
    store = make_s3_store(config=config)
    got = _maintenance(store)
    # Versions left after the prune are compared as "pruned" only: how many of optimize's own
    # commits (compaction, index updates) are past the 1 s retention when its cleanup runs depends
    # on how long they took (10 against 12 on a loaded machine), not on the object store.
    assert got[:3] + got[4:] == expected[:3] + expected[4:]
    assert expected[3] < expected[1]
    fragments, versions, fragments_after, versions_after, indexes, hits = got
    assert fragments >= 12 and fragments_after < fragments and versions_after < versions  # compacted, pruned
    assert {name for name, _, _ in indexes} >= {"text_idx", "search_text_idx", "namespace_idx", "id_idx"}
    assert all(unindexed == 0 for _, _, unindexed in indexes) and hits == ["f7"]
    assert store.admin.stats().disk_bytes is None  # not measured on object stores (documented)


def _objects_containing(s3: LocalS3Server, uri: str, needle: bytes) -> list[str]:
    fs = s3.filesystem()
    found = []
    for key in s3.list_objects(uri):
        with fs.open_input_stream(key) as f:
            if needle in f.read():
                found.append(key)
    return found


def test_purge_erases_deleted_text_from_every_object(
    s3_server: LocalS3Server, s3_uri: str, make_s3_store: Callable[..., MemoryStore]
) -> None:
    store = make_s3_store()
    secret = "quokka-passport-7731"
    store.add(f"my passport number is {secret}", namespace="p", id="secret")
    store.add("an ordinary memory", namespace="p")
    store.admin.optimize()  # the secret is in data files and in the full-text indexes now
    store.delete(["secret"], namespace="p")
    assert _objects_containing(s3_server, s3_uri, secret.encode())  # deleted, yet still stored
    store.admin.purge()
    assert _objects_containing(s3_server, s3_uri, secret.encode()) == []
    assert [m.text for m in store.list("p")] == ["an ordinary memory"]


def test_files_of_an_uncommitted_write_are_removed_by_purge_not_optimize(
    s3_server: LocalS3Server, s3_uri: str, make_s3_store: Callable[..., MemoryStore]
) -> None:
    """What a writer killed between upload and commit leaves: unreferenced data and transaction files.

    LanceDB's cleanup keeps unreferenced files younger than 7 days (they may belong to a write in
    flight in another process): ``optimize()`` and ``purge()`` leave them, ``purge(remove_uncommitted=True)``
    (for when no other process writes) removes them. There are no temp files to clean on an object
    store (a PUT is atomic).
    """
    store = make_s3_store()
    store.add("one", namespace="o")
    store.add("two", namespace="o")
    objects = s3_server.list_objects(s3_uri)
    data = next(k for k in objects if "/data/" in k)
    table = data.split("/data/")[0]
    orphans = [f"{table}/data/0000{'ab' * 20}.lance", f"{table}/_transactions/0-{'cd' * 16}.txn"]
    fs = s3_server.filesystem()
    for orphan in orphans:
        fs.copy_file(data, orphan)
    store.admin.optimize()
    assert set(orphans) <= set(s3_server.list_objects(s3_uri))
    store.admin.purge()  # they could be a write in flight elsewhere: kept
    assert set(orphans) <= set(s3_server.list_objects(s3_uri))
    store.admin.purge(remove_uncommitted=True)
    assert set(orphans).isdisjoint(s3_server.list_objects(s3_uri))
    assert store.count(namespace="o") == 2


def test_a_writer_killed_mid_write_on_s3_loses_no_acknowledged_write(
    s3_server: LocalS3Server, s3_uri: str, tmp_path: Path, make_s3_store: Callable[..., MemoryStore]
) -> None:
    """SIGKILL during ``add_many`` (credentials from AWS_* variables, as a deployed app would have)."""
    acks = tmp_path / "acks.jsonl"
    script = Path(__file__).resolve().parents[1] / "reliability" / "_worker.py"
    env = {**os.environ, **s3_server.env}
    for crash in range(2):
        start = len(_acked(acks))
        with open(tmp_path / "worker.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, str(script), s3_uri, str(acks), "add_many", str(crash)], env=env, stderr=log
            )
        deadline = time.monotonic() + 120
        while len(_acked(acks)) < start + 2 + crash:  # let it commit a few batches, then kill it
            assert proc.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    acked = [i for batch in _acked(acks) for i in batch]
    store = make_s3_store()
    assert len(acked) >= 5 * 20
    found = {m.id for ns in ("w0", "w1") for m in store.list(ns, limit=10_000)}
    assert set(acked) <= found  # every acknowledged memory; at most one unacknowledged batch more
    assert len(found - set(acked)) <= 2 * 20
    assert not [k for k in s3_server.list_objects(s3_uri) if ".tmp" in k or "_tmp" in k]
    assert store.add("written after the crashes", namespace="w0").action.value == "added"


def _acked(path: Path) -> list[list[str]]:
    """The acknowledged batches."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line torn by the kill was never acknowledged
            continue
        if "ids" in record:
            out.append(record["ids"])
    return out


def test_read_consistency_interval_on_s3(make_s3_store: Callable[..., MemoryStore]) -> None:
    writer = make_s3_store()
    writer.add("first", namespace="n", id="m1")
    never = make_s3_store(config={"read_consistency_interval": None})  # sees only its own writes until reopened
    always = make_s3_store()  # the default, timedelta(0): checks for a new version on every read
    eventually = make_s3_store(config={"read_consistency_interval": timedelta(seconds=0.5)})
    recall = MemoryRetriever(always, namespace="n")
    for store in (never, always, eventually):
        assert store.count(namespace="n") == 1
    assert [m.id for m in recall.recall("first", k=5).memories] == ["m1"]  # its in-memory view is loaded

    writer.add("second", namespace="n", id="m2")
    assert always.count(namespace="n") == 2 and {m.id for m in always.list("n")} == {"m1", "m2"}
    assert {m.id for m in recall.recall("second", k=5).memories} == {"m1", "m2"}  # the view was rebuilt
    time.sleep(0.6)  # the interval has passed: the next read checks for new versions
    assert eventually.count(namespace="n") == 2
    assert never.count(namespace="n") == 1
    assert make_s3_store().count(namespace="n") == 2  # a newly opened handle reads the latest


def test_the_command_line_on_s3_with_aws_variables(s3_server: LocalS3Server, s3_uri: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_RETRIEVERS_")}
    env |= s3_server.env | {
        "MEMORY_RETRIEVERS_EMBEDDER": "hash:32",
        "MEMORY_RETRIEVERS_NO_WORKER": "1",
        "MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "none.toml"),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cli = [sys.executable, "-m", "memory_retrievers", *args, "--store", s3_uri]
        done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    run("add", "Alice prefers the dark theme", "-n", "alice", "--kind", "preference")
    assert "Alice prefers the dark theme" in run("recall", "which theme?", "-n", "alice").stdout
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["rows"] == 1
