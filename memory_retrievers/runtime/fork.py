"""What a forked child inherits from its parent, and what the library does about it.

``os.fork()`` copies a process's memory but only the thread that called it. Measured on this
project's machine (LanceDB 0.40, torch 2.13, details in docs/how-to/deploy.md):

- **LanceDB**: once a process has opened a LanceDB connection, its Rust runtimes are not safe in a
  forked child, even for a new connection. Of 30 children that each opened their own store and
  wrote one memory, after the parent had opened a store and written: 12 SIGSEGV, 1 SIGABRT (heap
  corruption), 1 hang; after it had only opened one: 21 crashed. Plain LanceDB (no library code)
  does the same: 27 of 30 SIGSEGV, in a ``lance-cpu`` thread. A parent that only *imported* LanceDB
  is fine (30 of 30). LanceDB warns that its fork support is experimental.
- **torch** (the default embedder): GNU OpenMP's thread pool does not survive fork: a child whose
  parent had embedded anything hangs in its first multi-threaded torch call (10 of 10).

So the library remembers which process first started each of them. In a child of such a process:

- a store opened here talks to LanceDB through a private engine process started with
  ``exec`` (``storage.remote``), never through the inherited runtime;
- torch is limited to one intra-op thread, which cannot hang (GNU OpenMP only hangs when it
  starts a thread team).

Stores carried across the fork are refused by the store itself (:class:`ForkedStoreError`).
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["lancedb_inherited", "lancedb_started_in", "note_lancedb", "note_torch"]

logger = logging.getLogger("memory_retrievers")

_lancedb_pid: int | None = None
_torch_pid: int | None = None


def note_lancedb() -> None:
    """Record that this process is about to start LanceDB's runtime (its first connection)."""
    global _lancedb_pid
    if _lancedb_pid is None:
        _lancedb_pid = os.getpid()


def lancedb_started_in() -> int | None:
    """The pid of the process (this one or an ancestor) where this library started LanceDB."""
    return _lancedb_pid


def lancedb_inherited() -> bool:
    """Whether LanceDB's runtime was started by an ancestor this process was forked from.

    Only this library's own connections are known: a parent that used ``lancedb`` directly is not.
    """
    return _lancedb_pid is not None and _lancedb_pid != os.getpid()


def note_torch() -> None:
    """Record that this process ran torch inference (its OpenMP thread pool may exist now)."""
    global _torch_pid
    if _torch_pid is None:
        _torch_pid = os.getpid()


def _after_fork_in_child() -> None:
    # The forked child's torch would hang in its first parallel region: one thread cannot.
    if _torch_pid is not None and "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.set_num_threads(1)
        logger.warning(
            "memory-retrievers: this process was forked after torch ran in process %d; it uses one torch "
            "thread (GNU OpenMP hangs in forked children otherwise). Load the model after fork, or use the "
            "'forkserver'/'spawn' start method, to keep every thread (docs/how-to/deploy.md)",
            _torch_pid,
        )


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
