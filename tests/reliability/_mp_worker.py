"""A writer or reader process for tests/reliability/test_multiprocess.py (one local store folder).

    python _mp_worker.py write STORE ACKS NAMESPACE COUNT
    python _mp_worker.py read STORE ACK_FOLDER OUT INTERVAL_S|default NAMESPACE...

A writer appends one JSON line per acknowledged write (ids and the time it returned). A reader
loops until the file ``ACK_FOLDER/done`` exists: each round it notes the time, reads every
acknowledgement so far, then lists and searches each namespace, and records acknowledged ids it did
not see although they were acknowledged more than the interval before the read started (stale), and
any memory of another namespace (leaks).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, MemoryStore


def write(store_dir: str, acks: str, ns: str, count: int) -> None:
    store = MemoryStore(store_dir, embedder=HashEmbedder(32))
    with open(acks, "a", encoding="utf-8") as fh:
        for i in range(count):
            if i % 5 == 4:  # every fifth write is a batch of three
                ids = [f"{ns}-{i}-{j}" for j in range(3)]
                store.add_many([{"text": f"{ns} batch {i} item {j}", "id": x} for j, x in enumerate(ids)], namespace=ns)
            else:
                ids = [store.add(f"{ns} note {i}", namespace=ns, id=f"{ns}-{i}", dedup=False).id]
            fh.write(json.dumps({"ns": ns, "ids": ids, "at": time.time()}) + "\n")
            fh.flush()
    store.close()


def _acks(folder: Path) -> list[dict[str, Any]]:
    out = []
    for path in folder.glob("*.acks"):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line being written right now
                continue
    return out


def read(store_dir: str, folder: str, out: str, interval: str, namespaces: list[str]) -> None:
    config = {} if interval == "default" else {"read_consistency_interval": timedelta(seconds=float(interval))}
    lag = 0.0 if interval == "default" else float(interval)
    store = MemoryStore(store_dir, embedder=HashEmbedder(32), config=config)
    report: dict[str, Any] = {"rounds": 0, "checked": 0, "stale": [], "leaks": [], "max_seen": 0}
    done = Path(folder) / "done"
    while True:
        finished = done.exists()  # read before the round: the last round sees every write
        started = time.time()
        acked = [a for a in _acks(Path(folder)) if a["at"] <= started - lag]
        for ns in namespaces:
            listed = store.list(ns, limit=100_000)
            seen = {m.id for m in listed}
            report["leaks"] += [m.id for m in listed if m.namespace != ns or not m.id.startswith(f"{ns}-")]
            hits = store.fts_search(ns, namespace=ns, k=50) + store.vector_search(f"{ns} note", namespace=ns, k=50)
            report["leaks"] += [h.id for h in hits if not h.id.startswith(f"{ns}-")]
            for a in acked:
                if a["ns"] == ns:
                    report["checked"] += len(a["ids"])
                    report["stale"] += [i for i in a["ids"] if i not in seen]
            report["max_seen"] = max(report["max_seen"], len(seen))
        report["rounds"] += 1
        if finished:
            break
    Path(out).write_text(json.dumps(report), encoding="utf-8")
    store.close()


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:])
