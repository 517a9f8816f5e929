"""The plug-in pools: a call that never returns costs one thread, never the pool."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memory_retrievers.runtime.plugins import PluginPool, PluginStalledError


async def test_a_hung_call_is_written_off_and_its_thread_replaced() -> None:
    pool = PluginPool("test", size=1, max_written_off=2)
    release = threading.Event()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pool.run(release.wait), 0.2)
    assert pool.written_off == 1
    assert await asyncio.wait_for(pool.run(lambda: 42), 5) == 42  # the one worker was replaced
    release.set()
    for _ in range(100):  # the hung call returns: its place is freed
        if pool.written_off == 0:
            break
        await asyncio.sleep(0.02)
    assert pool.written_off == 0


async def test_past_the_limit_new_calls_are_refused_at_once_not_queued() -> None:
    pool = PluginPool("test", size=1, max_written_off=2)
    release = threading.Event()
    for _ in range(2):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(pool.run(release.wait), 0.2)
    with pytest.raises(PluginStalledError, match="2 test plug-in calls never returned"):
        await pool.run(lambda: 1)
    release.set()
    for _ in range(100):
        if pool.written_off < 2:
            break
        await asyncio.sleep(0.02)
    assert await asyncio.wait_for(pool.run(lambda: 7), 5) == 7


async def test_a_call_given_up_before_it_started_never_runs() -> None:
    pool = PluginPool("test", size=1, max_written_off=4)
    release, ran = threading.Event(), []
    busy = asyncio.ensure_future(pool.run(release.wait))
    await asyncio.sleep(0.05)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pool.run(lambda: ran.append(1)), 0.1)  # queued behind the busy one
    release.set()
    await busy
    assert await pool.run(lambda: 3) == 3
    assert ran == [] and pool.written_off == 0


async def test_errors_reach_the_caller_as_they_are() -> None:
    pool = PluginPool("test", size=1, max_written_off=1)

    def boom() -> None:
        raise ValueError("plug-in said no")

    with pytest.raises(ValueError, match="plug-in said no"):
        await pool.run(boom)
