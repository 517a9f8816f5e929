"""Writer and reader processes for test_processes_on_s3.py (started with multiprocessing 'spawn').

Every memory id starts with its namespace and a dash, so a reader can tell a leak from the id
alone. Writers acknowledge each call after it returned, with the time (``time.monotonic()``,
one clock for every process on Linux) and what it changed.
"""

from __future__ import annotations

import time
import traceback
from datetime import timedelta
from typing import Any

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore

BARRIER_S = 120


def _open(uri: str, options: dict[str, str], **config: Any) -> MemoryStore:
    return MemoryStore(uri, storage_options=options, embedder=HashEmbedder(32), config=config or None)


def writer(uri: str, options: dict[str, str], worker: int, rounds: int, barrier: Any, acks: Any) -> None:
    """Rounds of add, add_many, add to the shared namespace, supersede, delete; worker 0 also optimizes."""
    try:
        barrier.wait(BARRIER_S)  # every process opens the table at once
        store = _open(uri, options, optimize_after_commits=16)
        own = f"t{worker}"

        def ack(op: str, ns: str, ids: list[str], **extra: Any) -> None:
            acks.put({"op": op, "ns": ns, "ids": ids, "t": time.monotonic(), "worker": worker, **extra})

        for i in range(rounds):
            step = i % 5
            if step == 0:
                m = store.add(f"{own} memory {i} of writer {worker}", namespace=own, id=f"{own}-{i}")
                ack("add", own, [m.id])
            elif step == 1:
                recs = [{"text": f"{own} batch {i} item {j}", "id": f"{own}-{i}-{j}"} for j in range(3)]
                store.add_many(recs, namespace=own, progress=False)
                ack("add", own, [r["id"] for r in recs])
            elif step == 2:
                m = store.add(f"team note {i} from writer {worker}", namespace="team", id=f"team-{worker}-{i}")
                ack("add", "team", [m.id])
            elif step == 3:
                old = f"{own}-{i - 3}"
                new = store.supersede(
                    old, {"text": f"{own} memory {i - 3}, corrected", "id": f"{own}-{i}-new"}, namespace=own
                )
                ack("add", own, [new.id], supersedes=old)
            else:
                gone = f"{own}-{i - 3}-0"
                store.delete([gone], namespace=own)
                ack("delete", own, [gone])
            if worker == 0 and i == rounds // 2:
                store.admin.optimize()  # maintenance racing the other writers' commits
        store.close()
        acks.put({"done": worker})
    except BaseException:
        acks.put({"done": worker, "error": traceback.format_exc()})


def reader(
    uri: str, options: dict[str, str], interval_s: float, namespaces: list[str], barrier: Any, stop: Any, out: Any
) -> None:
    """Reads the namespaces in turn until told to stop; reports every read and any foreign id."""
    reads: list[tuple[float, str, list[str]]] = []
    leaks: list[str] = []
    try:
        barrier.wait(BARRIER_S)
        store = _open(uri, options, read_consistency_interval=timedelta(seconds=interval_s))
        retrievers = {ns: MemoryRetriever(store, namespace=ns) for ns in namespaces}
        i = 0
        while not stop.is_set():
            ns = namespaces[i % len(namespaces)]
            started = time.monotonic()
            listed = [m.id for m in store.list(ns, limit=1000, filter={"include_superseded": True})]
            reads.append((started, ns, listed))
            searched = [h.id for h in store.fts_search("memory batch note", namespace=ns, k=50)]
            searched += [h.id for h in store.vector_search("a memory", namespace=ns, k=50)]
            searched += [m.id for m in retrievers[ns].recall("what did the writers say?", k=20).memories]
            leaks += [x for x in listed + searched if not x.startswith(f"{ns}-")]
            i += 1
            time.sleep(0.02)
        store.close()
        out.put({"interval": interval_s, "reads": reads, "leaks": leaks, "error": None})
    except BaseException:
        out.put({"interval": interval_s, "reads": reads, "leaks": leaks, "error": traceback.format_exc()})
