"""Calls that may hang, run so that a hang fails the test instead of hanging the whole run."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["outcome_within"]


def outcome_within(call: Callable[[], object], seconds: float = 30.0) -> BaseException | None:
    """Run ``call`` on a daemon thread; what it raised (``None``: it returned), once it ended.

    Raises:
        AssertionError: It was still running after ``seconds`` (it is left running, on its daemon thread).
    """
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds:g} s: the deadline did not hold"
    return outcome[0]
