"""A real multi-worker server runs examples/memory_server.py: gunicorn (pre-forking) and uvicorn.

Each test starts the server itself on 127.0.0.1 with a free port, sends adds from several client
threads at once (so several workers serve them), and checks every acknowledged add is found, by a
request that may land on any worker, right after it was acknowledged. Timeouts are generous: a hung
worker fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from testing.paths import EXAMPLES

BIN = Path(sys.executable).parent
START_S = 240
REQUEST_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _call(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    with urllib.request.urlopen(request, timeout=REQUEST_S) as response:
        out: dict[str, Any] = json.loads(response.read())
    return out


class Server:
    def __init__(self, command: list[str], env: dict[str, str], log: Path, port: int) -> None:
        self.port = port
        self._log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                command, cwd=EXAMPLES, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited: {self.output()}")
            try:
                _call(self.port, "GET", "/health")
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"the server did not answer within {START_S} s: {self.output()}")

    def output(self) -> str:
        return self._log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _serve(kind: str, tmp_path: Path, **extra_env: str) -> Server:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env |= {"MEMORY_SERVER_STORE": str(tmp_path / "store"), "MEMORY_SERVER_EMBEDDER": "hash", **extra_env}
    if kind == "gunicorn":  # pre-forking: --preload imports the app in the parent, then forks the workers
        command = ["gunicorn", "--workers", "3", "--preload", "--bind", f"127.0.0.1:{port}", "--timeout", "300"]
        command.append("memory_server:app")
    else:  # uvicorn starts its workers with multiprocessing's spawn
        command = ["uvicorn", "--workers", "3", "--host", "127.0.0.1", "--port", str(port), "memory_server:asgi_app"]
    return Server([str(BIN / command[0]), *command[1:]], env, tmp_path / "server.log", port)


def _exercise(server: Server) -> None:
    """Adds from 6 client threads; after each acknowledgement, a list (any worker) must contain it."""
    server.wait_ready()

    def client(c: int) -> tuple[list[str], set[int], list[str]]:
        acked, pids, missing = [], set(), []
        for i in range(6):
            reply = _call(server.port, "POST", "/add", {"namespace": "alice", "text": f"client {c} note {i}"})
            assert reply.get("action") == "added", reply
            acked.append(reply["id"])
            pids.add(reply["pid"])
            seen = _call(server.port, "GET", "/list?namespace=alice")
            pids.add(seen["pid"])
            missing += [i for i in acked if i not in seen["ids"]]
        _call(server.port, "POST", "/add", {"namespace": f"other-{c}", "text": f"client {c} private"})
        return acked, pids, missing

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(client, range(6)))
    acked = [i for r in results for i in r[0]]
    pids = set().union(*(r[1] for r in results))
    missing = [i for r in results for i in r[2]]
    assert missing == []  # every acknowledged add was in the next list, whichever worker served it
    assert len(pids) >= 2, f"one worker served everything: {pids}"
    final = _call(server.port, "GET", "/list?namespace=alice")
    assert sorted(final["ids"]) == sorted(acked) and len(acked) == 36
    recall = _call(server.port, "GET", "/recall?" + urllib.parse.urlencode({"namespace": "alice", "q": "client 3"}))
    assert recall["memories"] and all(m["text"].startswith("client ") for m in recall["memories"])
    assert [m["id"] for m in recall["memories"]] == [m["id"] for m in recall["memories"] if m["id"] in acked]
    assert _call(server.port, "GET", "/list?namespace=other-2")["ids"] != []
    assert "Traceback" not in server.output(), server.output()


@pytest.mark.parametrize("kind", ["gunicorn", "uvicorn"])
def test_a_multi_worker_server_serves_adds_and_recalls(tmp_path: Path, kind: str) -> None:
    server = _serve(kind, tmp_path)
    try:
        _exercise(server)
    finally:
        server.stop()


@pytest.mark.heavy
def test_gunicorn_preload_with_the_store_opened_in_the_parent(tmp_path: Path) -> None:
    """The issue's pattern: the parent opened the store and wrote before forking its workers."""
    server = _serve("gunicorn", tmp_path, MEMORY_SERVER_OPEN_IN_PARENT="1")
    try:
        _exercise(server)
        assert len(_call(server.port, "GET", "/list?namespace=server-parent")["ids"]) == 1
        assert "separate engine process" in server.output()  # each worker told why, and how to avoid it
    finally:
        server.stop()
