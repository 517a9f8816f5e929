"""The persistent local worker: keeps a store open and its model loaded, runs commands for clients.

Started on demand by the client (``python -m memory_retrievers.cli.worker``), it serves one store
with one embedder and exits after ``--idle`` seconds without a request (or on ``memory-retrievers
worker stop`` / SIGTERM), letting the commands it is running finish and writing pending access
statistics first. A request is a command line: the worker runs the very same Click commands as a
one-shot process, against an :class:`~.runtime.Invocation` that holds the client's environment,
directory, terminal facts and stdin (read by the client beforehand), and sends back the output and
exit code.

Requests are served concurrently, each on its own thread, at most :data:`MAX_RUNNING` at a time;
a slow command holds one slot, never the worker. The queue is bounded: with :data:`MAX_IN_HAND`
requests running or waiting for a slot, a new one is answered "busy" at once and its client runs
the command in its own process. ``ping`` and ``stop`` are answered at once, even when busy.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from memory_retrievers.cli.workerproto import PROTOCOL, peer_is_same_user, read_message, write_message

__all__ = ["MAX_IN_HAND", "MAX_RUNNING", "Worker", "main"]

#: Commands run at the same time (each on its own thread, sharing the open store and model).
MAX_RUNNING = 4
#: Requests running or waiting for a slot; beyond it a request is answered "busy" (the client runs it itself).
MAX_IN_HAND = 16
#: Connections open at once (including ones that have not sent their request yet); more are closed unanswered.
MAX_CONNECTIONS = 64
#: How long the worker waits for a client's request, and for its go-ahead once a slot is free.
CLIENT_TIMEOUT_S = 10.0
#: How long a stopping worker lets running commands finish before it closes the store anyway.
DRAIN_TIMEOUT_S = 60.0


class Worker:
    """Serves one store over a Unix socket until idle.

    Args:
        socket_path: Where to listen.
        store: The store location it serves.
        embedder: The embedder spec it serves.
        idle_s: Seconds without a request before it exits.
        max_running: Commands run at the same time.
        max_in_hand: Requests running or waiting before new ones are answered "busy".
    """

    def __init__(
        self,
        socket_path: Path,
        store: str,
        embedder: str,
        idle_s: float,
        *,
        max_running: int = MAX_RUNNING,
        max_in_hand: int = MAX_IN_HAND,
    ) -> None:
        from memory_retrievers.cli.runtime import StoreProvider

        self.socket_path = socket_path
        self.store = store
        self.embedder = embedder
        self.idle_s = idle_s
        self.stores = StoreProvider(keep_open=True, serves=(store, embedder))
        self.started = time.time()
        self.served = 0
        self.max_in_hand = max_in_hand
        self._slots = threading.BoundedSemaphore(max_running)
        self._lock = threading.Lock()
        self._in_hand = 0
        self._connections = 0
        self._last_request = time.monotonic()
        self._threads: set[threading.Thread] = set()
        self._stop = threading.Event()
        #: Set once :attr:`socket_path` accepts connections (it exists only from then on).
        self.listening = threading.Event()

    def warm_up(self) -> None:
        """Load what the first request would: the command tree, the store and the embedding model."""
        from memory_retrievers.cli import app  # noqa: F401  (imports every command module)
        from memory_retrievers.cli.runtime import make_embedder, store_exists

        if store_exists(self.store):
            from memory_retrievers.cli.settings import Settings

            settings = Settings(self.store, "worker", None, self.embedder, True, self.idle_s, Path("/"))
            self.stores.open(settings, create=False).embedder.embed_query("warm up")
        else:
            make_embedder(self.embedder).embed_query("warm up")

    def serve(self) -> None:
        """Listen until idle for ``idle_s`` or told to stop; then let running commands finish and close the store."""
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # a dead worker's: we hold the lock, so no live worker uses it
        listener = self._listen()
        try:
            while not self._stop.is_set() and not self._idle():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                self._dispatch(conn)
        finally:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            self._drain()
            self.stores.close()

    def _listen(self) -> socket.socket:
        """A listening socket, at :attr:`socket_path` only once it accepts connections.

        The path of a Unix socket exists from ``bind()``, before ``listen()``: a client that took
        "the path exists" for "the worker listens" was refused in that gap. So the socket is bound
        under a temporary name in the same folder, made private, put to listen, and only then
        renamed into place (atomic within one folder).
        """
        staging = self.socket_path.with_name(f".{self.socket_path.name}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            staging.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(staging))
            os.chmod(staging, 0o600)
            listener.listen(64)
            listener.settimeout(0.5)  # wake up to check for stop and idleness
            os.replace(staging, self.socket_path)
            with self._lock:
                # Idle from now, not from construction: warming up (imports, the store, the model)
                # can take longer than a short ``--idle``, and a worker idle before it listened
                # exited before its first request; its client started another, again and again,
                # for a minute, and then ran the command itself.
                self._last_request = time.monotonic()
        except BaseException:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                staging.unlink()
            raise
        self.listening.set()
        return listener

    def stop(self, *_: Any) -> None:
        """Stop accepting requests; running ones finish (SIGTERM handler too).

        The socket is removed at once, so from now on clients see no worker (and may start a new
        one, which waits for this one's lock).
        """
        self._stop.set()
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    def _idle(self) -> bool:
        with self._lock:
            return self._connections == 0 and time.monotonic() - self._last_request > self.idle_s

    def _dispatch(self, conn: socket.socket) -> None:
        with self._lock:
            if self._connections >= MAX_CONNECTIONS:
                conn.close()  # the client sees no answer and runs the command itself
                return
            self._connections += 1
            self._last_request = time.monotonic()
        thread = threading.Thread(target=self._serve_connection, args=(conn,), daemon=True)
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def _serve_connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(CLIENT_TIMEOUT_S)
                self._handle(conn)
        except (OSError, ValueError):
            pass  # the client went away or sent garbage: nothing to answer
        finally:
            with self._lock:
                self._connections -= 1
                self._last_request = time.monotonic()
                self._threads.discard(threading.current_thread())

    def _drain(self) -> None:
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while True:
            with self._lock:
                threads = list(self._threads)
            if not threads or time.monotonic() > deadline:
                return
            threads[0].join(max(0.0, deadline - time.monotonic()))

    def _handle(self, conn: socket.socket) -> None:
        if not peer_is_same_user(conn):
            return
        with conn.makefile("rb") as reader:
            self._answer(conn, reader)

    def _answer(self, conn: socket.socket, reader: BinaryIO) -> None:
        request = read_message(reader)
        if request is None:
            return
        if request.get("v") != PROTOCOL:
            write_message(conn, {"fallback": f"protocol {request.get('v')} is not {PROTOCOL}"})
            return
        op = request.get("op")
        if op == "ping":
            write_message(conn, self.status())
        elif op == "stop":
            self.stop()
            write_message(conn, {"stopping": True, "pid": os.getpid()})
        elif op == "run":
            self._queue_and_run(request, conn, reader)

    def _queue_and_run(self, request: dict[str, Any], conn: socket.socket, reader: BinaryIO) -> None:
        with self._lock:
            if self._in_hand >= self.max_in_hand:
                busy = True
            else:
                busy = False
                self._in_hand += 1
        if busy:
            write_message(conn, {"fallback": f"busy: {self.max_in_hand} requests in hand"})
            return
        try:
            with self._slots:
                write_message(conn, {"started": True})
                go = read_message(reader)
                if not go or not go.get("go"):
                    return  # the client gave up waiting and runs the command itself
                reply = self._run(request)
            conn.settimeout(None)
            write_message(conn, reply)
        finally:
            with self._lock:
                self._in_hand -= 1

    def status(self) -> dict[str, Any]:
        """What ``worker status`` shows."""
        with self._lock:
            in_hand = self._in_hand
        return {
            "pid": os.getpid(),
            "store": self.store,
            "embedder": self.embedder,
            "socket": str(self.socket_path),
            "uptime_s": round(time.time() - self.started, 1),
            "served": self.served,
            "in_hand": in_hand,
            "idle_exit_s": self.idle_s,
        }

    def _run(self, request: dict[str, Any]) -> dict[str, Any]:
        from memory_retrievers.cli.app import run
        from memory_retrievers.cli.runtime import Invocation, WrongStoreError

        out, err = io.StringIO(), io.StringIO()
        stdin = request.get("stdin")
        inv = Invocation(
            env=dict(request.get("env") or {}),
            cwd=Path(str(request.get("cwd") or "/")),
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin if isinstance(stdin, str) else ""),
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
        with self._lock:
            self.served += 1
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
    from memory_retrievers.cli.runtime import route_std_streams

    route_std_streams()  # commands run on several threads: each one's Click output goes to its own client
    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal that started it is not for us
    try:
        worker.warm_up()
    except Exception as exc:  # the client falls back to one-shot and reports the real error itself
        print(f"worker warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
