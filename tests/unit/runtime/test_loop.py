"""The sync API over the private event loop: a Ctrl-C in a sync call stops the work it started."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


@pytest.mark.long  # a child process
def test_ctrl_c_during_a_sync_write_stops_the_write(tmp_path: Path) -> None:
    # The interrupt is sent once the write is inside its embedding call (a timer sent it at 0.3 s,
    # which a loaded machine sometimes delivered after the write had finished), and the embedder
    # would take 30 s: the write must stop at once and leave nothing behind.
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal, threading, time
        from memory_retrievers import HashEmbedder, MemoryStore

        # A user's Python turns Ctrl-C into KeyboardInterrupt. A test run started in the background
        # by a non-interactive shell (`.ci/run &`, as CI harnesses do) hands SIGINT down ignored,
        # and Python then installs no handler: put the user's back.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        started = threading.Event()

        class Slow(HashEmbedder):
            async def aembed_documents(self, texts):
                started.set()
                await asyncio.sleep(30)
                return self.embed_documents(texts)

        def ctrl_c():
            started.wait(60)
            os.kill(os.getpid(), signal.SIGINT)

        store = MemoryStore({str(tmp_path / "db")!r}, embedder=Slow(32))
        threading.Thread(target=ctrl_c, daemon=True).start()
        began = time.monotonic()
        try:
            store.add("a write the user interrupted", namespace="u")
        except KeyboardInterrupt:
            print("interrupted")
        store.flush()
        print(store.count("u"), time.monotonic() - began < 20)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["interrupted", "0", "True"]
