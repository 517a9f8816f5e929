"""The documented command (`memory-retrievers ui`, docs/how-to/inspector.md) serves pages a browser can use."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _steps import follow, memory_row_ids

from memory_retrievers import HashEmbedder, MemoryStore

pytestmark = pytest.mark.long


def first_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The process's first line of stdout, or a failure with its stderr once ``timeout_s`` has passed."""
    assert process.stdout is not None and process.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and process.poll() is None:
            if selector.select(timeout=0.2):
                return process.stdout.readline()
    process.kill()
    pytest.fail(f"memory-retrievers ui printed no URL: {process.stderr.read()[-3000:]}")


def test_the_ui_command_serves_a_store_to_the_browser(page: Any, tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(64))
    store.add("Alice prefers the dark theme", namespace="alice", kind="preference")
    store.close()
    command = [sys.executable, "-m", "memory_retrievers", "ui", "--store", str(tmp_path / "db")]
    command += ["--embedder", "hash:64", "--port", "0", "--read-only", "--json"]
    env = {**os.environ, "HOME": str(tmp_path)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            url = json.loads(first_line(process, 120))["url"]
            assert url.startswith("http://127.0.0.1:")  # loopback by default
            page.goto(url)
            follow(page, page.locator('tr[data-testid=namespace-row][data-namespace="alice"] a').first)
            assert len(memory_row_ids(page)) == 1
            assert page.locator("[data-testid=read-only]").count() == 1
        finally:
            process.send_signal(signal.SIGINT)  # Ctrl-C, as a person stops it
            _, stderr = process.communicate(timeout=60)
    assert process.returncode in (0, 130), stderr[-3000:]
