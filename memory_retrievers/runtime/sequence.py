"""A process-wide, strictly increasing stamp for ordering writes that share a timestamp."""

from __future__ import annotations

import threading
import time

__all__ = ["next_stamp"]

_lock = threading.Lock()
_last = 0


def next_stamp() -> int:
    """Wall-clock nanoseconds, bumped past the previous stamp of this process.

    The adapters store it with each chat message, so message order survives a frozen or coarse
    clock (several messages written in one microsecond, or tests with a fixed clock).
    """
    global _last
    with _lock:
        _last = max(time.time_ns(), _last + 1)
        return _last
