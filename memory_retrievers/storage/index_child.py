"""Building an index in a child Python process, so the store's own writes never queue behind it."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING

from memory_retrievers.storage.backend import IndexKind

if TYPE_CHECKING:
    from memory_retrievers.storage.table import MemoryTable

logger = logging.getLogger(__name__)

__all__ = ["ChildUnavailable", "build_in_child", "build_vector_index"]

#: The child's exit status when it cannot import LanceDB or this package (an embedded or frozen
#: interpreter, a ``sys.executable`` that is not the parent's Python).
_NO_IMPORT = 86


class ChildUnavailable(RuntimeError):
    """No child process could build the index here (none starts, or it cannot import the libraries)."""


# The vector index is built by a child process. Lance runs CPU-bound work (an index build's
# partitions, an append's encoding) on one shared pool of max(1, cores - 2) threads, first come
# first served (lance-core utils/tokio.rs): on a 2-core machine one thread, so a write queued behind
# a running HNSW build waited for all of it. Measured here (20k rows, 384 dimensions, load ~17):
# a one-memory add took 93.9 s instead of ~50 ms. A child process has its own pool, and the OS
# shares the cores between the two processes, so writes keep their pace.
#: Printed by the child once its index is committed: an exit status alone can lie (an application
#: that ignores SIGCHLD reads 255; a frozen application run as ``sys.executable`` exits 0 unbuilt).
_BUILT = "memory-retrievers: index built"

# ``-c`` puts the working directory first on sys.path: dropped before any other import, or a
# json.py lying there would run in the child. The spec is one line on stdin, which then stays
# open: end of file means the parent is gone, and the child stops instead of building on alone.
_BUILD_SCRIPT = """
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
import asyncio, json, os, threading
spec = json.loads(sys.stdin.readline())
sys.path[:0] = spec["path"]  # the parent's imports, also those it added at run time
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(1)), daemon=True).start()
try:
    import lancedb
    from memory_retrievers.storage.backend import index_config
except ImportError as exc:
    print(exc, file=sys.stderr)
    sys.exit(spec["no_import"])

async def main():
    db = await lancedb.connect_async(spec["uri"], storage_options=spec["storage_options"])
    table = await db.open_table(spec["table"])
    await table.create_index(spec["column"], config=index_config(spec["kind"], spec["column"]), replace=True)

asyncio.run(main())
print(spec["built"], flush=True)
"""


async def build_in_child(
    uri: str, table: str, storage_options: dict[str, str] | None, column: str, kind: IndexKind
) -> None:
    """Build index ``kind`` on ``column`` of a table in a child Python process, and wait for it.

    The spec goes through stdin, never the command line: storage options can hold credentials.
    The child ends when this process does (its stdin closes), so no build outlives the store's owner.

    Raises:
        ChildUnavailable: No child could run here (the caller builds in-process instead).
        RuntimeError: The child failed; the message carries the end of its stderr (a LanceDB
            "retryable commit conflict" included, which :func:`retry_conflicts` retries).
    """
    if not sys.executable or getattr(sys, "frozen", False):
        # A frozen application's executable is the application, not a Python to run a script with.
        raise ChildUnavailable("this interpreter has no Python executable to start a child process with")
    spec = {
        "uri": uri,
        "table": table,
        "storage_options": storage_options,
        "column": column,
        "kind": kind,
        "path": [p for p in sys.path if p],
        "no_import": _NO_IMPORT,
        "built": _BUILT,
    }
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _BUILD_SCRIPT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise ChildUnavailable(f"a child process could not be started ({exc})") from exc
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        try:
            child.stdin.write(json.dumps(spec).encode() + b"\n")
            await child.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # it exited without reading the spec: its status and output below say why
        out, err, _ = await asyncio.gather(child.stdout.read(), child.stderr.read(), child.wait())
    except BaseException:  # cancelled (the store closes): never leave the child building unseen
        if child.returncode is None:
            child.kill()
            await child.wait()
        raise
    finally:
        child.stdin.close()
    tail = err.decode(errors="replace").strip()[-2000:]
    if _BUILT in out.decode(errors="replace"):
        return
    if child.returncode == _NO_IMPORT:
        raise ChildUnavailable(f"the child process could not import LanceDB or memory_retrievers: {tail}")
    if child.returncode == 0:  # exited cleanly without building: not a Python that ran our script
        raise ChildUnavailable(f"{sys.executable} did not run the index build")
    raise RuntimeError(f"the process building the {column} index exited with {child.returncode}: {tail}")


async def build_vector_index(table: MemoryTable, *, in_child: bool) -> None:
    """Build ``table``'s ANN index: in a child process when ``in_child`` and one can reopen the table.

    A caller's connection or a Cloud table cannot be reopened by URI in a child (Cloud builds
    server-side); an interpreter that cannot start a usable child builds in-process, with a warning.
    """
    try:
        if in_child and table._caller is None and table._cloud is None:
            await build_in_child(table.reopen_uri, table.table_name, table._storage_options, "vector", "HnswSq")
            await table.refresh()  # to the version the child committed
            if any(key.endswith(":vector") for key in await table.refresh_indexes()):
                return
            raise ChildUnavailable("the child process reported an index this process does not see")
    except ChildUnavailable as exc:  # a frozen or embedded interpreter: slower writes beat no index
        logger.warning("building the vector index in this process: %s", exc)
    await table.backend.create_index("vector", "HnswSq")
