"""A test that leaves threads, child processes or sockets behind fails, naming what it left (issue 38).

A pytest plugin (the root ``conftest.py`` loads it). Checked when each test's teardown ends:

- **threads**: a thread started during the test and still alive after a bounded grace fails the
  test, unless it is one of the process-wide threads of the library or of a library it uses
  (:data:`PROCESS_WIDE_THREADS`, by name), or a fixture of wider scope started it (that fixture
  owns it until its own teardown);
- **child processes**: a child started during the test and still running after a bounded grace
  fails the test, and is killed (same ownership rule; :data:`PROCESS_WIDE_CHILDREN` are the
  process-wide helpers of ``multiprocessing`` and Ray, by command line);
- **sockets**: when the test ends holding more socket descriptors than it began with, a garbage
  collection runs there, so that a socket the test dropped unclosed raises its ``ResourceWarning``
  inside this test (an error under ``filterwarnings = error``) instead of in a later, innocent one;
- **detached processes**: at the end of each module, a process still running whose command line
  names this run's temporary folder (a worker a test started in its own session, which is no
  child of ours) fails the module's last test and is killed.

Why: leaks made the fast tier fail at random in unrelated tests (an unclosed socket surfacing in
another test's garbage collection; CLI workers left running for 15 minutes).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

#: Threads that live as long as the process by design, by name prefix: the library's own loops
#: and plug-in pools, and those of LanceDB, asyncio's default executor, tqdm, Ray and Playwright.
PROCESS_WIDE_THREADS = (
    "memory-retrievers-",
    "LanceDBBackgroundEventLoop",
    "asyncio_",
    "ThreadPoolExecutor-",
    "tqdm_monitor",
    "ray_",
    "Thread-Ray",
    "ray::",
    "_colab_",
    # AnyIO's worker pool (Starlette's sync endpoints, the inspector's server): its idle workers
    # exit on their own after 10 s, past the grace below.
    "AnyIO worker thread",
)
#: Processes that live as long as the process that started them, by a piece of their command line.
PROCESS_WIDE_CHILDREN = (
    "multiprocessing.forkserver",
    "multiprocessing.resource_tracker",
    "ray",
    "raylet",
    "gcs_server",
)
#: How long a test's leftovers get to finish on their own before they count as leaked.
GRACE_S = 3.0


def _children() -> set[int]:
    """This process's direct children (Linux: ``/proc/self/task/*/children``; elsewhere none)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/children") as f:
                found.update(int(pid) for pid in f.read().split())
    return found


def _stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` after the command name: state, parent, ... (empty when ``pid`` is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an exited child nobody waited for yet)."""
    return _stat(pid)[:1] not in ([], ["Z"])


def _parent(pid: int) -> int:
    """``pid``'s parent (0 when it is gone)."""
    fields = _stat(pid)
    return int(fields[1]) if len(fields) > 1 else 0


def _owned_by_a_fixture(pid: int) -> bool:
    """Whether ``pid`` is, or descends from, a child a fixture of wider scope started (a session's S3 server)."""
    seen = 0
    while pid > 1 and seen < 64:
        if pid in _owned.children:
            return True
        pid, seen = _parent(pid), seen + 1
    return False


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _sockets() -> int:
    count = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                    count += 1
    return count


def _process_wide(thread: threading.Thread) -> bool:
    # A _DummyThread stands for a thread `threading` did not start (LanceDB's tokio workers that
    # called into Python): it cannot be joined, and its owner, not a test, decides its life.
    return isinstance(thread, threading._DummyThread) or thread.name.startswith(PROCESS_WIDE_THREADS)


@dataclass
class _Snapshot:
    threads: set[threading.Thread]
    children: set[int]
    sockets: int

    @classmethod
    def take(cls) -> _Snapshot:
        return cls(set(threading.enumerate()), _children(), _sockets())


@dataclass
class _Owned:
    """What fixtures of wider scope started: theirs, not the test's."""

    threads: set[threading.Thread] = field(default_factory=set)
    children: set[int] = field(default_factory=set)


_owned = _Owned()
_reported_threads: set[threading.Thread] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Iterator[None]:
    """Whatever a fixture of wider scope starts while it is set up is that fixture's."""
    if fixturedef.scope == "function":
        yield
        return
    before = _Snapshot.take()
    yield
    after = _Snapshot.take()
    _owned.threads |= after.threads - before.threads
    _owned.children |= after.children - before.children


def _leaked_threads(before: _Snapshot) -> list[threading.Thread]:
    new = [
        t
        for t in threading.enumerate()
        if t not in before.threads and t not in _owned.threads and t not in _reported_threads and not _process_wide(t)
    ]
    deadline = time.monotonic() + GRACE_S
    for thread in new:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in new if t.is_alive()]


def _leaked_children(before: _Snapshot) -> list[int]:
    new = {pid for pid in _children() - before.children - _owned.children if _running(pid)}
    deadline = time.monotonic() + GRACE_S
    while new and time.monotonic() < deadline:
        time.sleep(0.05)
        new = {pid for pid in new if _running(pid)}
    return sorted(pid for pid in new if not any(name in _cmdline(pid) for name in PROCESS_WIDE_CHILDREN))


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def _no_leaks() -> Iterator[None]:
    """Set up before and finalised after every other fixture of the test: see the module docstring."""
    if not sys.platform.startswith("linux"):
        yield
        return
    before = _Snapshot.take()
    yield
    if _sockets() > before.sockets:
        gc.collect()  # a dropped, unclosed socket warns now, inside this test
    problems = []
    threads = _leaked_threads(before)
    if threads:
        _reported_threads.update(threads)  # reported once; a thread cannot be stopped from outside
        problems.append("threads still running: " + ", ".join(f"{t.name} (daemon={t.daemon})" for t in threads))
    children = _leaked_children(before)
    if children:
        problems.append("child processes still running: " + "; ".join(f"{p}: {_cmdline(p)[:200]}" for p in children))
        for pid in children:
            _kill(pid)
    if problems:
        pytest.fail("the test left " + " | ".join(problems), pytrace=False)


@pytest.fixture(autouse=True, scope="module")
def _no_detached_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A process started by this module's tests that outlives them, even detached from us, fails."""
    if not sys.platform.startswith("linux"):
        yield
        return
    yield
    base = str(tmp_path_factory.getbasetemp())
    me = os.getpid()
    deadline = time.monotonic() + GRACE_S
    while True:
        left = [
            pid
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
            if pid != me and base in _cmdline(pid) and _running(pid) and not _owned_by_a_fixture(pid)
        ]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if left:
        described = "; ".join(f"{pid}: {_cmdline(pid)[:200]}" for pid in left)
        for pid in left:
            _kill(pid)
        pytest.fail(f"processes outlived this module's tests (killed now): {described}", pytrace=False)
