"""The worker's address and wire format, shared by the thin client and the worker (standard library only).

Safety: the worker listens on a Unix socket, never on a network port, in a per-user runtime folder
that only its owner may enter (mode 0700, checked on every use), and (on Linux) checks that each
peer runs as the same user. There is one worker per (store, embedder, package version, Python):
the socket's name is a hash of them, and a lock file next to it lets only one worker serve it.

Messages are JSON objects, one per line.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "PROTOCOL",
    "WORKER_COMMANDS",
    "WorkerUnavailableError",
    "read_message",
    "runtime_dir",
    "socket_path",
    "supported",
    "write_message",
]

PROTOCOL = 1

#: Commands the client sends to a worker: the ones people run often, where a warm model and an open
#: table save seconds. Imports, exports and maintenance run in the caller's process.
WORKER_COMMANDS = frozenset({"recall", "list", "show", "add", "stats"})


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


def socket_path(folder: Path, store: str, embedder: str, version: str) -> Path:
    """The socket of the worker for this store and embedder."""
    key = "\0".join((store, embedder, version, sys.executable))
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
