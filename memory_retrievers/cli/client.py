"""The thin client: the console command's entry point.

It imports only the standard library (and platformdirs). For ``recall``, ``list``, ``show``,
``add`` and ``stats`` it asks the store's persistent worker to run the command line and prints what
the worker sends back; when there is no worker it starts one and waits for it; when that fails
(or the worker is gone, or the command is anything else) it runs the command in this process, the
one-shot fallback. ``--no-worker`` or ``MEMORY_RETRIEVERS_NO_WORKER=1`` skip the worker.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .workerproto import (
    PROTOCOL,
    WORKER_COMMANDS,
    WorkerUnavailableError,
    read_message,
    runtime_dir,
    socket_path,
    supported,
    write_message,
)

__all__ = ["main", "option_value", "worker_address"]

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


def worker_address(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[Path, str, str, float] | None:
    """(socket, store, embedder, idle seconds) of the worker for this command line, or ``None`` to run locally."""
    from .settings import SettingsError, resolve

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
    if "://" not in settings.store and not Path(settings.store, "memories.lance").is_dir():
        return None  # no store yet: the one-shot run says so (or, for add, creates it)
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = version("memory-retrievers")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        package = "0.0.0"
    return (
        socket_path(folder, settings.store, settings.embedder, package),
        settings.store,
        settings.embedder,
        settings.worker_idle_s,
    )


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _start(path: Path, store: str, embedder: str, idle: float) -> subprocess.Popen[bytes]:
    log = open(path.with_suffix(".log"), "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memory_retrievers.cli.worker",
                "--socket",
                str(path),
                "--store",
                store,
                "--embedder",
                embedder,
                "--idle",
                str(idle),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # outlives this client; Ctrl-C in the terminal does not reach it
            close_fds=True,
        )
    finally:
        log.close()


def _connect_or_start(path: Path, store: str, embedder: str, idle: float) -> socket.socket | None:
    sock = _connect(path)
    if sock is not None:
        return sock
    child = _start(path, store, embedder, idle)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        sock = _connect(path)
        if sock is not None:
            return sock
        if child.poll() is not None and child.returncode != 0:
            return None  # it failed (see the .log next to the socket): run the command here
        if child.poll() == 0:  # lost the lock race: another worker is starting; keep waiting for it
            continue
    return None


def _via_worker(argv: Sequence[str]) -> int | None:
    """Run through the worker; ``None`` when the command must run in this process instead."""
    env = dict(os.environ)
    address = worker_address(argv, env, Path.cwd())
    if address is None:
        return None
    path, store, embedder, idle = address
    sock = _connect_or_start(path, store, embedder, idle)
    if sock is None:
        return None
    width = shutil.get_terminal_size((0, 0)).columns if sys.stdout.isatty() else None
    request = {
        "v": PROTOCOL,
        "op": "run",
        "argv": list(argv),
        "cwd": str(Path.cwd()),
        "env": env,
        "stdout_tty": sys.stdout.isatty(),
        "stderr_tty": sys.stderr.isatty(),
        "stdin_tty": bool(sys.stdin and sys.stdin.isatty()),
        "width": width or None,
    }
    with sock:
        reader = sock.makefile("rb")
        try:
            write_message(sock, request)
            while True:
                reply = read_message(reader)
                if reply is None or "fallback" in reply:
                    return None  # the worker went away or serves another store: run here
                if reply.get("stdin"):
                    data = sys.stdin.read() if sys.stdin else ""
                    write_message(sock, {"data": data})
                    continue
                sys.stdout.write(str(reply.get("stdout", "")))
                sys.stdout.flush()
                sys.stderr.write(str(reply.get("stderr", "")))
                sys.stderr.flush()
                return int(reply.get("code", 1))
        except (OSError, ValueError):
            return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command line: through the worker when it helps, else in this process."""
    args = list(sys.argv[1:] if argv is None else argv)
    code = _via_worker(args)
    if code is not None:
        return code
    from .app import main_local

    return main_local(args)
