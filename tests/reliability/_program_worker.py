"""Runs one actor's program of store operations and records what each call returned, and when.

Used by ``test_concurrent_programs.py`` both in-process (threads) and as a separate process::

    python _program_worker.py STORE_DIR PROGRAM.json ACKS.jsonl

Every call is recorded with ``time.monotonic()`` before and after it (the same clock in every
process on Linux), so the checker can tell which operations overlapped.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, InvalidInputError, MemoryRetriever, MemoryStore, NotFoundError, StorageError

#: Errors a call may meet because another actor changed the memory first.
EXPECTED = (NotFoundError, InvalidInputError)


def open_store(path: str) -> MemoryStore:
    return MemoryStore(path, embedder=HashEmbedder(16), config={"read_consistency_interval": None})


def run_op(store: MemoryStore, op: dict[str, Any], mine: list[tuple[str, str]]) -> dict[str, Any]:
    """One operation; ``mine`` holds the (namespace, id) of memories this actor created, in order."""
    kind, ns = op["op"], op["ns"]
    out: dict[str, Any] = {"op": kind, "ns": ns, "t0": time.monotonic()}
    try:
        if kind in ("add", "chat"):
            fields = {"kind": "message", "session_id": "s"} if kind == "chat" else {}
            mem = store.add(op["text"], namespace=ns, dedup=False, **fields)
            mine.append((ns, mem.id))
            out.update(id=mem.id, text=op["text"])
        elif kind in ("update", "supersede", "delete"):
            if not mine:
                return {}
            ref_ns, ref = mine[op["ref"] % len(mine)]
            out.update(ns=ref_ns, target=ref)
            if kind == "update":
                out["text"] = op["text"]
                store.update(ref, namespace=ref_ns, text=op["text"])
            elif kind == "supersede":
                # A named id: a read may see an attempt that then fails and is taken back.
                out.update(text=op["text"], attempted=f"{op['text'].split()[-1]}-new")
                new = store.supersede(ref, {"text": op["text"], "id": out["attempted"]}, namespace=ref_ns)
                mine.append((ref_ns, new.id))
                out["id"] = new.id
            else:
                store.delete(ref, namespace=ref_ns)
        elif kind == "forget":
            store.forget(ns)
        elif kind == "recall":
            result = MemoryRetriever(store, namespace=ns, config={"record_access": False}).recall(op["text"], k=20)
            out["seen"] = [[m.memory.namespace, m.id] for m in result.memories]
        elif kind == "list":
            out["seen"] = [[m.namespace, m.id] for m in store.list(ns, limit=1000, filter={"include_superseded": True})]
        out["ok"] = True
    except EXPECTED as exc:
        out.update(ok=False, error=type(exc).__name__)
    except StorageError as exc:  # must not happen: recorded, and the checker fails on it
        out.update(ok=False, error=f"StorageError: {exc}")
    out["t1"] = time.monotonic()
    return out


def run_program(store: MemoryStore, program: list[dict[str, Any]], start_at: float) -> list[dict[str, Any]]:
    while time.monotonic() < start_at:  # every actor starts at the same moment
        time.sleep(0.001)
    mine: list[tuple[str, str]] = []
    return [ack for op in program if (ack := run_op(store, op, mine))]


def main() -> None:
    path, program_path, acks_path = sys.argv[1], sys.argv[2], sys.argv[3]
    spec = json.loads(Path(program_path).read_text())
    store = open_store(path)
    acks = run_program(store, spec["program"], spec["start_at"])
    store.close()
    Path(acks_path).write_text("\n".join(json.dumps(a) for a in acks) + "\n")


if __name__ == "__main__":
    main()
