"""A process that used a store exits cleanly even when LanceDB's threads are still in Python then.

A LanceDB call completes on a tokio thread that enters Python (PyO3) to hand the result to the
waiting event loop. The caller can return, and the program exit, before that thread has left
Python; an interpreter finalizing under it aborted the process ("Fatal Python error:
PyGILState_Release", exit code -6), intermittently and only under CPU load. The tests below make
the race certain instead of rare: the tokio thread lingers in Python after waking the loop, as a
thread starved of CPU does.
"""

from __future__ import annotations

import _thread
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import memory_retrievers.store.lifecycle as _store_lifecycle

#: A debug widening of the race, run in a child process. Without the wait at exit, every run that
#: exits without close() aborted or crashed (10 of 10); one that closed first did not (0 of 10).
_WIDENED = """
import _thread
import threading
import time

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from memory_retrievers.runtime import loop as _loop

loop = _loop._get_loop()
wake = type(loop).call_soon_threadsafe


def lingering_wake(self, *args, **kwargs):
    handle = wake(self, *args, **kwargs)
    if isinstance(threading.current_thread(), threading._DummyThread):  # a tokio thread
        time.sleep(0.2)  # releases the GIL, as the wake-up write does
    return handle


type(loop).call_soon_threadsafe = lingering_wake

store = MemoryStore({db!r}, embedder=HashEmbedder(16))
store.add("Bob's dog is called Max", namespace="bob")
assert MemoryRetriever(store, namespace="bob").recall("dog").memories
{close}
"""


@pytest.mark.long  # a child process per case
@pytest.mark.parametrize("close", [False, True], ids=["exit-without-close", "closed-then-exit"])
def test_exit_waits_for_lancedb_threads_still_in_python(tmp_path: Path, close: bool) -> None:
    script = _WIDENED.format(db=str(tmp_path / "db"), close="store.close()" if close else "")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Fatal Python error" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]


def test_threads_python_started_are_not_foreign_and_others_are() -> None:
    # A thread started outside `threading` (as LanceDB's tokio workers, or execnet's under
    # pytest-xdist) is foreign even once it asks threading.current_thread() for a dummy.
    release = threading.Event()
    ours = threading.Thread(target=release.wait, name="ours")
    raw_ident: list[int] = []
    raw_running = threading.Event()

    def raw() -> None:
        raw_ident.append(_thread.get_ident())
        threading.current_thread()  # registers a _DummyThread: still foreign
        raw_running.set()
        release.wait()

    ours.start()
    _thread.start_new_thread(raw, ())
    try:
        assert raw_running.wait(10)
        foreign = _store_lifecycle._foreign_threads_in_python()
        assert ours.ident not in foreign and threading.get_ident() not in foreign
        assert raw_ident[0] in foreign
    finally:
        release.set()
        ours.join(10)


def test_the_exit_wait_is_bounded_when_a_foreign_thread_never_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_store_lifecycle, "_foreign_threads_in_python", lambda: [12345])
    started = time.monotonic()
    _store_lifecycle._let_foreign_threads_leave(0.2)
    assert 0.2 <= time.monotonic() - started < 2.0


@pytest.mark.heavy
@pytest.mark.long
def test_the_langchain_tutorial_snippet_exits_cleanly_under_cpu_load(tmp_path: Path) -> None:
    """The docs snippet that aborted in CI (langchain.md block 1), 8 runs, 4 at a time.

    The abort needed a starved CPU. The runs are each other's load (4 processes on 2 cores, beside
    the other test worker) instead of busy loops beside them, which burnt about 440 CPU-seconds of
    the long tier for nothing else. The widened race above is the deterministic proof; this is the
    pattern that failed, run as users run it.
    """
    pytest.importorskip("langchain_memory_retrievers")
    snippet = textwrap.dedent(
        """
        from langchain_memory_retrievers import RecallRetriever
        from memory_retrievers import HashEmbedder, MemoryStore

        store = MemoryStore("./memories", embedder=HashEmbedder(64))
        store.add("Bob's dog is called Max", namespace="bob")
        chain = RecallRetriever(store=store, namespace="bob") | (lambda docs: [d.page_content for d in docs])
        assert chain.invoke("dog") == ["Bob's dog is called Max"]
        """
    )
    folders = [tmp_path / f"run{run}" for run in range(8)]
    for folder in folders:
        folder.mkdir()
    for batch in (folders[:4], folders[4:]):
        runs = [
            subprocess.Popen([sys.executable, "-c", snippet], cwd=folder, stderr=subprocess.PIPE, text=True)
            for folder in batch
        ]
        try:
            ended = [(run.communicate(timeout=300)[1], run.returncode) for run in runs]
        finally:
            for run in runs:
                run.kill()
                run.wait()
        for folder, (stderr, code) in zip(batch, ended, strict=True):
            assert code == 0, f"{folder.name}: rc={code}\n{stderr[-3000:]}"
