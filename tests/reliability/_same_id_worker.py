"""A writer process for tests/reliability/test_unique_ids.py: races other processes on the same ids.

    python _same_id_worker.py STORE OPTIONS_JSON GO_FILE OUT NAME ROUNDS [add|restore]

Opens a store at ``STORE`` (a folder or an ``s3://`` URI with ``OPTIONS_JSON`` storage options),
waits until ``GO_FILE`` exists (every writer starts its writes together), then for each round
``i`` adds ``"<NAME> wrote round i"`` with id ``key-i`` (or restores an export record of it) and
writes one JSON line per acknowledged write to ``OUT``: the round, the action and the text.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, MemoryStore

WAIT_S = 180


def _restore(store: MemoryStore, text: str, id_: str) -> tuple[str, str]:
    """Restore one export record (no vector: the store embeds it); ``added`` or ``updated`` as told."""
    at = "2024-05-01T12:00:00+00:00"
    record = {"id": id_, "namespace": "n", "text": text, "created_at": at, "updated_at": at}
    done = store.admin.restore([record])
    assert done.written == 1, done
    return ("added" if done.added else "updated"), text


def main(store_uri: str, options: str, go: str, out: str, name: str, rounds: int, op: str = "add") -> None:
    opts = json.loads(options) or None
    store = MemoryStore(store_uri, embedder=HashEmbedder(32), storage_options=opts)
    store.count("n")  # the table is open and read before the race starts
    Path(out + ".ready").write_text("ready", encoding="utf-8")
    while not Path(go).exists():
        time.sleep(0.002)
    with open(out, "a", encoding="utf-8") as fh:
        for i in range(rounds):
            if op == "restore":
                action, text = _restore(store, f"{name} wrote round {i}", f"key-{i}")
            else:
                got = store.add(f"{name} wrote round {i}", namespace="n", id=f"key-{i}", dedup=False)
                action, text = got.action.value, got.text
            fh.write(json.dumps({"round": i, "action": action, "text": text}) + "\n")
            fh.flush()
            while not Path(f"{go}.{i}").exists():  # the next round starts together again
                time.sleep(0.002)
    store.close()


def race(
    store_uri: str, options: dict[str, str] | None, folder: Path, writers: int, rounds: int, op: str = "add"
) -> list[dict[str, Any]]:
    """Start ``writers`` processes racing on ``rounds`` ids (``op``: add or restore); every acknowledgement."""
    go = folder / "go"
    procs, outs = [], []
    for w in range(writers):
        out = folder / f"w{w}.jsonl"
        outs.append(out)
        args = [
            sys.executable,
            __file__,
            store_uri,
            json.dumps(options or {}),
            str(go),
            str(out),
            f"w{w}",
            str(rounds),
            op,
        ]
        with open(folder / f"w{w}.log", "ab") as err:
            procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err))
    try:
        _wait(lambda: all(Path(f"{o}.ready").exists() for o in outs), procs, folder)
        go.write_text("go", encoding="utf-8")
        for i in range(rounds):
            _wait(lambda i=i: all(_lines(o) > i for o in outs), procs, folder)
            Path(f"{go}.{i}").write_text("go", encoding="utf-8")
        for p in procs:
            assert p.wait(WAIT_S) == 0, (folder / "w0.log").read_text(errors="replace")[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    acks = []
    for w, out in enumerate(outs):
        acks += [{**json.loads(line), "writer": f"w{w}"} for line in out.read_text(encoding="utf-8").splitlines()]
    return acks


def _lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("\n") if path.exists() else 0


def _wait(done: Any, procs: list[subprocess.Popen[bytes]], folder: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        for p in procs:
            if p.poll() is not None and p.returncode != 0:
                logs = "\n".join(f.read_text(errors="replace")[-2000:] for f in folder.glob("*.log"))
                raise AssertionError(f"a writer died: {logs}")
        assert time.monotonic() < deadline, "the writers stalled"
        time.sleep(0.01)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), *sys.argv[7:])
