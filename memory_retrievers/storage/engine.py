"""The LanceDB engine process: the real table behind a :class:`~.remote.RemoteTable`.

Started by :class:`~.remote.EngineClient` as ``python -m memory_retrievers.storage.engine FD``, a
fresh interpreter (never a fork), so LanceDB starts clean here. It serves one table: requests
come over the socket ``FD`` and run concurrently on one event loop; the process exits when the
socket closes (its client closed the store or died).

Requests are ``(id, kind, payload)``; replies ``(id, ok, value)``:

- ``open``: connect and open the table with :func:`~.connect.open_lancedb_table`;
- ``chain``: replay a call chain on the table, awaiting each awaitable step.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from memory_retrievers.storage.connect import open_lancedb_table

__all__ = ["main", "portable", "replay"]


async def replay(root: Any, steps: tuple[tuple[Any, ...], ...]) -> Any:
    """Apply recorded steps (attribute reads and calls) to ``root``, awaiting what they return."""
    value = root
    for step in steps:
        if step[0] == "attr":
            value = getattr(value, step[1])
        else:
            value = value(*step[1], **step[2])
            if inspect.isawaitable(value):
                value = await value
    return value


def portable(value: Any) -> Any:
    """``value`` if it pickles, else a :class:`~.remote.Portable` copy of its public data."""
    from memory_retrievers.storage.remote import Portable

    try:
        pickle.dumps(value)
        return value
    except Exception:
        pass
    if isinstance(value, (list, tuple)):
        return type(value)(portable(v) for v in value)
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    attributes = {}
    for name in dir(value):
        if name.startswith("_"):
            continue
        try:
            attr = getattr(value, name)
        except Exception:
            continue
        if not callable(attr):
            attributes[name] = portable(attr)
    return Portable(type(value).__name__, attributes)


def _error(exc: BaseException) -> Any:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        base = next((t.__name__ for t in type(exc).__mro__ if t.__module__ == "builtins"), "RuntimeError")
        return (base, type(exc).__name__, str(exc))


class _Engine:
    def __init__(self, conn: Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._conn = conn
        self._loop = loop
        self._table: Any = None
        self._send_lock = threading.Lock()

    async def handle(self, request_id: int, kind: str, payload: tuple[Any, ...]) -> None:
        try:
            if kind == "open":
                self._table = await open_lancedb_table(*payload)
                result: Any = None
            elif kind == "chain":
                if self._table is None:
                    raise RuntimeError("the engine has no open table")
                result = portable(await replay(self._table, payload[0]))
            else:
                raise ValueError(f"unknown engine request {kind!r}")
            reply = (request_id, True, result)
        except Exception as exc:
            reply = (request_id, False, _error(exc))
        with self._send_lock:
            self._conn.send(reply)

    def read(self) -> None:
        """Hand each request to the loop; stop the loop when the client goes away."""
        while True:
            try:
                request_id, kind, payload = self._conn.recv()
            except (EOFError, OSError):
                break
            asyncio.run_coroutine_threadsafe(self.handle(request_id, kind, payload), self._loop)
        self._loop.call_soon_threadsafe(self._loop.stop)


def main(argv: list[str] | None = None) -> None:
    """Serve the table until the client closes the socket."""
    fd = int((argv if argv is not None else sys.argv[1:])[0])
    loop = asyncio.new_event_loop()
    engine = _Engine(Connection(fd), loop)
    threading.Thread(target=engine.read, name="engine-reader", daemon=True).start()
    loop.run_forever()


if __name__ == "__main__":
    main()
