"""examples/custom_channel.py runs offline, and its channel changes what is recalled (issue 28)."""

from __future__ import annotations

from collections.abc import Callable

ANSWER = "Error E-4012 means the calendar token is stale"


def test_custom_channel_example_brings_in_the_exact_code(run_example: Callable[..., str]) -> None:
    out = run_example("custom_channel.py")
    before, _, after = out.partition("with the error-code channel:")
    assert after, out
    assert ANSWER not in before  # the built-in channels fill k=2 with licence memories
    assert "'error_code']" in after  # routed like a built-in channel
    (line,) = [line for line in after.splitlines() if ANSWER in line]
    assert "error_code#1" in line  # and explained like one
