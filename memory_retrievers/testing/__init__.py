"""Test helpers shipped with the library, for our adapters' tests and for users' own tests.

- :class:`ManualClock`: a settable clock for ``MemoryStore(clock=...)``. Pair it with
  :class:`~memory_retrievers.HashEmbedder` for fast, exactly reproducible stores (timestamps and
  vectors are the same on every run and in every process).
- :class:`FakeRecallSource`: an in-memory recall source, to test a recall channel without a store,
  and :func:`channel_input`: what recall hands a channel's ``search``, built on one.
- :mod:`memory_retrievers.testing.channels`: the standard tests every recall channel passes
  (``ChannelStandardTests``, to subclass in your tests; needs ``pytest``, so it is not imported here).
"""

from __future__ import annotations

from memory_retrievers.testing.clock import ManualClock
from memory_retrievers.testing.source import FakeRecallSource, channel_input

__all__ = ["FakeRecallSource", "ManualClock", "channel_input"]
