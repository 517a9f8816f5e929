"""The vector index is built by a child process, so the store's own writes never queue behind it.

LanceDB runs CPU-bound work on one pool of ``max(1, cores - 2)`` threads, first come first
served: a write made while the store built its HNSW index in-process waited for the whole build
(a one-memory ``add`` took 94 s on 2 cores at 20k rows). These tests pin the mechanism, that the
index still gets built and searched, and what a failed child reports.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import StoreConfig
from memory_retrievers.errors import StorageError
from memory_retrievers.storage import index_child
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.conflicts import retry_conflicts
from memory_retrievers.storage.maintenance import Maintainer, build_in_child
from memory_retrievers.storage.table import MemoryTable

from .conftest import EMBEDDER, new_table, rows

_TEXTS = [f"memory number {i} about topic {i % 7}" for i in range(300)]


@pytest.fixture
def child_builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Records every child build (and still runs it)."""
    seen: list[tuple[str, str]] = []

    async def spy(uri: str, table: str, options: Any, column: str, kind: Any) -> None:
        seen.append((column, kind))
        await build_in_child(uri, table, options, column, kind)

    monkeypatch.setattr(index_child, "build_in_child", spy)
    return seen


async def _fill(table: MemoryTable, config: StoreConfig) -> Maintainer:
    maintainer = Maintainer(table, config, AccessLog(table))
    await table.add(rows("u", _TEXTS[:200]))  # the first commit builds the base indexes (no ANN: below 256)
    assert not any(key.endswith(":vector") for key in table.indexed)
    return maintainer


async def test_the_vector_index_is_built_by_a_child_process(
    table: MemoryTable, child_builds: list[tuple[str, str]]
) -> None:
    maintainer = await _fill(table, StoreConfig(ann_index_min_rows=256))
    await table.add(rows("u", _TEXTS[200:]))  # past the floor: the next optimize adds the ANN index
    await maintainer.optimize(wait=True)
    assert child_builds == [("vector", "HnswSq")]
    assert any(key.endswith(":vector") for key in table.indexed)
    # This process's handle sees and uses the child's index: the nearest row to a stored text is itself.
    stats = await table.handle.index_stats("vector_idx")
    assert stats is not None and stats.num_indexed_rows == len(_TEXTS)
    query = EMBEDDER.embed_query(_TEXTS[42])
    found = await table.handle.vector_search(query).distance_type("cosine").limit(1).to_list()
    assert found[0]["text"] == _TEXTS[42]


async def test_off_builds_in_process(table: MemoryTable, child_builds: list[tuple[str, str]]) -> None:
    maintainer = await _fill(table, StoreConfig(ann_index_min_rows=256, index_in_child_process=False))
    await table.add(rows("u", _TEXTS[200:]))
    await maintainer.optimize(wait=True)
    assert child_builds == []
    assert any(key.endswith(":vector") for key in table.indexed)


@pytest.mark.long  # a child Python process (the fast tier keeps test_the_vector_index_is_built_by_a_child_process)
async def test_a_failed_child_raises_a_storage_error_with_its_stderr(tmp_path: Path) -> None:
    async def attempt() -> None:
        await build_in_child(str(tmp_path / "nowhere"), "memories", None, "vector", "HnswSq")

    with pytest.raises(StorageError) as caught:
        await retry_conflicts("build indexes", attempt)
    message = str(caught.value)
    assert "build indexes" in message and "exited with 1" in message
    assert "memories" in message  # LanceDB's own error from the child: the table was not found


@pytest.mark.parametrize(
    ("attribute", "value"),
    # No usable sys.executable; a frozen application, whose executable is the application itself.
    [("executable", ""), ("frozen", True)],
)
async def test_no_child_possible_builds_in_process(
    table: MemoryTable,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    attribute: str,
    value: object,
) -> None:
    monkeypatch.setattr(sys, attribute, value, raising=False)  # the index is still built, here
    maintainer = await _fill(table, StoreConfig(ann_index_min_rows=256))
    await table.add(rows("u", _TEXTS[200:]))
    with caplog.at_level("WARNING", logger=index_child.__name__):
        await maintainer.optimize(wait=True)
    assert any(key.endswith(":vector") for key in table.indexed)
    assert "building the vector index in this process" in caplog.text


async def test_a_child_that_cannot_import_the_libraries_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sys.executable that is not this Python (cannot import lancedb) is told apart from a failed build.
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    monkeypatch.setattr(sys, "path", [])  # and nothing of ours on the path handed to the child
    with pytest.raises(index_child.ChildUnavailable, match="could not import"):
        await build_in_child(str(tmp_path / "db"), "memories", None, "vector", "HnswSq")


@pytest.mark.long  # a child Python process (the fast tier keeps test_the_vector_index_is_built_by_a_child_process)
async def test_the_child_gets_the_paths_this_process_added(table: MemoryTable, monkeypatch: pytest.MonkeyPatch) -> None:
    # An application that put its packages on sys.path at run time (not in PYTHONPATH) still builds.
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setattr(sys, "path", [*sys.path])  # restored after the test
    await table.add(rows("u", _TEXTS))
    await build_in_child(table.uri, table.table_name, None, "vector", "HnswSq")
    await table.refresh()
    assert any(key.endswith(":vector") for key in await table.refresh_indexes())


@pytest.mark.long  # a child Python process (the fast tier keeps test_the_vector_index_is_built_by_a_child_process)
async def test_python_files_in_the_working_directory_never_run_in_the_child(
    table: MemoryTable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``python -c`` puts the cwd first on sys.path: a json.py there must not be imported.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = tmp_path / "ran"
    for name in ("json", "asyncio", "threading", "lancedb"):
        (cwd / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    monkeypatch.chdir(cwd)
    await table.add(rows("u", _TEXTS))
    await build_in_child(table.reopen_uri, table.table_name, None, "vector", "HnswSq")
    assert not marker.exists()
    await table.refresh()
    assert any(key.endswith(":vector") for key in await table.refresh_indexes())


@pytest.mark.long  # a child Python process (the fast tier keeps test_the_vector_index_is_built_by_a_child_process)
async def test_a_relative_store_path_is_reopened_where_it_was_after_a_chdir(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    child_builds: list[tuple[str, str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    table = new_table(Path("relative-db"))
    await table.open()
    maintainer = await _fill(table, StoreConfig(ann_index_min_rows=256))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a server that changes directory after opening its store
    await table.add(rows("u", _TEXTS[200:]))
    with caplog.at_level("WARNING", logger=index_child.__name__):
        await maintainer.optimize(wait=True)
    assert child_builds == [("vector", "HnswSq")] and "in this process" not in caplog.text
    assert any(key.endswith(":vector") for key in table.indexed)
    assert not (elsewhere / "relative-db").exists()


async def test_an_executable_that_exits_cleanly_without_building_is_not_taken_for_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / "app"
    app.write_text("#!/bin/sh\necho 'the application started'\nexit 0\n")
    app.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(app))
    with pytest.raises(index_child.ChildUnavailable, match="did not run the index build"):
        await build_in_child(str(tmp_path / "db"), "memories", None, "vector", "HnswSq")


@pytest.mark.long  # a child Python process (the fast tier keeps test_the_vector_index_is_built_by_a_child_process)
async def test_a_build_reported_by_the_child_counts_even_if_its_exit_status_is_lost(
    table: MemoryTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A daemon that ignores SIGCHLD: the kernel reaps the child and asyncio reads status 255.
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        await table.add(rows("u", _TEXTS))
        await build_in_child(table.reopen_uri, table.table_name, None, "vector", "HnswSq")
    finally:
        signal.signal(signal.SIGCHLD, previous)
    await table.refresh()
    assert any(key.endswith(":vector") for key in await table.refresh_indexes())


@pytest.mark.long  # a child Python process (the fast tier keeps test_the_vector_index_is_built_by_a_child_process)
def test_the_child_stops_when_its_parent_is_gone(tmp_path: Path) -> None:
    # A lancedb that takes a minute to import stands in for a long build; closing the child's
    # stdin is what the parent's death does.
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "lancedb.py").write_text("import time\ntime.sleep(60)\n")
    spec = {"uri": "x", "table": "t", "storage_options": None, "column": "vector", "kind": "HnswSq"}
    spec |= {"path": [str(slow)], "no_import": 86, "built": "built"}
    child = subprocess.Popen([sys.executable, "-c", index_child._BUILD_SCRIPT], stdin=subprocess.PIPE)
    try:
        assert child.stdin is not None
        child.stdin.write(json.dumps(spec).encode() + b"\n")
        child.stdin.flush()
        time.sleep(1.0)
        assert child.poll() is None  # building (importing the slow lancedb)
        child.stdin.close()
        assert child.wait(timeout=20) == 1  # gone long before the minute is up
    finally:
        if child.poll() is None:
            child.kill()


# Run in a child with LANCE_CPU_THREADS=1: the 2-core case (one compute thread) on any machine.
_DURING_BUILD = """
import json, random, statistics, sys, tempfile, time
from memory_retrievers import HashEmbedder, MemoryStore, StoreConfig

rows, in_child = int(sys.argv[1]), sys.argv[2] == "child"
rnd = random.Random(0)
words = [f"w{i}" for i in range(3000)]
def recs(n, off):
    return [{"text": " ".join(rnd.choice(words) for _ in range(12)) + f" r{off + i}", "namespace": f"t{i % 20}"}
            for i in range(n)]
config = StoreConfig(ann_index_min_rows=rows, optimize_after_rows=10**6, optimize_after_commits=10**4,
                     index_in_child_process=in_child, storage_timeout=None)
store = MemoryStore(tempfile.mkdtemp(), embedder=HashEmbedder(384), config=config)
store.add_many(recs(rows - 10, 0), dedup=False, batch_size=4096)
store.flush()
def add():
    start = time.perf_counter()
    store.add(f"probe {rnd.random()}", namespace="probe", dedup=False)
    return time.perf_counter() - start
quiet = statistics.median(add() for _ in range(5))
maintainer = store._maintainer
maintainer.note_large_namespace()  # starts the ANN build in the background, as a large recall would
time.sleep(3.0)  # into the build (the child's start-up included)
running_before = not maintainer._background.done()
during = add()
running_after = not maintainer._background.done()
store.flush()
print(json.dumps({"quiet": quiet, "during": during, "running_before": running_before,
                  "running_after": running_after, "vector": any(k.endswith(":vector") for k in store._table.indexed)}))
store.close()
"""


@pytest.mark.long
def test_an_add_during_the_background_vector_build_is_not_held_for_the_build() -> None:
    env = {**os.environ, "LANCE_CPU_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _DURING_BUILD, "12000", "child"], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["running_before"] and seen["running_after"], seen  # the add really overlapped the build
    assert seen["vector"], seen  # and the index was built all the same
    # In-process, this add waited for the rest of the build (tens of seconds; 94 s at 20k rows).
    assert seen["during"] <= max(20 * seen["quiet"], 2.0), seen
