"""Temporary files a killed writer left in a local table folder, removed once surely stale."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from memory_retrievers.storage.table import MemoryTable, is_uri

__all__ = ["aremove_stale_temp_files", "remove_stale_temp_files"]


def remove_stale_temp_files(table: MemoryTable, min_age_s: float = 3600.0) -> int:
    """Delete temporary files that a killed writer left in a local table folder.

    A write in progress has its temporary files for well under a second, so only files older
    than ``min_age_s`` are removed: a concurrent writer's in-flight files are never touched.
    Object stores need no cleanup here (their uploads are atomic).
    """
    if is_uri(table.uri):
        return 0
    folder = Path(table.uri) / f"{table.table_name}.lance"
    cutoff = time.time() - min_age_s
    removed = 0
    for path in folder.rglob("*"):
        name = path.name
        if not (name.startswith(".tmp") or name.endswith(".tmp") or name.startswith("_tmp")):
            continue
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError:  # raced with its owner or already gone: not ours to fail on
            continue
    return removed


async def aremove_stale_temp_files(table: MemoryTable, min_age_s: float = 3600.0) -> int:
    """:func:`remove_stale_temp_files` on a worker thread; inline once the interpreter exits.

    A store still open at exit is closed then, after executors stopped taking work, and its close
    may optimize (to write access statistics). The refusal reads "after interpreter shutdown" from
    an executor that never ran a thread, and "after shutdown" from one whose threads already took
    the exit signal (an earlier optimize used it): both mean "run it here".
    """
    try:
        return await asyncio.to_thread(remove_stale_temp_files, table, min_age_s)
    except RuntimeError as exc:
        if "cannot schedule new futures" not in str(exc):
            raise
        return remove_stale_temp_files(table, min_age_s)
