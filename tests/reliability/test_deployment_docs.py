"""Every snippet of docs/how-to/deploy.md runs as pasted, in order, from one empty folder.

Python blocks run as script files (a block whose first line is ``# NAME.py: ...`` is saved as NAME.py
and its WSGI callable is called); the server commands run as real servers (on a free port instead
of 8000, the only change) and the curl block's requests are sent to them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from testing.paths import ROOT

DOC = ROOT / "docs" / "how-to" / "deploy.md"
BLOCK = re.compile(r"```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)
BIN = Path(sys.executable).parent
TIMEOUT_S = 600


def _blocks(lang: str) -> list[str]:
    return [m["body"] for m in BLOCK.finditer(DOC.read_text()) if m["lang"] == lang]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    return env | {"PATH": str(BIN) + os.pathsep + env.get("PATH", "")}


#: Stands in for LanceDB Cloud in the ``db://`` snippet's process (a ``sitecustomize`` module, so the
#: snippet runs as pasted): records what the store connects with, then opens a local database instead.
RECORDER = """
import json, os
import lancedb

_real = lancedb.connect_async

async def _recording(uri, **kwargs):
    seen = {k: v for k, v in kwargs.items() if k in ("api_key", "region", "host_override", "storage_options")}
    with open(os.environ["CLOUD_RECORD"], "a") as out:
        out.write(json.dumps({"uri": str(uri), **seen}) + "\\n")
    local = {k: v for k, v in kwargs.items() if k in ("read_consistency_interval", "session")}
    return await _real(os.environ["CLOUD_LOCAL"], **local)

lancedb.connect_async = _recording
"""


def _cloud_env(cwd: Path) -> dict[str, str]:
    site = cwd / "cloud_recorder"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(RECORDER)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    record, local = str(cwd / "cloud_calls.jsonl"), str(cwd / "cloud_local")
    return {"PYTHONPATH": path, "CLOUD_RECORD": record, "CLOUD_LOCAL": local, "LANCEDB_API_KEY": "ldb_test_key"}


def _python(code: str, cwd: Path, name: str) -> str:
    # A file, as a user would save it: multiprocessing's forkserver/spawn children import its functions from it.
    (cwd / name).write_text(code)
    env = _env() | (_cloud_env(cwd) if "db://" in code else {})
    done = subprocess.run([sys.executable, name], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{code}\n---\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.heavy
def test_the_python_snippets_run_as_pasted(tmp_path: Path) -> None:
    outputs = []
    for n, code in enumerate(_blocks("python")):
        first = code.splitlines()[0]
        if m := re.match(r"# (\w+)\.py:", first):
            (tmp_path / f"{m[1]}.py").write_text(code)
            call = (
                f"import {m[1]}\nseen = []\n"
                f"body = {m[1]}.application({{}}, lambda status, headers: seen.append(status))\n"
                "print(seen[0], b''.join(body).decode())"
            )
            outputs.append(_python(call, tmp_path, f"snippet_{n}.py"))
        else:
            outputs.append(_python(code, tmp_path, f"snippet_{n}.py"))
    single, app, pool, forked, cloud, duck, reembed = outputs
    assert "Alice prefers green tea" in single
    assert app.startswith("200 OK 1 memories")
    assert pool.strip() in ("[1, 2]", "[2, 1]", "[2, 2]")  # both notes stored, one count per worker
    assert "ForkedStoreError" not in forked and "forkserver" in forked and "--preload" in forked
    assert "db://my-database" in cloud and "ldb_test_key" not in cloud
    (call,) = [json.loads(line) for line in (tmp_path / "cloud_calls.jsonl").read_text().splitlines()]
    expected = {"uri": "db://my-database", "api_key": "ldb_test_key", "region": "us-east-1", "storage_options": None}
    assert call == expected
    assert "alice" in duck and "preference" in duck and "jobs" in duck
    assert "alice 1 re-embedded" in reembed and "jobs 2 re-embedded" in reembed


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("server", [0, 1], ids=["gunicorn", "uvicorn"])
def test_the_server_commands_serve_the_curl_requests(tmp_path: Path, server: int) -> None:
    commands = [b for b in _blocks("bash") if "memory_server" in b]
    (curl,) = [b for b in _blocks("bash") if b.startswith("curl")]
    port = _free_port()
    lines = commands[server].replace("8000", str(port)).replace("cd examples", f"cd {ROOT / 'examples'}").splitlines()
    script = " && ".join([*lines[:-1], "exec " + lines[-1]])  # exec: the server is the process we stop
    env = _env() | {"MEMORY_SERVER_STORE": str(tmp_path / "memories"), "MEMORY_SERVER_EMBEDDER": "hash"}
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["bash", "-c", script],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30).read()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
                time.sleep(0.2)
        replies = []
        for line in curl.replace("8000", str(port)).splitlines():
            done = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=120, check=True)
            replies.append(json.loads(done.stdout))
        assert replies[0]["action"] == "added"
        assert [m["text"] for m in replies[1]["memories"]] == ["Alice prefers tea"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
