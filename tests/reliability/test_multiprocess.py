"""Several writer and reader processes on one local store folder (issue 14, part 4).

Three writers add to their own namespaces while two readers list and search every namespace: one
with the default ``read_consistency_interval`` (every read checks for new versions), one with
0.5 s. Checked: every acknowledged write is found at the end; a reader never misses a write that
was acknowledged more than its interval before its read began (the default: before it began); no
read returns another namespace's memory. Counts, not timings, are asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory_retrievers import HashEmbedder, MemoryStore

WORKER = Path(__file__).with_name("_mp_worker.py")
WRITES = 30  # per writer: 24 single adds and 6 batches of three = 42 memories
TIMEOUT_S = 600


def _start(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.DEVNULL, stderr=err)


def _wait(proc: subprocess.Popen[bytes], log: Path) -> None:
    try:
        code = proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"a worker hung for {TIMEOUT_S} s: {log.read_text(errors='replace')[-2000:]}") from None
    assert code == 0, log.read_text(errors="replace")[-3000:]


def test_writers_and_readers_in_separate_processes(tmp_path: Path, workers: Any) -> None:
    store_dir, acks = tmp_path / "store", tmp_path / "acks"
    acks.mkdir()
    MemoryStore(store_dir, embedder=HashEmbedder(32)).close()  # created once, before the race
    namespaces = [f"w{n}" for n in range(3)]
    readers = {
        interval: _start(
            "read",
            str(store_dir),
            str(acks),
            str(tmp_path / f"reader-{interval}.json"),
            interval,
            *namespaces,
            log=tmp_path / f"reader-{interval}.log",
        )
        for interval in ("default", "0.5")
    }
    writers = [
        _start("write", str(store_dir), str(acks / f"{ns}.acks"), ns, str(WRITES), log=tmp_path / f"{ns}.log")
        for ns in namespaces
    ]
    for ns, proc in zip(namespaces, writers, strict=True):
        _wait(proc, tmp_path / f"{ns}.log")
    (acks / "done").touch()
    for interval, proc in readers.items():
        _wait(proc, tmp_path / f"reader-{interval}.log")

    acked: dict[str, list[str]] = {ns: [] for ns in namespaces}
    for ns in namespaces:
        for line in (acks / f"{ns}.acks").read_text().splitlines():
            acked[ns] += json.loads(line)["ids"]
    store = MemoryStore(store_dir, embedder=HashEmbedder(32))
    for ns in namespaces:
        assert len(acked[ns]) == 42
        assert sorted(m.id for m in store.list(ns, limit=1000)) == sorted(acked[ns])  # every acknowledged write
    store.close()

    figures = {}
    for interval in readers:
        report = json.loads((tmp_path / f"reader-{interval}.json").read_text())
        assert report["stale"] == [], f"reader {interval} missed acknowledged writes: {report['stale'][:10]}"
        assert report["leaks"] == [], f"reader {interval} read other namespaces: {report['leaks'][:10]}"
        assert report["rounds"] >= 2 and report["checked"] > 0
        assert report["max_seen"] == 42  # its last round saw everything
        figures[f"reader_{interval}_rounds"] = report["rounds"]
        figures[f"reader_{interval}_ids_checked"] = report["checked"]
    workers.summary("3 writers x 30 writes, 2 readers, one folder", acknowledged=126, found=126, **figures)
