"""Building an index in a child Python process, so the store's own writes never queue behind it."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING

from .backend import IndexKind

if TYPE_CHECKING:
    from .table import MemoryTable

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
_BUILD_SCRIPT = """
import asyncio, json, sys
spec = json.loads(sys.stdin.read())
sys.path[:0] = spec["path"]  # the parent's imports, also those it added at run time
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
"""


async def build_in_child(
    uri: str, table: str, storage_options: dict[str, str] | None, column: str, kind: IndexKind
) -> None:
    """Build index ``kind`` on ``column`` of a table in a child Python process, and wait for it.

    The spec goes through stdin, never the command line: storage options can hold credentials.

    Raises:
        ChildUnavailable: No child could run here (the caller builds in-process instead).
        RuntimeError: The child failed; the message carries the end of its stderr (a LanceDB
            "retryable commit conflict" included, which :func:`retry_conflicts` retries).
    """
    spec = {
        "uri": uri,
        "table": table,
        "storage_options": storage_options,
        "column": column,
        "kind": kind,
        "path": [p for p in sys.path if p],
        "no_import": _NO_IMPORT,
    }
    if not sys.executable:
        raise ChildUnavailable("this interpreter has no sys.executable to start a child process with")
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _BUILD_SCRIPT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise ChildUnavailable(f"a child process could not be started ({exc})") from exc
    try:
        _, err = await child.communicate(json.dumps(spec).encode())
    except BaseException:  # cancelled (the store closes): never leave the child building unseen
        if child.returncode is None:
            child.kill()
            await child.wait()
        raise
    tail = err.decode(errors="replace").strip()[-2000:]
    if child.returncode == _NO_IMPORT:
        raise ChildUnavailable(f"the child process could not import LanceDB or memory_retrievers: {tail}")
    if child.returncode != 0:
        raise RuntimeError(f"the process building the {column} index exited with {child.returncode}: {tail}")


async def build_vector_index(table: MemoryTable, *, in_child: bool) -> None:
    """Build ``table``'s ANN index: in a child process when ``in_child`` and one can reopen the table.

    A caller's connection or a Cloud table cannot be reopened by URI in a child (Cloud builds
    server-side); an interpreter that cannot start a usable child builds in-process, with a warning.
    """
    try:
        if in_child and table._caller is None and table._cloud is None:
            await build_in_child(table.uri, table.table_name, table._storage_options, "vector", "HnswSq")
            return await table.refresh()  # to the version the child committed (its index is listed next)
    except ChildUnavailable as exc:  # a frozen or embedded interpreter: slower writes beat no index
        logger.warning("building the vector index in this process: %s", exc)
    await table.backend.create_index("vector", "HnswSq")
