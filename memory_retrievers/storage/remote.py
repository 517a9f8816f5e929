"""A LanceDB table served by a private engine process: how a forked child uses LanceDB safely.

A child forked from a process that had opened LanceDB cannot use LanceDB itself (its runtimes
crash or hang there, see ``memory_retrievers.runtime.fork``). Such a child gets a :class:`RemoteTable`
instead: it stands in for LanceDB's ``AsyncTable`` by recording each call chain
(``table.query().where(...).select(...).to_arrow()``) and running it, when awaited, on the real
table in an engine process (``storage.engine``). The engine is a new interpreter started with
``exec`` (so nothing of the parent's LanceDB state reaches it), talks over a socket pair, and exits
when this process closes the socket or dies.

Only picklable values cross: Arrow tables, numpy arrays, LanceDB's option dataclasses; results
that are not picklable come back as :class:`Portable` copies of their public attributes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Generator, Mapping
from concurrent.futures import Future, InvalidStateError
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

import pyarrow as pa

import memory_retrievers.runtime.fork as _fork
from memory_retrievers.errors import StorageError
from memory_retrievers.storage.connect import CacheSizes, CloudAccess

__all__ = ["EngineClient", "Portable", "RemoteTable", "Step", "warn_engine"]

logger = logging.getLogger("memory_retrievers")

#: One link of a call chain: ``("attr", name)`` or ``("call", args, kwargs)``.
Step = tuple[Any, ...]

#: How long the engine may take to start and open the table (a cold interpreter imports LanceDB).
_START_TIMEOUT_S = 120.0


class Portable:
    """A copy of a LanceDB result object that could not be pickled: its public attributes."""

    def __init__(self, type_name: str, attributes: Mapping[str, Any]) -> None:
        self.type_name = type_name
        self.__dict__.update(attributes)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k != "type_name")
        return f"Portable[{self.type_name}]({fields})"


class EngineClient:
    """One engine process and the requests in flight to it.

    Requests may come from any thread or event loop; replies are matched by request id on a
    reader thread.
    """

    def __init__(self) -> None:
        mine, theirs = socket.socketpair()
        env = dict(os.environ)
        # The engine must import this very package, wherever it was imported from here.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "memory_retrievers.storage.engine", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._socket = mine  # kept for shutdown(): closing a descriptor does not wake a blocked reader
        self._conn = Connection(os.dup(mine.fileno()))
        self._send_lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._read, name="memory-retrievers-engine-reader", daemon=True).start()

    @property
    def pid(self) -> int:
        """The engine process's pid."""
        return self._process.pid

    def _read(self) -> None:
        while True:
            try:
                request_id, ok, value = self._conn.recv()
            except (EOFError, OSError):
                break
            with self._lock:
                future = self._waiting.pop(request_id, None)
            if future is None:
                continue
            with contextlib.suppress(InvalidStateError):  # its caller gave up (cancelled) meanwhile
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(_rebuild_error(value))
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, {}
        code = self._process.poll()
        for future in waiting.values():
            with contextlib.suppress(InvalidStateError):
                future.set_exception(
                    StorageError(f"the LanceDB engine process {self.pid} exited (code {code}) before it replied")
                )

    async def request(self, kind: str, *payload: Any) -> Any:
        """Send one request and await its reply (the engine's exception is raised here)."""
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise StorageError("the LanceDB engine process has exited; open a new MemoryStore")
            request_id = next(self._ids)
            self._waiting[request_id] = future
        try:
            with self._send_lock:
                self._conn.send((request_id, kind, payload))
        except (OSError, ValueError) as exc:
            with self._lock:
                self._waiting.pop(request_id, None)
            raise StorageError(f"the LanceDB engine process is gone ({exc}); open a new MemoryStore") from exc
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Stop the engine (it exits when its socket closes) and reap it."""
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)  # the engine reads EOF; our reader thread wakes
        self._socket.close()
        self._conn.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - an engine stuck in LanceDB
            self._process.kill()
            self._process.wait()


class _Chain:
    """A recorded call chain on the remote table; awaiting it runs it there."""

    def __init__(self, client: EngineClient, steps: tuple[Step, ...]) -> None:
        self._client = client
        self._steps = steps

    def __getattr__(self, name: str) -> _Chain:
        if name.startswith("_"):  # our own attributes (and copy/pickle probes) are never LanceDB's
            raise AttributeError(name)
        return _Chain(self._client, (*self._steps, ("attr", name)))

    def __call__(self, *args: Any, **kwargs: Any) -> _Chain:
        return _Chain(self._client, (*self._steps, ("call", args, kwargs)))

    def __await__(self) -> Generator[Any, None, Any]:
        return self._client.request("chain", self._steps).__await__()


class RemoteTable(_Chain):
    """Stands in for a LanceDB ``AsyncTable`` whose real twin lives in an engine process."""

    @classmethod
    async def open(
        cls,
        uri: str,
        table_name: str,
        schema: pa.Schema,
        storage_options: Mapping[str, str] | None,
        read_consistency_interval: timedelta | None,
        caches: CacheSizes | None = None,
        cloud: CloudAccess | None = None,
    ) -> RemoteTable:
        """Start an engine and open (or create) the table there, with :func:`~.connect.open_lancedb_table`."""
        client = EngineClient()
        table = cls(client, ())
        try:
            await asyncio.wait_for(
                client.request(
                    "open",
                    uri,
                    table_name,
                    schema,
                    dict(storage_options or {}) or None,
                    read_consistency_interval,
                    caches,
                    cloud,  # over the private socket pair only: the engine must connect as this process would
                ),
                _START_TIMEOUT_S,
            )
        except BaseException:
            client.close()
            raise
        logger.info("memory-retrievers: %s is served by the LanceDB engine process %d", uri, client.pid)
        return table

    def close(self) -> None:
        """Stop the engine process."""
        self._client.close()


def _rebuild_error(value: Any) -> BaseException:
    """The engine's exception: itself when it could be pickled, else the nearest built-in with its message."""
    if isinstance(value, BaseException):
        return value
    base_name, type_name, message = value
    base = {"ValueError": ValueError, "OSError": OSError, "KeyError": KeyError}.get(base_name, RuntimeError)
    return base(f"{message} ({type_name} in the LanceDB engine process)")


def warn_engine(uri: str) -> None:
    """Say once per store that a forked child runs LanceDB in an engine process, and how to avoid it."""
    logger.warning(
        "memory-retrievers: this process was forked from process %s after it had opened LanceDB, whose runtime "
        "is unsafe in a forked child; the store at %r uses a separate engine process instead. Open stores only "
        "after fork (or use the 'forkserver'/'spawn' start method) to avoid the extra process (docs/how-to/deploy.md)",
        _fork.lancedb_started_in(),
        uri,
    )
