"""The worker's address and wire format, shared by the thin client and the worker (standard library only).

Safety: the worker listens on a Unix socket, never on a network port, in a per-user runtime folder
that only its owner may enter (mode 0700, checked on every use), and (on Linux) checks that each
peer runs as the same user. There is one worker per (store, embedder, package version, Python):
the socket's name is a hash of them, and a lock file next to it lets only one worker serve it.

Messages are JSON objects, one per line. A ``run`` request carries the command line, the client's
environment and terminal facts, and the client's stdin when the command reads it (read by the
client *before* it connects, so no request ever waits on a client's input). The worker answers:

- ``{"fallback": reason}`` (busy, another protocol or store): the client runs the command itself;
- ``{"started": true}`` when a slot is free; the client answers ``{"go": true}``, or has given up
  waiting and closed the connection, in which case the worker does not run the command (so a
  command is run once, by the worker or by the client, never by both);
- ``{"done": true, "stdout", "stderr", "code"}``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "PROTOCOL",
    "WORKER_COMMANDS",
    "WorkerUnavailableError",
    "ask_to_stop",
    "no_worker_meanwhile",
    "package_version",
    "read_message",
    "reads_stdin",
    "runtime_dir",
    "socket_path",
    "supported",
    "write_message",
]

PROTOCOL = 2

#: Commands the client sends to a worker: the ones people run often, where a warm model and an open
#: table save seconds. Imports, exports and maintenance run in the caller's process.
WORKER_COMMANDS = frozenset({"recall", "list", "show", "add", "stats"})


#: Options of ``add`` that take no value (a test pins them to the Click command): every other option
#: takes one, so the client can tell ``add -n x TEXT`` (no stdin) from ``add -n x`` (stdin).
ADD_FLAGS = frozenset({"--pinned", "--no-dedup", "--no-worker", "--json", "-h", "--help"})


def reads_stdin(argv: list[str]) -> bool:
    """Whether this command line reads its input from stdin (``add`` with TEXT ``-`` or omitted)."""
    if not argv or argv[0] != "add":
        return False
    args = iter(argv[1:])
    for arg in args:
        if arg == "--":
            return next(args, "-") == "-"
        if arg.startswith("-") and arg != "-":
            attached = "=" in arg or (arg[1] != "-" and len(arg) > 2)  # --opt=value, -nalice
            if arg not in ADD_FLAGS and not attached:
                next(args, None)  # the option's value
            continue
        return arg == "-"
    return True


class WorkerUnavailableError(Exception):
    """No safe place for a worker's socket (the command then runs in the caller's process)."""


def supported() -> bool:
    """Whether this platform has Unix sockets and per-user ids (not Windows)."""
    return hasattr(socket, "AF_UNIX") and hasattr(os, "getuid")


def runtime_dir(env: Mapping[str, str]) -> Path:
    """The per-user folder for sockets, locks and logs, created 0700 and checked.

    ``MEMORY_RETRIEVERS_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/memory-retrievers``, else
    ``<tmp>/memory-retrievers-<uid>``.

    Raises:
        WorkerUnavailableError: It cannot be created, or another user owns it, or others may enter it.
    """
    given = env.get("MEMORY_RETRIEVERS_RUNTIME_DIR")
    if given:
        folder = Path(given)
    elif env.get("XDG_RUNTIME_DIR"):
        folder = Path(env["XDG_RUNTIME_DIR"]) / "memory-retrievers"
    else:
        folder = Path(tempfile.gettempdir()) / f"memory-retrievers-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError as exc:
        raise WorkerUnavailableError(f"cannot create {folder}: {exc}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise WorkerUnavailableError(f"{folder} must be a folder owned by this user with mode 0700")
    return folder


def package_version() -> str:
    """The installed package's version (part of the socket's name: an upgrade gets a new worker)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory-retrievers")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0.0.0"


def socket_path(folder: Path, store: str, embedder: str, version: str, cloud: Mapping[str, str] | None = None) -> Path:
    """The socket of the worker for this store and embedder (and, for ``db://``, these Cloud settings).

    A ``db://`` database name is per LanceDB account: a worker opened with one API key must never
    serve a command run with another (or none), so the settings are part of the worker's identity
    (only through this digest: the name shows no key).
    """
    parts = (store, embedder, version, sys.executable)
    key = "\0".join(parts + tuple(f"{name}={value}" for name, value in sorted((cloud or {}).items())))
    return folder / f"w-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:24]}.sock"


def write_message(sock: socket.socket, message: Mapping[str, Any]) -> None:
    """Send one message."""
    sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")


def read_message(reader: BinaryIO) -> dict[str, Any] | None:
    """Read one message; ``None`` when the peer closed the connection."""
    line = reader.readline()
    if not line:
        return None
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("a worker message must be a JSON object")
    return value


def peer_is_same_user(sock: socket.socket) -> bool:
    """On Linux, whether the connected peer runs as this user (elsewhere the 0700 folder guards)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    import struct

    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def lock_path(socket_file: Path) -> Path:
    """The lock a worker holds for its whole life (only one worker per socket)."""
    return Path(f"{socket_file}.lock")


@contextlib.contextmanager
def no_worker_meanwhile(socket_file: Path, *, timeout_s: float = 60.0) -> Iterator[None]:
    """Stop the worker of ``socket_file`` if one runs, and keep any other from starting until the block ends.

    Takes the worker's own lock: a running worker is asked to stop (again every half second, in
    case it is still warming up and not yet listening) until it exits and releases the lock; a
    worker a client starts meanwhile finds the lock taken and exits at once (the client then runs
    its command in its own process).

    Raises:
        WorkerUnavailableError: The worker did not stop within ``timeout_s``.
    """
    import fcntl

    lock = open(lock_path(socket_file), "a")  # noqa: SIM115 - closed in finally, which releases the lock
    try:
        deadline = time.monotonic() + timeout_s
        asked = 0.0
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                pass
            now = time.monotonic()
            if now > deadline:
                raise WorkerUnavailableError(
                    f"the worker listening on {socket_file} did not stop within {timeout_s:.0f} s"
                )
            if now - asked >= 0.5:
                ask_to_stop(socket_file)
                asked = now
            time.sleep(0.05)
        yield
    finally:
        lock.close()


def ask_to_stop(socket_file: Path) -> None:
    """Ask the worker listening on ``socket_file`` to stop and wait for its answer (none there: nothing)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5.0)
    with sock, contextlib.suppress(OSError, ValueError):
        sock.connect(str(socket_file))
        write_message(sock, {"v": PROTOCOL, "op": "stop"})
        with sock.makefile("rb") as reader:  # closed with the socket: an open reader keeps the socket open
            read_message(reader)
