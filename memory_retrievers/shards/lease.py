"""A lease on a table, kept on the store itself: one :func:`~memory_retrievers.reshard` at a time.

Two reshard runs at once each took the other's complete copy of a namespace for a crash's
leftover and forgot it (issue 40 item 1). A run therefore holds a lease on every table it reads or
writes, across processes and hosts, in the storage those tables live in (no lock server).

How: the lease of table ``memories`` is a series of tiny LanceDB tables beside it,
``memories-reshard-lease-000001``, ``-000002``... (generations). Taking the lease is *creating*
the next generation with a row naming the run. Lance commits every version of a table with a
write that never replaces one already there (a conditional PUT, ``If-None-Match``, on object
storage; a create that refuses to replace locally), so the version 1 of a generation is exactly
one run's, on every storage the store runs on: that run holds it. (Creating a table is not
itself exclusive: of runs creating one at once, several may be told they did, the later ones'
creations being rebased into overwrites, versions 2 and up; measured, 33 of 40 four-way races on
a local folder. Version 1 is what decides.) The holder appends a row to its generation to renew it (every
``ttl / 6``) and one to release it. The newest generation is the lease: another run may take the
next one only once it is released, expired (``ttl`` without a renewal: its holder stopped), or
held by a process of this host that no longer exists (a killed run is taken over at once). A
holder that finds a newer generation, or could not renew in time, has lost the lease and stops
before its next change. Generations before the one taken are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from memory_retrievers.errors import ReshardInProgressError, StorageError
from memory_retrievers.storage.location import TableLocation
from memory_retrievers.storage.migrations import storage_error
from memory_retrievers.storage.opening import within

__all__ = ["Holder", "Leases", "TableLease", "lease_ttl", "this_process"]

logger = logging.getLogger(__name__)

#: Generations of a table's lease: ``<table>-reshard-lease-<generation>`` (zero-padded: names sort as numbers).
_INFIX = "-reshard-lease-"
_DIGITS = 6

_SCHEMA = pa.schema(
    [
        ("token", pa.string()),
        ("seq", pa.int64()),
        ("host", pa.string()),
        ("process", pa.string()),
        ("pid", pa.int64()),
        ("expires", pa.float64()),
        ("released", pa.bool_()),
    ]
)

#: The shortest lease: a holder renews every sixth of it, and keeps half of it ahead of every change.
MIN_TTL_S = 60.0


def lease_ttl(storage_timeouts: list[timedelta | None]) -> float:
    """How long the lease of a run lasts without renewal, in seconds, given its stores' ``storage_timeout``.

    A holder starts a change only with half its lease still ahead, and a change (one commit) ends
    within its store's ``storage_timeout``: with the lease at least twice the longest deadline plus
    a minute, a change started under the lease ends (or is abandoned) before another run can take
    it. 300 s with the default deadline (120 s); one hour when a store waits without limit.
    """
    if any(t is None for t in storage_timeouts):
        return 3600.0
    longest = max((t.total_seconds() for t in storage_timeouts if t is not None), default=0.0)
    return max(MIN_TTL_S, 2 * longest + 60.0)


def this_process() -> str:
    """What tells this process apart on this machine: the boot, the pid namespace and the process's start.

    Empty where that cannot be known (not Linux): then a lease of this host is only taken over once
    it expired. With it, a holder of this host whose process is gone (killed) is taken over at once;
    the pid namespace keeps two containers of one machine (one boot) apart, the start time a pid reused.
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        space = os.stat("/proc/self/ns/pid")
        return f"{boot}:{space.st_dev}:{space.st_ino}"
    except OSError:
        return ""


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22 of proc(5), counted after the command


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a lease, as its newest row says.

    Attributes:
        token: The run's own random token.
        seq: Rows the holder wrote (its newest).
        host: The holder's host name.
        process: :func:`this_process` of the holder, with its pid's start time (empty: unknown).
        pid: The holder's process id.
        expires: When the lease lapses without a renewal (seconds since the epoch).
        released: Whether the holder let it go.
    """

    token: str
    seq: int
    host: str
    process: str
    pid: int
    expires: float
    released: bool

    def describe(self) -> str:
        """The holder, for a message: process, host and expiry."""
        at = datetime.fromtimestamp(self.expires, tz=timezone.utc).isoformat(timespec="seconds")
        return f"process {self.pid} on host {self.host!r} (its lease lapses at {at} unless renewed)"

    def gone(self, here: str) -> bool:
        """Whether the holder is a process of this machine (``here``: :func:`this_process`) that has ended."""
        if not here or not self.process.startswith(here + ":"):
            return False
        return _started(self.pid) != self.process[len(here) + 1 :]


def _seq(row: dict[str, Any]) -> int:
    return int(row["seq"])


def _holder_row(holder: Holder) -> pa.Table:
    return pa.Table.from_pylist([holder.__dict__], schema=_SCHEMA)


class TableLease:
    """The reshard lease of one table (see the module docstring).

    Args:
        location: The table (its location, name and how to reach it).
        ttl_s: How long the lease holds without a renewal.
        timeout_s: Deadline of each LanceDB call (the store's ``storage_timeout``; ``None``: none).
        clock: Seconds since the epoch (tests pass another).
        process: :func:`this_process` (tests pass another, to play a run of another host).
    """

    def __init__(
        self,
        location: TableLocation,
        *,
        ttl_s: float,
        timeout_s: float | None,
        clock: Callable[[], float] = time.time,
        process: str | None = None,
    ) -> None:
        self._location = location
        self._prefix = f"{location.table_name}{_INFIX}"
        self._ttl = ttl_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._here = this_process() if process is None else process
        self._db: Any = None
        self._held: Holder | None = None
        self._generation = 0
        self._owners: dict[int, Holder] = {}  # each generation's version 1 (never changes)

    @property
    def where(self) -> str:
        """The table, for messages."""
        return f"table {self._location.table_name!r} at {self._location.uri!r}"

    @property
    def expires(self) -> float:
        """When the lease held lapses without a renewal (0 when not held)."""
        return self._held.expires if self._held is not None and not self._held.released else 0.0

    async def _call(self, awaitable: Any, action: str) -> Any:
        return await within(
            awaitable, self._timeout_s, f"{action} the reshard lease of {self.where}", self._location.uri
        )

    async def _connect(self) -> Any:
        if self._db is None:
            import lancedb

            cloud = self._location.cloud
            options = self._location.storage_options
            self._db = await self._call(
                lancedb.connect_async(
                    self._location.uri,
                    storage_options=dict(options) if options else None,
                    read_consistency_interval=timedelta(0),
                    **(cloud.connect_kwargs() if cloud is not None else {}),
                ),
                "reach",
            )
        return self._db

    def _name(self, generation: int) -> str:
        return f"{self._prefix}{generation:0{_DIGITS}d}"

    async def generations(self) -> list[int]:
        """The lease's generations listed, oldest first: committed ones, and ones being created (or left half made).

        A generation counts only once it opens (:meth:`holder`): its table is listed from its first
        file on, before the commit that makes it exist, and a creation cut short leaves it so.
        """
        db = await self._connect()
        names: list[str] = []
        token: str | None = None
        while True:
            page = await self._call(db.list_tables(page_token=token), "list")
            names += page.tables
            token = page.page_token
            if not token:
                break
        found = (n[len(self._prefix) :] for n in names if n.startswith(self._prefix))
        return sorted(int(g) for g in found if g.isdigit() and len(g) == _DIGITS)

    async def holder(self, generation: int) -> Holder | None:
        """Who holds generation ``generation``; None when it does not exist (not committed, or dropped).

        The holder is the run that wrote the generation's version 1 (see :meth:`acquire`); its state
        is its newest row (another run's overwrite of the table may have replaced the rows since,
        never version 1).

        Raises:
            StorageError: It exists but could not be read.
        """
        db = await self._connect()
        try:
            table = await self._call(db.open_table(self._name(generation)), "open")
        except StorageError:
            raise
        except ValueError:  # LanceDB: "not found", also for a table folder without a committed version
            return None
        except Exception as exc:
            raise storage_error(f"read the reshard lease of {self.where}", exc) from exc
        try:
            owner = self._owners.get(generation)
            if owner is None:
                await self._call(table.checkout(1), "read")
                owner = self._owners[generation] = Holder(**(await self._call(table.to_arrow(), "read")).to_pylist()[0])
                await self._call(table.checkout_latest(), "read")
            rows = (await self._call(table.to_arrow(), "read")).to_pylist()
        except StorageError:
            raise
        except Exception as exc:  # never read as "free": a holder must not go on, a contender not take it
            raise storage_error(f"read the reshard lease of {self.where}", exc) from exc
        return Holder(**max([r for r in rows if r["token"] == owner.token] or [owner.__dict__], key=_seq))

    async def _newest(self, generations: list[int]) -> tuple[int, Holder | None]:
        """The newest committed generation among ``generations`` and its holder (0 and None: none)."""
        for generation in reversed(generations):
            holder = await self.holder(generation)
            if holder is not None:
                return generation, holder
        return 0, None

    def _live(self, holder: Holder | None) -> bool:
        return (
            holder is not None
            and not holder.released
            and holder.expires > self._clock()
            and not holder.gone(self._here)
        )

    async def acquire(self) -> None:
        """Take the lease.

        Raises:
            ReshardInProgressError: Another run holds it (or took it at this very moment).
            StorageError: The storage could not be read or written.
        """
        generations = await self.generations()
        newest, holder = await self._newest(generations)
        if self._live(holder):
            raise self._refused(holder)
        mine = Holder(
            token=uuid.uuid4().hex,
            seq=0,
            host=socket.gethostname(),
            process=f"{self._here}:{_started(os.getpid())}" if self._here else "",
            pid=os.getpid(),
            expires=self._clock() + self._ttl,
            released=False,
        )
        db = await self._connect()
        try:
            await self._call(db.create_table(self._name(newest + 1), data=_holder_row(mine), mode="create"), "take")
            failed: Exception | None = None
        except StorageError:
            raise
        except Exception as exc:  # e.g. "already exists": created by another run first
            failed = exc
        # The one write that decides is version 1's: Lance commits each version with a write that never
        # replaces one already there. Of runs creating one generation at once, several may be told they
        # created it (a later one's creation is rebased into an overwrite, version 2...): version 1 is one's.
        taken = await self.holder(newest + 1)
        if taken is None:  # no generation was made: the storage refused the write
            raise storage_error(f"take the reshard lease of {self.where}", failed or RuntimeError("not created"))
        if taken.token != mine.token:
            raise self._refused(taken)
        self._held, self._generation = taken, newest + 1
        # A run that read an old list may have created a generation dropped long ago: not the newest.
        if await self._newer():
            await self._drop(self._generation)
            self._held = None
            raise self._refused(None)
        for old in generations:
            if old < self._generation:
                await self._drop(old)

    async def _newer(self) -> bool:
        """Whether a generation newer than the one held is committed (another run took the lease since)."""
        for generation in await self.generations():
            if generation > self._generation and await self.holder(generation) is not None:
                return True
        return False

    def _refused(self, holder: Holder | None) -> ReshardInProgressError:
        who = holder.describe() if holder is not None else "another run, which took it at the same moment"
        return ReshardInProgressError(
            f"another reshard() holds the lease on {self.where}: {who}. Nothing was changed; run again once it has "
            "finished (a run that crashed is taken over once its process is gone, or its lease lapsed)",
            holder=holder.describe() if holder is not None else None,
        )

    async def _drop(self, generation: int) -> None:
        """Drop an old generation (best effort: a leftover costs a few bytes and is dropped by the next run)."""
        with contextlib.suppress(Exception):
            await self._call((await self._connect()).drop_table(self._name(generation)), "drop an old generation of")

    async def _write(self, *, released: bool) -> None:
        assert self._held is not None
        held = self._held
        row = Holder(
            **{**held.__dict__, "seq": held.seq + 1, "released": released, "expires": self._clock() + self._ttl}
        )
        db = await self._connect()
        table = await self._call(db.open_table(self._name(self._generation)), "open")
        await self._call(table.add(_holder_row(row)), "renew" if not released else "release")
        self._held = row

    async def renew(self) -> None:
        """Push the expiry ``ttl`` ahead again, if the lease is still this run's.

        Raises:
            StorageError: The lease was lost (a newer generation exists) or could not be written.
        """
        await self.check(margin_s=0.0)
        await self._write(released=False)

    async def check(self, margin_s: float) -> None:
        """Make sure this run still holds the lease, with at least ``margin_s`` seconds of it ahead.

        Raises:
            StorageError: It lapsed, another run took it, or it could not be read.
        """
        if self._held is None or self._held.released:
            raise StorageError(f"reshard() does not hold the lease on {self.where}")
        ahead = self._held.expires - self._clock()
        if ahead < margin_s:
            raise StorageError(
                f"reshard() could not renew its lease on {self.where} in time ({ahead:.0f} s of it left, "
                f"{margin_s:.0f} needed before a change): it stopped before changing anything more. Check that the "
                "storage answers, then run it again (it resumes)"
            )
        if await self._newer():
            raise StorageError(
                f"reshard() lost its lease on {self.where} to another run (its process stalled past the lease?): it "
                "stopped before changing anything more. Let that run finish"
            )

    async def release(self) -> None:
        """Let the lease go, so that the next run may start at once (a failure is logged: it lapses anyway)."""
        if self._held is None or self._held.released:
            return
        try:
            await self._write(released=True)
        except Exception as exc:
            logger.warning(
                "memory-retrievers: releasing the reshard lease on %s failed (it lapses): %s", self.where, exc
            )


class Leases:
    """The leases of one reshard run, over every table it touches; renewed in the background while held.

    Args:
        leases: One per table, in the order they are taken (a fixed order for every run).
        ttl_s: Their time to live.
    """

    def __init__(self, leases: list[TableLease], ttl_s: float) -> None:
        self._leases = leases
        self._ttl = ttl_s
        self._renewing: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    async def __aenter__(self) -> Leases:
        taken: list[TableLease] = []
        try:
            for lease in self._leases:
                await lease.acquire()
                taken.append(lease)
        except BaseException:
            for lease in taken:
                await lease.release()
            raise
        self._renewing = asyncio.get_running_loop().create_task(self._renew())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
        for lease in self._leases:
            await lease.release()

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self._ttl / 6)
            try:
                for lease in self._leases:
                    await lease.renew()
            except Exception as exc:  # the run sees it at its next check and stops
                self._failure = exc
                logger.warning("memory-retrievers: renewing the reshard lease failed: %s", exc)

    async def check(self) -> None:
        """Before a change: every lease still held, with half its time ahead.

        Raises:
            StorageError: One was lost or lapsed; the run must stop.
        """
        for lease in self._leases:
            await lease.check(margin_s=self._ttl / 2)
