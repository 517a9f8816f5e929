"""The real entry points (``python -m memory_retrievers`` and the console script) and the persistent worker."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_retrievers.cli import exits

from .conftest import PYTHON

# Processes and the real model: the long tier (python -m pytest -m long).
pytestmark = pytest.mark.long

Proc = Callable[..., subprocess.CompletedProcess[str]]
WORKER = {"MEMORY_RETRIEVERS_NO_WORKER": ""}


def test_importing_the_library_loads_no_cli_mcp_or_lancedb() -> None:
    code = (
        "import sys, memory_retrievers, memory_retrievers.cli;"
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'click', 'rich', 'mcp', 'lancedb', 'typer', 'torch'})))"
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_both_entry_points_store_and_recall(proc: Proc) -> None:
    version = proc("--version", script=True)
    assert version.returncode == 0 and version.stdout.startswith("memory-retrievers ")
    added = proc("add", "Alice prefers the dark theme", "-n", "alice", "--kind", "preference", script=True)
    assert added.returncode == 0 and added.stdout.startswith("added ")
    recalled = proc("recall", "which theme does alice like", "-n", "alice")
    assert recalled.returncode == 0
    assert recalled.stdout.startswith("Relevant memories (most relevant first):\n- [")
    assert recalled.stdout.rstrip().endswith("Alice prefers the dark theme")
    unknown = proc("recall", "x", "-n", "nobody", script=True)
    assert unknown.returncode == exits.NOT_FOUND and "'alice'" in unknown.stderr
    assert proc("nonsense").returncode == exits.USAGE


def _status(proc: Proc) -> dict[str, object]:
    done = proc("worker", "status", "--json", extra_env=WORKER)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_worker_starts_on_demand_answers_identically_and_stops(proc: Proc, runtime_dir: Path) -> None:
    assert proc("add", "Alice drinks green tea", "-n", "alice").returncode == 0  # creates the store (one-shot)
    assert _status(proc)["running"] is False
    local = proc("recall", "tea", "-n", "alice", "--no-record-access")
    first = proc("recall", "tea", "-n", "alice", "--no-record-access", extra_env=WORKER)
    status = _status(proc)
    assert status["running"] is True and status["served"] == 1
    second = proc("recall", "tea", "-n", "alice", "--no-record-access", extra_env=WORKER)
    assert local.stdout == first.stdout == second.stdout and "green tea" in second.stdout
    assert _status(proc)["served"] == 2
    piped = proc("add", "-", "-n", "alice", "--json", input="Alice walks to work\n", extra_env=WORKER)
    assert json.loads(piped.stdout)["text"] == "Alice walks to work"  # stdin read by the client, sent along
    failed = proc("show", "nope", "-n", "alice", extra_env=WORKER)
    assert failed.returncode == exits.NOT_FOUND and "not found" in failed.stderr  # exit codes pass through
    sockets = list(runtime_dir.glob("*.sock"))
    assert len(sockets) == 1
    assert stat.S_IMODE(runtime_dir.stat().st_mode) == 0o700 and stat.S_IMODE(sockets[0].stat().st_mode) == 0o600
    pid = int(status["pid"])  # type: ignore[call-overload]
    os.kill(pid, 9)  # a worker that died: the next command falls back and a new worker starts
    time.sleep(0.2)
    after = proc("list", "-n", "alice", "--json", extra_env=WORKER)
    assert after.returncode == 0 and json.loads(after.stdout)["total"] == 2
    assert _status(proc)["pid"] != pid
    assert proc("worker", "stop", extra_env=WORKER).stdout.startswith("stopped worker")
    assert _status(proc)["running"] is False


def test_an_idle_worker_exits_and_removes_its_socket(proc: Proc, runtime_dir: Path) -> None:
    assert proc("add", "x y z", "-n", "u").returncode == 0
    quick = {**WORKER, "MEMORY_RETRIEVERS_WORKER_IDLE": "1"}
    assert proc("list", "-n", "u", extra_env=quick).returncode == 0
    deadline = time.monotonic() + 30
    while list(runtime_dir.glob("*.sock")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not list(runtime_dir.glob("*.sock"))


def test_a_runtime_dir_others_can_enter_is_refused_and_commands_still_run(proc: Proc, tmp_path: Path) -> None:
    assert proc("add", "x y z", "-n", "u").returncode == 0
    shared = tmp_path / "shared-rt"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    done = proc("list", "-n", "u", "--json", extra_env={**WORKER, "MEMORY_RETRIEVERS_RUNTIME_DIR": str(shared)})
    assert done.returncode == 0 and json.loads(done.stdout)["total"] == 1
    assert not list(shared.iterdir())  # no socket where others could reach it


def test_item12_a_client_waiting_on_its_stdin_does_not_hold_the_worker(
    proc: Proc, env: dict[str, str], tmp_path: Path
) -> None:
    assert proc("add", "Alice drinks green tea", "-n", "alice", extra_env=WORKER).returncode == 0
    assert _status(proc)["running"] is True  # the first command on a new store started the worker
    waiting = subprocess.Popen(
        [PYTHON, "-m", "memory_retrievers", "add", "-", "-n", "alice"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, **WORKER},
        cwd=tmp_path,
    )
    try:
        time.sleep(1.0)  # it is waiting on its stdin
        began = time.monotonic()
        listed = proc("list", "-n", "alice", "--json", extra_env=WORKER)
        elapsed = time.monotonic() - began
        assert listed.returncode == 0 and json.loads(listed.stdout)["total"] == 1
        assert elapsed < 10, elapsed  # was: blocked until the other client's stdin closed
        out, err = waiting.communicate("Alice walks to work\n", timeout=120)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0 and out.startswith("added "), err
    assert json.loads(proc("list", "-n", "alice", "--json", extra_env=WORKER).stdout)["total"] == 2
    assert _status(proc)["served"] == 4  # all four went through the one worker


def _silent_worker(env: dict[str, str], tmp_path: Path, *, say_started: bool) -> tuple[socket.socket, threading.Event]:
    """A 'worker' on the store's socket that accepts requests and never finishes one."""
    from memory_retrievers.cli.settings import resolve
    from memory_retrievers.cli.workerproto import package_version, runtime_dir, socket_path

    settings = resolve(env, tmp_path)
    path = socket_path(runtime_dir(env), settings.store, settings.embedder, package_version())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    done = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            held.append(conn)
            if say_started:
                conn.sendall(b'{"started": true}\n')
        for conn in held:
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, done


@pytest.mark.parametrize("say_started", [False, True])
def test_item12_a_worker_that_does_not_answer_is_timed_out_and_reads_run_here(
    proc: Proc, env: dict[str, str], tmp_path: Path, say_started: bool
) -> None:
    assert proc("add", "Alice drinks green tea", "-n", "alice").returncode == 0  # one-shot: no worker
    listener, done = _silent_worker(env, tmp_path, say_started=say_started)
    quick = {**WORKER, "MEMORY_RETRIEVERS_WORKER_TIMEOUT": "2"}
    try:
        began = time.monotonic()
        listed = proc("list", "-n", "alice", "--json", extra_env=quick)
        assert listed.returncode == 0 and json.loads(listed.stdout)["total"] == 1
        assert time.monotonic() - began < 30
        added = proc("add", "Alice walks to work", "-n", "alice", extra_env=quick)
    finally:
        done.set()
        listener.close()
    total = json.loads(proc("list", "-n", "alice", "--json").stdout)["total"]
    if say_started:  # the worker may be storing it: the client says so and does not store it again
        assert added.returncode == exits.STORAGE and "may be stored" in added.stderr
        assert total == 1
    else:  # never started by the worker: run here, once
        assert added.returncode == 0 and added.stdout.startswith("added ")
        assert total == 2


def test_item4_purge_stops_the_worker_and_erases_the_forgotten_text(proc: Proc, env: dict[str, str]) -> None:
    assert proc("add", "Erin's quokkasecret is 12 Elm Street", "-n", "erin", extra_env=WORKER).returncode == 0
    assert proc("add", "Alice drinks green tea", "-n", "alice", extra_env=WORKER).returncode == 0
    assert _status(proc)["running"] is True
    assert proc("forget", "erin", "--yes", extra_env=WORKER).returncode == 0
    purged = proc("purge", "--yes", extra_env=WORKER)
    assert purged.returncode == 0, purged.stderr
    assert _status(proc)["running"] is False  # stopped first: it kept the table open
    store = Path(env["MEMORY_RETRIEVERS_STORE"])
    holding = [p for p in store.rglob("*") if p.is_file() and b"quokkasecret" in p.read_bytes()]
    assert holding == []
    assert proc("list", "-n", "alice", "--json", extra_env=WORKER).returncode == 0


@pytest.mark.heavy
@pytest.mark.integration
def test_end_to_end_with_the_real_model(proc: Proc) -> None:
    real = {"MEMORY_RETRIEVERS_EMBEDDER": "minilm"}
    assert proc("add", "Alice prefers the dark theme in every editor", "-n", "alice", extra_env=real).returncode == 0
    assert proc("add", "Alice's dog is called Rex", "-n", "alice", extra_env=real).returncode == 0
    done = proc("recall", "what colour scheme does she like?", "-n", "alice", "--k", "1", "--json", extra_env=real)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["memories"][0]["memory"]["text"] == "Alice prefers the dark theme in every editor"
    assert result["memories"][0]["explanation"]["semantic"] > 0.3  # a real sentence embedding, not the hash
