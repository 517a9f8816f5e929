"""Processes started from a process that uses a store: fork, forkserver and spawn.

The case reported (issue 14): a parent opens a store and adds a memory, then starts a worker that
opens its own store on the same folder and adds one. With ``fork`` the worker used to hang or die
(LanceDB's runtime is unsafe in a forked child even for new connections; see
memory_retrievers/_fork.py). Every child here runs under a generous join timeout, so a hang is a
failure, not a stuck suite.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import ForkedStoreError, HashEmbedder, MemoryStore, PerProcess

JOIN_S = 180
METHODS = ["fork", "forkserver", "spawn"]


def _open(path: str) -> MemoryStore:
    return MemoryStore(path, embedder=HashEmbedder(32))


def _child_opens_its_own(path: str, name: str, out: Any) -> None:
    try:
        store = _open(path)
        added = store.add(f"written by {name}", namespace="shared", id=name)
        out.put(
            {
                "id": added.id,
                "count": store.count(namespace="shared"),
                "engine": type(store._table.handle).__name__,
                "pid": os.getpid(),
            }
        )
        store.close()
    except BaseException as exc:  # reported to the parent, whatever it is
        out.put({"error": repr(exc)})


def _run(method: str, target: Any, *args: Any) -> dict[str, Any]:
    ctx = mp.get_context(method)
    out = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, out))
    proc.start()
    proc.join(JOIN_S)
    if proc.is_alive():
        proc.kill()
        proc.join()
        pytest.fail(f"the {method} child hung for {JOIN_S} s")
    assert proc.exitcode == 0, f"the {method} child died with exit code {proc.exitcode}"
    result: dict[str, Any] = out.get(timeout=10)
    assert "error" not in result, result["error"]
    return result


@pytest.mark.parametrize("method", METHODS)
def test_a_worker_opens_its_own_store_after_the_parent_used_one(tmp_path: Path, method: str) -> None:
    path = str(tmp_path / "db")
    parent = _open(path)
    parent.add("written by the parent", namespace="shared", id="parent")
    for n in range(2):  # a second worker too: the first one's exit must leave nothing broken
        result = _run(method, _child_opens_its_own, path, f"{method}-{n}")
        assert result["id"] == f"{method}-{n}" and result["count"] == n + 2
        # Only a forked child inherits the parent's LanceDB runtime, and only it needs the engine process.
        assert result["engine"] == ("RemoteTable" if method == "fork" else "AsyncTable")
    assert sorted(m.id for m in parent.list("shared")) == sorted(["parent", f"{method}-0", f"{method}-1"])
    parent.add("the parent still writes", namespace="shared", id="parent-2")
    assert parent.count(namespace="shared") == 4
    parent.close()


def _child_uses_the_parents_store(store: MemoryStore, out: Any) -> None:
    try:
        try:
            store.add("from the child", namespace="shared")
            out.put({"error": "the inherited store accepted a write"})
            return
        except ForkedStoreError as exc:
            message, opened_in = str(exc), exc.opened_in
        for call in (lambda: store.count(namespace="shared"), store.flush, store.admin.flush_access):
            try:
                call()
                out.put({"error": f"{call} worked on the inherited store"})
                return
            except ForkedStoreError:
                pass
        store.close()  # the parent's to close: a no-op here, never an error
        out.put({"message": message, "opened_in": opened_in})
    except BaseException as exc:
        out.put({"error": repr(exc)})


def test_a_store_carried_into_a_forked_child_raises_a_typed_error_naming_the_fix(tmp_path: Path) -> None:
    store = _open(str(tmp_path / "db"))
    added = store.add("parent memory", namespace="shared")
    store.record_access([added.id], namespace="shared")  # pending in the parent: the child must not write it
    result = _run("fork", _child_uses_the_parents_store, store)
    assert result["opened_in"] == os.getpid()
    for fix in ("--preload", "post_fork", "worker_process_init", "forkserver", "spawn", "docs/how-to/deploy.md"):
        assert fix in result["message"]
    assert store.count(namespace="shared") == 1  # the parent's store is untouched and works
    assert store.admin.flush_access() == 1  # its pending access was written once, here
    store.close()


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_store_sent_to_a_spawned_child_is_refused_in_the_parent(tmp_path: Path, method: str) -> None:
    store = _open(str(tmp_path / "db"))
    with pytest.raises(ForkedStoreError, match="open a new"):
        pickle.dumps(store)
    ctx = mp.get_context(method)
    proc = ctx.Process(target=_child_uses_the_parents_store, args=(store, ctx.Queue()))
    with pytest.raises(ForkedStoreError):
        proc.start()
    store.close()


_STORES: PerProcess[MemoryStore] | None = None


def _child_uses_per_process(out: Any) -> None:
    try:
        assert _STORES is not None
        store = _STORES.get()
        store.add("from the child", namespace="pp", id=f"child-{os.getpid()}")
        out.put({"count": store.count(namespace="pp"), "same": _STORES.get() is store})
        _STORES.close()
    except BaseException as exc:
        out.put({"error": repr(exc)})


def test_per_process_gives_a_forked_child_its_own_store(tmp_path: Path) -> None:
    global _STORES
    _STORES = PerProcess(lambda: _open(str(tmp_path / "db")))
    mine = _STORES.get()
    mine.add("from the parent", namespace="pp", id="parent")
    result = _run("fork", _child_uses_per_process)
    assert result == {"count": 2, "same": True}
    assert _STORES.get() is mine and mine.count(namespace="pp") == 2
    _STORES.close()
    _STORES = None


def _grandchild(path: str, out: Any) -> None:
    try:
        ctx = mp.get_context("fork")
        inner = ctx.Queue()
        proc = ctx.Process(target=_child_opens_its_own, args=(path, "grandchild", inner))
        proc.start()
        proc.join(JOIN_S)
        out.put(inner.get(timeout=10) if proc.exitcode == 0 else {"error": f"grandchild exit {proc.exitcode}"})
    except BaseException as exc:
        out.put({"error": repr(exc)})


def test_a_grandchild_forked_from_a_forked_worker_also_works(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    parent = _open(path)
    parent.add("written by the parent", namespace="shared", id="parent")
    result = _run("fork", _grandchild, path)
    assert result["count"] == 2 and result["engine"] == "RemoteTable"
    parent.close()
