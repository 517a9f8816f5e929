"""LangGraph's TTL API over the core's per-memory ``expires_at``: config checks and the sweeper.

LangGraph's stores come sync (``SqliteStore``, ``PostgresStore``: ``store.start_ttl_sweeper()``
returns a ``concurrent.futures.Future``, ``stop_ttl_sweeper()`` a bool, ``sweep_ttl()`` an int) or
async (``AsyncSqliteStore``, ``AsyncPostgresStore``: each is awaited). One ``MemoryStoreLangGraph``
serves both spellings: what these methods return is the sync value, and awaiting it gives the async
one (:class:`SweeperTask`, :class:`Awaitable`).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

from memory_retrievers import ConfigError, InvalidInputError

__all__ = [
    "DEFAULT_SWEEP_INTERVAL_MINUTES",
    "TTL_KEY",
    "Awaitable",
    "Sweeper",
    "SweeperTask",
    "check_ttl",
    "check_ttl_config",
    "expires_at",
]

#: Metadata key holding an item's TTL in minutes, so a read can refresh it.
TTL_KEY = "langgraph_ttl_minutes"

#: The sweeper's interval when neither ``start_ttl_sweeper`` nor the ttl config gives one (LangGraph's
#: Postgres store uses the same default).
DEFAULT_SWEEP_INTERVAL_MINUTES = 5.0

_KEYS = {"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"}


def check_ttl(minutes: Any, what: str = "ttl") -> float | None:
    """A TTL in minutes (a finite positive number) or ``None`` (never expires)."""
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes > 0:
        raise InvalidInputError(f"{what} must be a number of minutes > 0 or None, got {minutes!r}")
    if not math.isfinite(float(minutes)):
        raise InvalidInputError(f"{what} must be a finite number of minutes, got {minutes!r}; for no expiry pass None")
    return float(minutes)


def check_ttl_config(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's ``TTLConfig``, checked (unknown keys and bad values raise ``ConfigError``)."""
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise ConfigError(f"ttl must be a dict like LangGraph's TTLConfig, got {type(config).__name__}")
    unknown = set(config) - _KEYS
    if unknown:
        raise ConfigError(f"unknown ttl key(s) {sorted(unknown)}; valid keys: {', '.join(sorted(_KEYS))}")
    out = dict(config)
    try:
        check_ttl(out.get("default_ttl"), "ttl['default_ttl']")
    except InvalidInputError as exc:
        raise ConfigError(str(exc)) from None
    for key in ("refresh_on_read", "omit_expired"):
        if key in out and not isinstance(out[key], bool):
            raise ConfigError(f"ttl[{key!r}] must be a bool, got {out[key]!r}")
    interval = out.get("sweep_interval_minutes")
    if interval is not None and (
        isinstance(interval, bool) or not isinstance(interval, int | float) or not 0 < interval < math.inf
    ):
        raise ConfigError(f"ttl['sweep_interval_minutes'] must be a finite number > 0 or None, got {interval!r}")
    return out


def expires_at(now: datetime, minutes: float) -> datetime:
    """When an item written or read at ``now`` with a TTL of ``minutes`` expires.

    Raises:
        InvalidInputError: That moment is past year 9999 (use ``ttl=None`` for no expiry).
    """
    try:
        return now + timedelta(minutes=minutes)
    except OverflowError:
        raise InvalidInputError(
            f"ttl={minutes!r} minutes reaches past year 9999; for an item that never expires pass ttl=None"
        ) from None


class Awaitable(int):
    """An int that may also be awaited, giving itself: ``n = store.sweep_ttl()`` or ``n = await store.sweep_ttl()``.

    For a bool (``stop_ttl_sweeper``) it is 1 or 0 and prints as ``True`` or ``False``.
    """

    _bool = False

    @classmethod
    def of_bool(cls, value: bool) -> Awaitable:
        """``value`` as an awaitable 1 or 0 that prints as a bool."""
        made = cls(bool(value))
        made._bool = True
        return made

    def __repr__(self) -> str:
        return repr(bool(self)) if self._bool else super().__repr__()

    def __await__(self) -> Generator[Any, None, int]:
        return self._value().__await__()

    async def _value(self) -> int:
        return self


class SweeperTask(Future[None]):
    """What ``start_ttl_sweeper`` returns: a future that completes when the sweeper stops.

    A ``concurrent.futures.Future`` for sync code (as ``SqliteStore``'s); awaited, as
    ``AsyncPostgresStore`` users write ``task = await store.start_ttl_sweeper()``, it gives an asyncio
    future of the same, which can be awaited (until the sweeper stops) or cancelled (which stops it).
    """

    def __await__(self) -> Generator[Any, None, asyncio.Future[None]]:
        return self._task().__await__()

    async def _task(self) -> asyncio.Future[None]:
        return asyncio.wrap_future(self)


class Sweeper:
    """A daemon thread that deletes expired memories every interval until stopped (or its task is cancelled)."""

    def __init__(self, sweep: Callable[[], int]) -> None:
        self._sweep = sweep
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._done: SweeperTask = SweeperTask()

    def start(self, interval_minutes: float) -> SweeperTask:
        """Start sweeping (no-op if running); the task completes when the sweeper stops."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return self._done
            stop = self._stop = threading.Event()
            done = self._done = SweeperTask()
            done.add_done_callback(lambda task: stop.set() if task.cancelled() else None)

            def loop() -> None:
                try:
                    while not stop.wait(interval_minutes * 60):
                        try:
                            self._sweep()
                        except Exception:
                            continue
                finally:
                    if not done.done():  # a cancelled task is done already
                        done.set_result(None)

            self._thread = threading.Thread(target=loop, name="langgraph-ttl-sweeper", daemon=True)
            self._thread.start()
            return done

    def stop(self, timeout: float | None = None) -> bool:
        """Stop sweeping; ``True`` when the thread has ended within ``timeout``."""
        with self._lock:
            stop, thread = self._stop, self._thread
        if stop is None or thread is None:
            return True
        stop.set()
        thread.join(timeout)
        return not thread.is_alive()
