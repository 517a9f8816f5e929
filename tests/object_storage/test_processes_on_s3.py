"""Several writer and reader processes on one ``s3://`` store (multiprocessing 'spawn').

Three writers (their own namespaces and a shared one: add, add_many, supersede, delete, one of them
optimizing midway) and two readers (consistency intervals 0 and 0.25 s) open one store at once and
work on it. Checked: every acknowledged write is found and nothing else; no read ever
returns another namespace's memory; a reader's listing includes every write acknowledged more than
its interval before the read began (the interval is the guarantee itself, not a performance bound).

The store is created before the processes start: processes that *create* a new table at the same
moment can make LanceDB commit a late creator's empty table over the first one's writes (seen here
as "Update ... incompatible with concurrent transaction Overwrite at version 2"; see
docs/how-to/object-storage.md).
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from typing import Any

from memory_retrievers import HashEmbedder, MemoryStore
from testing.local_s3 import LocalS3Server

WRITERS = 3
ROUNDS = 15
INTERVALS = (0.0, 0.25)
NAMESPACES = [f"t{w}" for w in range(WRITERS)] + ["team"]
TIMEOUT_S = 300  # generous: a hang becomes a failure, never a stuck run


def _collect(queue: Any, count: int, what: str) -> list[dict[str, Any]]:
    out = []
    while count:
        item = queue.get(timeout=TIMEOUT_S)
        if "done" in item or "reads" in item:
            count -= 1
        out.append(item)
    failures = [i["error"] for i in out if i.get("error")]
    assert not failures, f"a {what} failed:\n" + "\n".join(failures)
    return out


def _expected(acks: list[dict[str, Any]]) -> tuple[dict[str, set[str]], set[str], dict[str, str]]:
    """Ids each namespace must hold (superseded ones included), ids that must be gone, supersessions."""
    stored: dict[str, set[str]] = {ns: set() for ns in NAMESPACES}
    deleted: set[str] = set()
    superseded: dict[str, str] = {}
    for ack in acks:
        if ack["op"] == "delete":
            deleted |= set(ack["ids"])
            stored[ack["ns"]] -= set(ack["ids"])
        else:
            stored[ack["ns"]] |= set(ack["ids"])
            if "supersedes" in ack:
                superseded[ack["supersedes"]] = ack["ids"][0]
    return stored, deleted, superseded


def test_writers_and_readers_in_processes_on_s3(s3_server: LocalS3Server, s3_uri: str, worker_module: Any) -> None:
    MemoryStore(s3_uri, storage_options=s3_server.storage_options, embedder=HashEmbedder(32)).close()
    ctx = mp.get_context("spawn")
    acks, results, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    barrier = ctx.Barrier(WRITERS + len(INTERVALS))
    opts = s3_server.storage_options
    procs = [
        ctx.Process(target=worker_module.writer, args=(s3_uri, opts, w, ROUNDS, barrier, acks)) for w in range(WRITERS)
    ]
    procs += [
        ctx.Process(target=worker_module.reader, args=(s3_uri, opts, i, NAMESPACES, barrier, stop, results))
        for i in INTERVALS
    ]
    for p in procs:
        p.start()
    try:
        written = _collect(acks, WRITERS, "writer")
        stop.set()
        reports = _collect(results, len(INTERVALS), "reader")
    finally:
        stop.set()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * len(procs)
    acked = [a for a in written if "op" in a]
    assert len(acked) == WRITERS * ROUNDS  # every call returned (none raised)

    # Every acknowledged write is found, and nothing else is stored.
    stored, deleted, superseded = _expected(acked)
    with MemoryStore(s3_uri, storage_options=opts, embedder=HashEmbedder(32)) as store:
        found = {
            ns: {m.id: m for m in store.list(ns, limit=10_000, filter={"include_superseded": True})}
            for ns in NAMESPACES
        }
    for ns in NAMESPACES:
        assert set(found[ns]) == stored[ns], ns
    assert deleted and not deleted & {i for ns in NAMESPACES for i in found[ns]}
    assert superseded and all(found[old.split("-")[0]][old].superseded_by == new for old, new in superseded.items())

    # No read returned another namespace's memory; readers saw acknowledged writes in time.
    checked = 0
    for report in reports:
        assert report["leaks"] == []
        interval = report["interval"]
        for started, ns, listed in report["reads"]:
            seen = set(listed)
            due = {
                i for a in acked if a["ns"] == ns and a["op"] == "add" and a["t"] + interval < started for i in a["ids"]
            }
            due -= deleted  # a deleted memory may be gone already, whenever it was read
            missing = due - seen
            assert not missing, f"reader (interval {interval} s) missed {sorted(missing)} in {ns}"
            checked += len(due)
        sizes = {len(listed) for _, _, listed in report["reads"]}
        assert len(report["reads"]) > 10 and len(sizes) > 2, "the reader did not read while the writers wrote"
    assert checked > 0
    total = sum(len(a["ids"]) for a in acked if a["op"] == "add")
    print(  # the figures docs/how-to/object-storage.md quotes (pytest -s or -rA shows them)
        f"\n[object storage] {WRITERS} writers x {ROUNDS} calls: {total} memories acknowledged, "
        f"{sum(len(v) for v in stored.values())} expected, {sum(len(v) for v in found.values())} found, "
        f"{len(deleted)} deleted; {sum(len(r['reads']) for r in reports)} reads, {checked} visibility checks, "
        f"0 leaks",
        file=sys.stderr,
    )
