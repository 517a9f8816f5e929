"""``memory-retrievers ui`` starts the inspector: prints the URL (token included), serves, refuses unsafe binds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from testing.paths import ROOT


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "memory_retrievers", *args]


def _wait_for_url(proc: subprocess.Popen[str], timeout_s: float = 60.0) -> str:
    deadline = time.monotonic() + timeout_s
    assert proc.stderr is not None
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        found = re.search(r"memory inspector on .*: (http://\S+)", line)
        if found:
            return found.group(1)
    raise AssertionError(f"no URL printed; stderr: {''.join(seen)}")


def test_the_command_serves_the_inspector_on_a_free_port(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)) as store:
        store.add("Alice's dog is called Rex", namespace="alice")
    env = {**os.environ, "MEMORY_RETRIEVERS_NO_WORKER": "1"}
    args = _cli("ui", "--port", "0", "--store", str(tmp_path / "db"), "--embedder", "hash:32", "--token", "s3cret")
    proc = subprocess.Popen([*args, "--json"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        url = _wait_for_url(proc)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/?token=s3cret")
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline()) == {"url": url, "store": str(tmp_path / "db"), "read_only": False}
        base = url.split("?")[0]
        with urllib.request.urlopen(urllib.request.Request(base, headers={"Authorization": "Bearer s3cret"})) as r:
            page = r.read().decode()
        assert r.status == 200 and 'data-namespace="alice"' in page
        try:
            urllib.request.urlopen(base)
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as exc:
            exc.close()
            assert exc.code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for stream in (proc.stderr, proc.stdout):
            assert stream is not None
            stream.close()


@pytest.mark.long  # a server process
def test_the_command_serves_a_sharded_store(tmp_path: Path) -> None:
    """Issue 40 item 6: ``ui --store shards://a,b`` exited 7 (opened as one table) where ``list`` works."""
    from memory_retrievers import ShardedMemoryStore

    shards = [str(tmp_path / "a"), str(tmp_path / "b")]
    with ShardedMemoryStore(shards, embedder=HashEmbedder(32)) as store:
        store.add("Alice's dog is called Rex", namespace="alice")
        store.add("Dave likes jazz", namespace="dave")
    env = {**os.environ, "MEMORY_RETRIEVERS_NO_WORKER": "1"}
    args = _cli("ui", "--port", "0", "--store", "shards://" + ",".join(shards), "--embedder", "hash:32")
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        with urllib.request.urlopen(_wait_for_url(proc)) as r:
            page = r.read().decode()
        assert 'data-namespace="alice"' in page and 'data-namespace="dave"' in page  # one on each shard
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


def test_the_command_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    env = {**os.environ, "MEMORY_RETRIEVERS_NO_WORKER": "1"}
    args = _cli("ui", "--host", "0.0.0.0", "--store", str(tmp_path / "db"), "--embedder", "hash:32")
    run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 6, run.stderr
    assert "token" in run.stderr and "127.0.0.1" in run.stderr


def test_the_commands_in_the_cli_guide_parse() -> None:
    """docs/how-to/cli.md shows ``ui`` command lines in a text block (they serve until Ctrl-C): each must parse."""
    import shlex

    from memory_retrievers.cli.cmd_ui import ui

    guide = (ROOT / "docs" / "how-to" / "cli.md").read_text()
    section = guide.split("## Memory inspector\n", 1)[1].split("\n## ", 1)[0]
    lines = [line.split("#")[0] for line in section.splitlines() if line.startswith("memory-retrievers ui")]
    assert len(lines) == 3
    for line in lines:
        context = ui.make_context("ui", shlex.split(line)[2:])
        assert context.params["host"] and context.params["port"] >= 0
    options = {opt for param in ui.params for opt in getattr(param, "opts", [])}
    for option in re.findall(r"\| `(--[a-z-]+)", section):
        assert option in options, option


def test_the_command_says_when_there_is_no_store(tmp_path: Path) -> None:
    env = {**os.environ, "MEMORY_RETRIEVERS_NO_WORKER": "1"}
    run = subprocess.run(
        _cli("ui", "--store", str(tmp_path / "none"), "--embedder", "hash:32"),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 3 and "no store at" in run.stderr
    assert not (tmp_path / "none").exists()  # an inspector never creates a store
