"""Many threads and processes on one store: every acknowledged write found once, no errors."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore

THREADS = 8
OPS_PER_THREAD = 30


def test_threads_add_upsert_recall_delete_on_one_store(tmp_path: Path, workers: Any) -> None:
    store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32), config={"optimize_after_commits": 20})
    errors: list[BaseException] = []
    acknowledged: dict[str, set[str]] = {}  # namespace -> ids that must exist at the end
    deleted: dict[str, set[str]] = {}
    recalls = Counter[str]()
    lock = threading.Lock()

    def work(t: int) -> None:
        ns = f"tenant-{t % 4}"  # two threads per namespace, so writers race inside a namespace
        retriever = MemoryRetriever(store, namespace=ns, config={"record_access": t % 2 == 0})
        mine: list[str] = []
        try:
            for i in range(OPS_PER_THREAD):
                op = i % 5
                if op in (0, 1):
                    m = store.add(f"thread {t} note {i} about topic {i % 7}", namespace=ns, id=f"t{t}-{i}")
                    mine.append(m.id)
                elif op == 2:
                    batch = [{"text": f"thread {t} batch {i} item {j}", "id": f"t{t}-{i}-{j}"} for j in range(5)]
                    mine += [m.id for m in store.add_many(batch, namespace=ns)]
                elif op == 3:
                    store.add(f"thread {t} upserted at {i}", namespace=ns, id=f"t{t}-shared", dedup=False)
                    if f"t{t}-shared" not in mine:
                        mine.append(f"t{t}-shared")
                    result = retriever.recall(f"topic {i % 7} note", k=5)
                    assert all(m.memory.namespace == ns for m in result.memories)
                    with lock:
                        recalls[ns] += 1
                else:
                    gone = mine.pop(0)
                    assert store.delete(gone, namespace=ns) == 1
                    with lock:
                        deleted.setdefault(ns, set()).add(gone)
            with lock:
                acknowledged.setdefault(ns, set()).update(mine)
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    def optimizer() -> None:
        try:
            while any(t.is_alive() for t in threads):
                store.admin.optimize()
                time.sleep(0.05)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    racer = threading.Thread(target=optimizer)
    racer.start()
    for thread in [*threads, racer]:
        thread.join(timeout=300)
    assert not errors, errors[:3]

    attempted = THREADS * OPS_PER_THREAD
    found = lost = duplicated = leaked = 0
    for ns, ids in acknowledged.items():
        rows = store.list(ns, limit=100_000, filter={"include_superseded": True})
        counts = Counter(m.id for m in rows)
        duplicated += sum(1 for c in counts.values() if c > 1)
        lost += len(ids - set(counts))
        found += len(ids & set(counts))
        leaked += sum(1 for m in rows if m.namespace != ns)
        assert not (deleted.get(ns, set()) & set(counts)), "a deleted memory came back"
        assert store.count(ns, filter={"include_superseded": True}) == len(counts)
    store.close()
    assert (lost, duplicated, leaked) == (0, 0, 0)
    workers.summary(
        "threads",
        threads=THREADS,
        operations=attempted,
        memories_acknowledged=found + lost,
        found=found,
        lost=lost,
        duplicated=duplicated,
        recalls=sum(recalls.values()),
        recall_errors=0,
    )


PROCESSES = 3
WRITES_PER_PROCESS = 15


def test_processes_write_one_store_and_a_reader_sees_them(tmp_path: Path, workers: Any) -> None:
    store_dir = tmp_path / "db"
    # Create the table first so the writers open, not race to create, it.
    MemoryStore(store_dir, embedder=HashEmbedder(32)).close()
    reader = MemoryStore(
        store_dir, embedder=HashEmbedder(32), config={"read_consistency_interval": timedelta(seconds=0)}
    )
    procs = [
        workers.start(store_dir, tmp_path / f"acks{w}.jsonl", "mixed", worker=w, limit=WRITES_PER_PROCESS)
        for w in range(PROCESSES)
    ]
    # While they write, the reader sees a growing count (never an error, never a partial row).
    seen_growth = 0
    last = 0
    while any(p.poll() is None for p in procs):
        now = sum(reader.count(f"w{w}", filter={"include_superseded": True}) for w in range(PROCESSES))
        assert now >= last
        seen_growth += now > last
        last = now
        time.sleep(0.1)
    assert [p.returncode for p in procs] == [0] * PROCESSES

    acknowledged = found = 0
    for w in range(PROCESSES):
        ids = {i for record in workers.acks(tmp_path / f"acks{w}.jsonl") for i in record["ids"]}
        rows = {m.id for m in reader.list(f"w{w}", limit=100_000, filter={"include_superseded": True})}
        acknowledged += len(ids)
        found += len(ids & rows)
    reader.close()
    assert found == acknowledged > 0
    assert seen_growth >= 1  # the reader saw other processes' commits while they were writing
    workers.summary(
        "processes", processes=PROCESSES, writes_acknowledged=acknowledged, found=found, lost=acknowledged - found
    )
