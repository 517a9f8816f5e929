"""Queued writes with the default model: embedded on the library's threads, committed at exit.

The hash embedder needs no threads; the real model runs on the library's embedding pool. A program
that queues chat turns and ends without ``close()`` must still find every turn after a restart,
with vectors that recall them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_retrievers import MemoryStore

SCRIPT = textwrap.dedent(
    """
    import sys
    from datetime import timedelta
    from memory_retrievers import MemoryStore

    store = MemoryStore(sys.argv[1], config={"write_linger": timedelta(seconds=2)})
    for text in ["Bob's favourite food is ramen", "Bob plays the cello", "Bob lives in Osaka"]:
        store.add_later(text, namespace="bob", kind="fact")
    """
)


@pytest.mark.integration
def test_queued_writes_of_the_real_model_commit_at_interpreter_exit(tmp_path: Path) -> None:
    script = tmp_path / "chat.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "db")], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "failed" not in done.stderr, done.stderr[-3000:]
    store = MemoryStore(tmp_path / "db")
    try:
        assert store.count("bob") == 3
        (hit,) = store.vector_search("what does Bob like to eat?", namespace="bob", k=1)
        assert store.get(hit.id, namespace="bob").text == "Bob's favourite food is ramen"
    finally:
        store.close()
