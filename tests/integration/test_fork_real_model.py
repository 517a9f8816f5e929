"""The issue's case with the default model: the parent embeds, then forks a worker that embeds too.

GNU OpenMP (torch's thread pool) hangs in a forked child whose parent ran a multi-threaded torch
call: 10 children of 10 hung before the fix. The child now runs torch with one thread.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import MemoryStore, SentenceTransformerEmbedder

JOIN_S = 300


def _worker(path: str, out: Any) -> None:
    try:
        import torch

        store = MemoryStore(path)  # the default embedder, as a new user would
        store.add("Bob's favourite food is ramen", namespace="bob")
        hits = store.vector_search("what does Bob like to eat?", namespace="bob", k=1)
        out.put({"hits": len(hits), "threads": torch.get_num_threads()})
        store.close()
    except BaseException as exc:
        out.put({"error": repr(exc)})


def test_a_forked_worker_embeds_after_the_parent_did(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(2)  # a thread team in the parent is what a forked child used to hang on
    try:
        minilm.embed_documents(["the parent embeds a few texts", "with more than one thread"] * 16)
    finally:
        torch.set_num_threads(previous)
    path = str(tmp_path / "db")
    parent = MemoryStore(path, embedder=minilm)
    parent.add("Alice prefers the dark theme", namespace="alice")
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    proc = ctx.Process(target=_worker, args=(path, out))
    proc.start()
    proc.join(JOIN_S)
    if proc.is_alive():
        proc.kill()
        proc.join()
        pytest.fail(f"the forked worker hung for {JOIN_S} s")
    result = out.get(timeout=10)
    assert result == {"hits": 1, "threads": 1}
    assert parent.count(namespace="bob") == 1  # the parent sees the worker's write at once
    parent.close()
