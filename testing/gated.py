"""An embedder that holds a bulk job's Ray workers at their first batch until the test lets them go.

Built in each Ray worker by an ``embedder_factory`` (this module is importable there: the tests'
Ray instance puts the checkout on the workers' path), it lets a test write to a store at a known
point of a job (after its snapshot was read, before anything was restored) instead of racing it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_retrievers import HashEmbedder

#: How long a worker waits for the test before embedding anyway (a test that died lets it finish).
WAIT_SECONDS = 120.0


class GatedHashEmbedder(HashEmbedder):
    """A :class:`HashEmbedder` whose first ``embed_documents`` touches ``gate/started``, then waits for ``gate/go``.

    Args:
        gate: A folder both the test and the workers see.
        dimension: As for :class:`HashEmbedder`.
        name: As for :class:`HashEmbedder` (the store's model name, which the job checks).
    """

    def __init__(self, gate: str, dimension: int, name: str | None = None) -> None:
        super().__init__(dimension, name=name)
        self._gate = Path(gate)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Hold at the gate (the first call of this worker only waits if `go` is not there yet), then embed."""
        (self._gate / "started").touch()
        deadline = time.monotonic() + WAIT_SECONDS
        while not (self._gate / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return super().embed_documents(texts)
