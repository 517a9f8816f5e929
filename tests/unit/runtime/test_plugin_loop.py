"""Issue 27 item 14: an ``async def`` plug-in that blocks stalls only itself, never every store.

Before the fix such a plug-in ran on the library's one loop thread: ``llm_timeout_s=0.5`` never
fired (a blocked loop runs no timers) and an ``add()`` to another namespace waited 11.5 s.
Async plug-ins now run on a loop of their own; the library's loop times them out and goes on.
"""

from __future__ import annotations

import contextvars
import threading
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, LLMFallbackWarning, MemoryRetriever, MemoryStore
from memory_retrievers.runtime.plugin_loop import isolated

BLOCK_S = 3.0


class BlockingAsyncLLM:
    """A badly written async client: a blocking call inside ``async def``."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def complete(self, prompt: str) -> str:
        self.release.wait(BLOCK_S)
        return "never used"

    async def acomplete(self, prompt: str) -> str:
        self.release.wait(BLOCK_S)  # blocks whatever loop runs it
        return "kettle\ngarden"


def test_item14_a_blocking_async_llm_times_out_and_other_writes_go_on(store: MemoryStore) -> None:
    store.add_many([{"text": "the kettle is in the garden shed"}, {"text": "Bob drinks tea"}], namespace="u")
    llm = BlockingAsyncLLM()
    retriever = MemoryRetriever(
        store, namespace="u", config={"record_access": False, "query_expansion": {"llm_timeout_s": 0.5}}, llm=llm
    )
    result: dict[str, float] = {}

    def recall() -> None:
        started = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMFallbackWarning)
            got = retriever.recall("where is the kettle?")
        result["recall_s"] = time.monotonic() - started
        result["found"] = float(any("kettle" in m.text for m in got.memories))

    worker = threading.Thread(target=recall)
    worker.start()
    time.sleep(0.2)  # the LLM call is blocking by now
    started = time.monotonic()
    store.add("Carol likes jazz", namespace="other")
    add_s = time.monotonic() - started
    worker.join(BLOCK_S + 5)
    llm.release.set()
    assert add_s < BLOCK_S / 2, f"an add to another namespace waited {add_s:.1f} s behind a blocked plug-in"
    assert result["recall_s"] < BLOCK_S - 0.5, f"llm_timeout_s=0.5 did not fire: recall took {result['recall_s']:.1f} s"
    assert result["found"] == 1.0  # recall went on without the LLM


class BlockingAsyncEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.block = threading.Event()

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.block.is_set():
            time.sleep(BLOCK_S)
        return self.embed_documents(list(texts))


def test_item14_a_blocking_async_embedder_in_one_store_does_not_stall_another(tmp_path) -> None:  # type: ignore[no-untyped-def]
    slow_embedder = BlockingAsyncEmbedder()
    slow = MemoryStore(tmp_path / "slow", embedder=slow_embedder)
    fast = MemoryStore(tmp_path / "fast", embedder=HashEmbedder(32))
    try:
        slow_embedder.block.set()
        worker = threading.Thread(target=lambda: slow.add("a slow write", namespace="u"))
        worker.start()
        time.sleep(0.2)
        started = time.monotonic()
        fast.add("a write to another store", namespace="u")
        waited = time.monotonic() - started
        worker.join(BLOCK_S + 5)
        assert waited < BLOCK_S / 2, f"another store's add waited {waited:.1f} s"
        assert [m.text for m in slow.list("u")] == ["a slow write"]  # the slow write itself still lands
    finally:
        slow.close()
        fast.close()


async def test_isolated_runs_on_another_loop_keeps_context_and_cancels() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    cancelled = threading.Event()

    async def read() -> tuple[str, str]:
        return var.get(), threading.current_thread().name

    value, thread = await isolated(read)
    assert value == "caller" and thread == "memory-retrievers-plugins"

    async def forever() -> None:
        import asyncio

        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    import asyncio

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(isolated(forever), timeout=0.1)
    assert cancelled.wait(2), "the plug-in's task was not cancelled with its caller"
