"""The reshard lease on a table (issue 40 item 1): one run at a time, taken over only from a run that stopped."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from memory_retrievers import ReshardInProgressError, StorageError
from memory_retrievers.shards.lease import Holder, TableLease, lease_ttl, this_process
from memory_retrievers.storage.location import TableLocation
from memory_retrievers.testing import ManualClock

TTL = 60.0


class Clock:
    """Seconds since the epoch, moved by hand (the lease's clock)."""

    def __init__(self) -> None:
        self.now = ManualClock()().timestamp()

    def __call__(self) -> float:
        return self.now


def _lease(tmp_path: Path, clock: Clock, process: str | None = None) -> TableLease:
    return TableLease(
        TableLocation(str(tmp_path / "shard"), "memories"), ttl_s=TTL, timeout_s=30.0, clock=clock, process=process
    )


def _folders(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "shard").iterdir()) if (tmp_path / "shard").exists() else []


async def test_one_run_at_a_time_and_the_next_at_once_after_a_release(tmp_path: Path) -> None:
    clock = Clock()
    first, second = _lease(tmp_path, clock), _lease(tmp_path, clock)
    await first.acquire()
    with pytest.raises(ReshardInProgressError, match=r"another reshard\(\) holds the lease on table 'memories'") as got:
        await second.acquire()
    assert got.value.holder is not None and f"process {os.getpid()}" in got.value.holder
    await first.check(margin_s=TTL / 2)  # still the holder
    await first.release()
    await second.acquire()  # no wait: the lease was let go
    assert _folders(tmp_path) == ["memories-reshard-lease-000002.lance"]  # the older generation is dropped


async def test_of_runs_racing_for_a_lease_exactly_one_takes_it(tmp_path: Path) -> None:
    clock = Clock()
    leases = [_lease(tmp_path, clock) for _ in range(4)]
    outcomes = await asyncio.gather(*(lease.acquire() for lease in leases), return_exceptions=True)
    assert sum(o is None for o in outcomes) == 1, outcomes
    assert all(isinstance(o, ReshardInProgressError) for o in outcomes if o is not None), outcomes


async def test_a_lapsed_lease_is_taken_over_and_its_old_holder_stops(tmp_path: Path) -> None:
    clock = Clock()
    stalled, next_run = _lease(tmp_path, clock), _lease(tmp_path, clock)
    await stalled.acquire()
    clock.now += TTL - 1
    with pytest.raises(ReshardInProgressError):  # not lapsed yet
        await next_run.acquire()
    with pytest.raises(StorageError, match="could not renew its lease"):  # too little of it left for a change
        await stalled.check(margin_s=TTL / 2)
    clock.now += 2
    await next_run.acquire()
    with pytest.raises(StorageError):  # its generation was taken over (and dropped): it changes nothing more
        await stalled.renew()


async def test_a_renewed_lease_is_not_taken_over(tmp_path: Path) -> None:
    clock = Clock()
    holder, other = _lease(tmp_path, clock), _lease(tmp_path, clock)
    await holder.acquire()
    for _ in range(3):
        clock.now += TTL / 2
        await holder.renew()
    with pytest.raises(ReshardInProgressError):
        await other.acquire()
    await holder.check(margin_s=TTL / 2)


async def test_a_lease_of_a_process_of_this_machine_that_ended_is_taken_over_at_once(tmp_path: Path) -> None:
    clock = Clock()
    here = this_process()
    if not here:
        pytest.skip("no /proc here: a lease is taken over only once it lapsed")
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    ended = int(done.stdout)
    gone = Holder("t", 0, "h", f"{here}:123", ended, clock() + TTL, released=False)
    assert gone.gone(here)
    alive = await _held_by_this_process(tmp_path, clock)
    assert not alive.gone(here)
    assert not Holder("t", 0, "h", f"another-machine:{ended}", ended, clock() + TTL, released=False).gone(here)


async def _held_by_this_process(tmp_path: Path, clock: Clock) -> Holder:
    lease = _lease(tmp_path, clock)
    await lease.acquire()
    holder = await lease.holder(1)
    assert holder is not None
    return holder


async def test_a_generation_half_made_by_a_killed_run_does_not_block_the_lease(tmp_path: Path) -> None:
    # A creation cut short leaves the generation's folder (its data files) without a committed version.
    clock = Clock()
    half_made = tmp_path / "shard" / "memories-reshard-lease-000001.lance" / "data"
    half_made.mkdir(parents=True)
    (half_made / "0-leftover.lance").write_bytes(b"\0" * 64)
    lease = _lease(tmp_path, clock)
    await lease.acquire()
    assert await lease.holder(1) is not None  # generation 1, created over the leftover


def test_the_lease_outlasts_twice_the_longest_storage_deadline() -> None:
    assert lease_ttl([timedelta(seconds=120), timedelta(seconds=5)]) == 300.0  # the default deadline
    assert lease_ttl([timedelta(seconds=1)]) == 62.0  # never under a minute past twice the deadline
    assert lease_ttl([None, timedelta(seconds=5)]) == 3600.0  # a store that waits without limit
