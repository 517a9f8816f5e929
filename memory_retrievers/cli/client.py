"""The thin client: the console command's entry point.

It imports only the standard library (and platformdirs). For ``recall``, ``list``, ``show``,
``add`` and ``stats`` it asks the store's persistent worker to run the command line and prints what
the worker sends back; when there is no worker it starts one and waits for it (``add`` on a store
that does not exist yet starts it too: the worker creates the store). The command runs in this
process instead, the one-shot fallback, when the worker cannot be started, is gone, serves another
store, is busy (its request queue is full), or does not answer in time:

- it waits ``worker_timeout_seconds`` (``MEMORY_RETRIEVERS_WORKER_TIMEOUT``, 30 s by default) for a
  free slot in the worker; then it closes the connection (the worker then never runs the command)
  and runs the command itself;
- once the worker has started the command it waits as long again for the answer; a read
  (``recall``, ``list``, ``show``, ``stats``) then runs here instead, but an ``add`` does not (it
  may have been stored: running it again could store it twice): it exits with code 7 and says so.

A command that reads stdin (``add -``) reads it here before contacting the worker, so the worker
never waits on a client's input. ``--no-worker`` or ``MEMORY_RETRIEVERS_NO_WORKER=1`` skip the worker.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_retrievers.cli.workerproto import (
    PROTOCOL,
    WORKER_COMMANDS,
    WorkerUnavailableError,
    package_version,
    read_message,
    reads_stdin,
    runtime_dir,
    socket_path,
    supported,
    write_message,
)

__all__ = ["WorkerAddress", "main", "option_value", "worker_address"]

#: How long a client waits for a worker it started (model load included) before running the command itself.
STARTUP_TIMEOUT_S = 60.0


def option_value(argv: Sequence[str], name: str) -> str | None:
    """The value of ``--name VALUE`` / ``--name=VALUE`` in an argument list (before any ``--``)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def _has_flag(argv: Sequence[str], *names: str) -> bool:
    for arg in argv:
        if arg == "--":
            return False
        if arg in names:
            return True
    return False


@dataclass(frozen=True)
class WorkerAddress:
    """Where the worker of a command line listens, and how to start and wait for it."""

    path: Path
    store: str
    embedder: str
    idle_s: float
    timeout_s: float


def worker_address(argv: Sequence[str], env: dict[str, str], cwd: Path) -> WorkerAddress | None:
    """The worker for this command line, or ``None`` to run it in this process."""
    from memory_retrievers.cli.settings import SettingsError, resolve

    if not argv or argv[0] not in WORKER_COMMANDS or not supported():
        return None
    if _has_flag(argv, "--no-worker", "-h", "--help"):
        return None
    try:
        settings = resolve(env, cwd, store=option_value(argv, "--store"), embedder=option_value(argv, "--embedder"))
        if not settings.worker:
            return None
        folder = runtime_dir(env)
    except (SettingsError, WorkerUnavailableError):
        return None  # the local run reports a settings problem properly
    if argv[0] != "add" and "://" not in settings.store and not Path(settings.store, "memories.lance").is_dir():
        return None  # no store yet: the one-shot run says so at once (only add creates one, through the worker)
    return WorkerAddress(
        socket_path(folder, settings.store, settings.embedder, package_version(), settings.cloud),
        settings.store,
        settings.embedder,
        settings.worker_idle_s,
        settings.worker_timeout_s,
    )


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _start(address: WorkerAddress) -> subprocess.Popen[bytes]:
    log = open(address.path.with_suffix(".log"), "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memory_retrievers.cli.worker",
                "--socket",
                str(address.path),
                "--store",
                address.store,
                "--embedder",
                address.embedder,
                "--idle",
                str(address.idle_s),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # outlives this client; Ctrl-C in the terminal does not reach it
            close_fds=True,
        )
    finally:
        log.close()


def _connect_or_start(address: WorkerAddress) -> socket.socket | None:
    sock = _connect(address.path)
    if sock is not None:
        return sock
    child = _start(address)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        sock = _connect(address.path)
        if sock is not None:
            return sock
        if child.poll() is not None and child.returncode != 0:
            return None  # it failed (see the .log next to the socket): run the command here
        if child.poll() == 0 and _lock_free(address.path):
            # It lost the lock race to a worker that has exited since (e.g. one told to stop): start another.
            child = _start(address)
    return None


def _lock_free(path: Path) -> bool:
    """Whether no worker holds the lock of this socket (a worker holds it for its whole life)."""
    import fcntl

    try:
        with open(f"{path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the file is closed
    except OSError:
        return False
    return True


class _NoAnswer(Exception):
    """The worker started a command that may write, then did not answer in time."""


def _request(argv: Sequence[str], env: dict[str, str], stdin: str | None) -> dict[str, Any]:
    width = shutil.get_terminal_size((0, 0)).columns if sys.stdout.isatty() else None
    return {
        "v": PROTOCOL,
        "op": "run",
        "argv": list(argv),
        "cwd": str(Path.cwd()),
        "env": env,
        "stdout_tty": sys.stdout.isatty(),
        "stderr_tty": sys.stderr.isatty(),
        "stdin_tty": bool(sys.stdin and sys.stdin.isatty()),
        "width": width or None,
        "stdin": stdin,
    }


def _exchange(sock: socket.socket, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
    """Send a run request; the worker's final answer, or ``None`` to run the command here.

    Raises:
        _NoAnswer: An ``add`` was started by the worker and not answered within ``timeout_s``.
    """
    sock.settimeout(timeout_s)
    with sock.makefile("rb") as reader:  # closed with the socket: the worker then sees the client left
        write_message(sock, request)
        try:
            reply = read_message(reader)  # waiting for a free slot in the worker
        except TimeoutError:
            return None  # closing the connection tells the worker not to run it
        if reply is None or "fallback" in reply or not reply.get("started"):
            return None
        write_message(sock, {"go": True})
        try:
            return read_message(reader)
        except TimeoutError:
            if request["argv"][0] == "add":
                raise _NoAnswer from None
            return None  # a read: running it again here is harmless


def _via_worker(argv: Sequence[str]) -> int | None:
    """Run through the worker; ``None`` when the command must run in this process instead."""
    env = dict(os.environ)
    address = worker_address(argv, env, Path.cwd())
    if address is None:
        return None
    stdin = _read_stdin(argv)
    sock = _connect_or_start(address)
    if sock is None:
        _keep_stdin(stdin)
        return None
    with sock:
        try:
            reply = _exchange(sock, _request(argv, env, stdin), address.timeout_s)
        except _NoAnswer:
            sys.stderr.write(
                f"error: the worker started this add but did not answer within {address.timeout_s:.0f} s "
                "(worker_timeout_seconds); the memory may be stored: check with `memory-retrievers list`, "
                "or run the command again with --no-worker\n"
            )
            return 7  # exits.STORAGE (not imported: the client stays light)
        except (OSError, ValueError):
            reply = None
    if reply is None or "done" not in reply:
        _keep_stdin(stdin)
        return None
    sys.stdout.write(str(reply.get("stdout", "")))
    sys.stdout.flush()
    sys.stderr.write(str(reply.get("stderr", "")))
    sys.stderr.flush()
    return int(reply.get("code", 1))


def _read_stdin(argv: Sequence[str]) -> str | None:
    """The command's stdin, read before the worker is contacted (``None`` when it reads none)."""
    if not reads_stdin(list(argv)) or sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read()


def _keep_stdin(stdin: str | None) -> None:
    """Before running the command here: stdin already read for the worker is the command's stdin again."""
    if stdin is not None:
        import io

        sys.stdin = io.StringIO(stdin)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command line: through the worker when it helps, else in this process."""
    args = list(sys.argv[1:] if argv is None else argv)
    code = _via_worker(args)
    if code is not None:
        return code
    from memory_retrievers.cli.app import main_local

    return main_local(args)
