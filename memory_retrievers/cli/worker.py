"""The persistent local worker: keeps a store open and its model loaded, runs commands for the client.

Started on demand by the client (``python -m memory_retrievers.cli.worker``), it serves one store
with one embedder, one request at a time, and exits after ``--idle`` seconds without a request
(or on ``memory-retrievers worker stop`` / SIGTERM), writing pending access statistics first.
A request is a command line: the worker runs the very same Click commands as a one-shot process,
against an :class:`~.runtime.Invocation` that holds the client's environment, directory and
terminal facts, and sends back the output and exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any, TextIO, cast

from .workerproto import PROTOCOL, peer_is_same_user, read_message, write_message

__all__ = ["Worker", "main"]


class _RemoteStdin(io.TextIOBase):
    """stdin of the client, fetched over the connection only if a command reads it."""

    def __init__(self, sock: socket.socket, reader: Any) -> None:
        self._sock = sock
        self._reader = reader
        self._buffer: io.StringIO | None = None

    def _fetch(self) -> io.StringIO:
        if self._buffer is None:
            write_message(self._sock, {"stdin": True})
            reply = read_message(self._reader) or {}
            self._buffer = io.StringIO(str(reply.get("data") or ""))
        return self._buffer

    def read(self, size: int | None = -1) -> str:
        return self._fetch().read(-1 if size is None else size)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self._fetch().readline(-1 if size is None else size)

    def isatty(self) -> bool:
        return False


class Worker:
    """Serves one store over a Unix socket until idle.

    Args:
        socket_path: Where to listen.
        store: The store location it serves.
        embedder: The embedder spec it serves.
        idle_s: Seconds without a request before it exits.
    """

    def __init__(self, socket_path: Path, store: str, embedder: str, idle_s: float) -> None:
        from .runtime import StoreProvider

        self.socket_path = socket_path
        self.store = store
        self.embedder = embedder
        self.idle_s = idle_s
        self.stores = StoreProvider(keep_open=True, serves=(store, embedder))
        self.started = time.time()
        self.served = 0
        self._stop = False

    def warm_up(self) -> None:
        """Load what the first request would: the command tree, the store and the embedding model."""
        from . import app  # noqa: F401  (imports every command module)
        from .runtime import make_embedder, store_exists

        if store_exists(self.store):
            from .settings import Settings

            settings = Settings(self.store, "worker", None, self.embedder, True, self.idle_s, Path("/"))
            self.stores.open(settings, create=False).embedder.embed_query("warm up")
        else:
            make_embedder(self.embedder).embed_query("warm up")

    def serve(self) -> None:
        """Listen until idle for ``idle_s`` or told to stop; then close the store and remove the socket."""
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # a dead worker's: we hold the lock, so no live worker uses it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o600)
        listener.listen(8)
        listener.settimeout(self.idle_s)
        try:
            while not self._stop:
                try:
                    conn, _ = listener.accept()
                except TimeoutError:  # idle for idle_s: exit
                    break
                with conn:
                    conn.settimeout(None)
                    self._handle(conn)
        finally:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            self.stores.close()

    def stop(self, *_: Any) -> None:
        """Stop after the current request (SIGTERM handler too)."""
        self._stop = True
        raise SystemExit(0)

    def _handle(self, conn: socket.socket) -> None:
        if not peer_is_same_user(conn):
            return
        reader = conn.makefile("rb")
        try:
            request = read_message(reader)
        except ValueError:
            return
        if request is None:
            return
        if request.get("v") != PROTOCOL:
            write_message(conn, {"fallback": f"protocol {request.get('v')} is not {PROTOCOL}"})
            return
        op = request.get("op")
        if op == "ping":
            write_message(conn, self.status())
        elif op == "stop":
            write_message(conn, {"stopping": True, "pid": os.getpid()})
            self._stop = True
        elif op == "run":
            write_message(conn, self._run(request, conn, reader))
            self.served += 1

    def status(self) -> dict[str, Any]:
        """What ``worker status`` shows."""
        return {
            "pid": os.getpid(),
            "store": self.store,
            "embedder": self.embedder,
            "socket": str(self.socket_path),
            "uptime_s": round(time.time() - self.started, 1),
            "served": self.served,
            "idle_exit_s": self.idle_s,
        }

    def _run(self, request: dict[str, Any], conn: socket.socket, reader: Any) -> dict[str, Any]:
        from .app import run
        from .runtime import Invocation, WrongStoreError

        out, err = io.StringIO(), io.StringIO()
        inv = Invocation(
            env=dict(request.get("env") or {}),
            cwd=Path(str(request.get("cwd") or "/")),
            stdout=out,
            stderr=err,
            stdin=cast(TextIO, _RemoteStdin(conn, reader)),
            stdout_tty=bool(request.get("stdout_tty")),
            stderr_tty=bool(request.get("stderr_tty")),
            stdin_tty=bool(request.get("stdin_tty")),
            width=request.get("width"),
            stores=self.stores,
            in_worker=True,
        )
        try:
            code = run([str(a) for a in request.get("argv") or []], inv)
        except WrongStoreError as exc:
            return {"fallback": str(exc)}
        return {"done": True, "stdout": out.getvalue(), "stderr": err.getvalue(), "code": code}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the worker process."""
    import fcntl

    parser = argparse.ArgumentParser(prog="memory-retrievers-worker")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--store", required=True)
    parser.add_argument("--embedder", required=True)
    parser.add_argument("--idle", type=float, default=900.0)
    args = parser.parse_args(argv)
    lock = open(f"{args.socket}.lock", "w")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another worker serves this store: the client connects to it
    worker = Worker(args.socket, args.store, args.embedder, args.idle)
    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal that started it is not for us
    try:
        worker.warm_up()
    except Exception as exc:  # the client falls back to one-shot and reports the real error itself
        print(f"worker warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    with contextlib.suppress(SystemExit):  # stop() raises it to leave accept() at once
        worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
