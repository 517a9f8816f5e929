"""A writer process for the reliability tests: runs one kind of write in a loop, acknowledging each.

After every call that returns, it appends the acknowledged ids to ``acks`` and fsyncs, so the
parent knows exactly which writes the store promised to keep before it killed us.

    python _worker.py STORE_DIR ACKS_FILE OPERATION WORKER_ID
"""

from __future__ import annotations

import json
import os
import sys

from memory_retrievers import HashEmbedder, MemoryStore

OPS = ("add_many", "upsert", "supersede", "optimize", "mixed")


def ack(fh: object, record: dict) -> None:
    fh.write(json.dumps(record) + "\n")  # type: ignore[attr-defined]
    fh.flush()  # type: ignore[attr-defined]
    os.fsync(fh.fileno())  # type: ignore[attr-defined]


def main() -> None:
    path, acks_path, op, worker = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else 10**9
    store = MemoryStore(path, embedder=HashEmbedder(32), config={"optimize_after_commits": 8})
    ns = f"w{worker}"
    run = os.getpid()  # ids unique per run, so a restarted writer never collides with its last life
    with open(acks_path, "a", encoding="utf-8") as fh:
        ack(fh, {"ready": True})
        i = 0
        while i < limit:
            kind = op if op != "mixed" else OPS[i % 4]
            if kind == "add_many":
                recs = [{"text": f"{ns} batch {i} item {j}", "id": f"{ns}-a{run}-{i}-{j}"} for j in range(20)]
                store.add_many(recs, namespace=ns, dedup=False)
                ack(fh, {"ns": ns, "ids": [r["id"] for r in recs], "op": kind})
            elif kind == "upsert":
                key = f"{ns}-u{i % 5}"
                store.add(f"{ns} upsert {i}", namespace=ns, id=key, dedup=False)
                ack(fh, {"ns": ns, "ids": [key], "text": {key: f"{ns} upsert {i}"}, "op": kind})
            elif kind == "supersede":
                old = store.add(f"{ns} old fact {i}", namespace=ns, id=f"{ns}-s{run}-{i}", dedup=False)
                new = store.supersede(old.id, {"text": f"{ns} new fact {i}", "id": f"{ns}-n{run}-{i}"}, namespace=ns)
                ack(fh, {"ns": ns, "ids": [old.id, new.id], "pair": [old.id, new.id], "op": kind})
            else:
                store.add(f"{ns} before optimize {i}", namespace=ns, id=f"{ns}-o{run}-{i}", dedup=False)
                ack(fh, {"ns": ns, "ids": [f"{ns}-o{run}-{i}"], "op": kind})
                store.admin.optimize()
            i += 1
        ack(fh, {"done": True})


if __name__ == "__main__":
    main()
