"""Fixtures shared by the core's tests and both adapter packages' tests (pytest's rootdir conftest)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.testing import ManualClock

#: Tests that leave threads, child processes or sockets behind fail (testing/leaks.py).
pytest_plugins = ["testing.leaks"]

ROOT = Path(__file__).resolve().parent
EXAMPLES = ROOT / "examples"

#: Folders whose tests form the long tier, run by ``python -m pytest -m long`` (and by .ci/run):
#: the real model, processes, servers, object storage. ``python -m pytest`` runs the rest, in a
#: few minutes; tests elsewhere join the long tier with ``@pytest.mark.long``.
LONG_TIER = (
    "tests/integration/",
    "tests/reliability/",
    "tests/object_storage/",
    "integrations/langchain/tests/standard/",
    "integrations/langchain/tests/integration_tests/",
    "integrations/llama-index/tests/integration_tests/",
)


#: Folders whose tests share one pytest-xdist worker, by the expensive thing they share: one local
#: Ray instance (2 CPUs, ~20 s to start) and one Chromium with a LoCoMo store built by the real model.
SHARED_WORKER = {"tests/ray/": "ray", "tests/browser/": "browser"}


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection looks at the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(item.path).resolve()
        if not path.is_relative_to(ROOT):
            continue
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(LONG_TIER):
            item.add_marker(pytest.mark.long)
        for folder, group in SHARED_WORKER.items():
            if relative.startswith(folder):
                item.add_marker(pytest.mark.xdist_group(group))
    # The heaviest tests first (a stable sort: the same order in every worker). pytest-xdist hands
    # out tests in this order; a minute-long test handed out last kept one worker busy for a minute
    # or two after the other had finished (seen at the end of the long tier's runs).
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything imported so far out of the garbage collector's sight.

    The suite imports LanceDB, pyarrow, pydantic models, LangChain and LlamaIndex: a million
    long-lived objects that every full collection walked again, about a fifth of the fast tier's
    CPU time (py-spy). Frozen objects are never collected; everything a test makes still is.
    """
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The real default embedder, loaded once per run (about 5 s cold): for the long tier."""
    emb = SentenceTransformerEmbedder()
    emb.embed_query("warm up")
    return emb


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(32)


@pytest.fixture
def make_store(tmp_path: Path, embedder: HashEmbedder, clock: ManualClock) -> Iterator[Callable[..., MemoryStore]]:
    """Open (or reopen) a store in this test's tmp dir with the hash embedder."""
    opened: list[MemoryStore] = []

    def make(**kwargs: object) -> MemoryStore:
        kwargs.setdefault("embedder", embedder)
        kwargs.setdefault("clock", clock)
        store = MemoryStore(tmp_path / "db", **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store()


# Alice's memories, shared by both adapter packages' tests (the core's tests define their own).
ALICE = [
    ("Alice prefers the dark theme in every editor", "preference"),
    ("Alice's dog is called Rex", "fact"),
    ("Alice moved to Berlin in March", "event"),
    ("Alice drinks green tea every morning", "preference"),
    ("Alice is learning to play jazz piano", "fact"),
    ("Alice works as a data engineer at Acme", "fact"),
]


@pytest.fixture
def filled(store: MemoryStore, clock: ManualClock) -> MemoryStore:
    """Alice's six memories, a day apart, and one memory of Bob's."""
    for text, kind in ALICE:
        store.add(text, namespace="alice", kind=kind)
        clock.advance(days=1)
    store.add("Bob prefers the light theme", namespace="bob", kind="preference")
    return store


@pytest.fixture
def run_example() -> Callable[..., str]:
    """Run ``examples/<script>`` offline (without the given env vars) and return its stdout."""

    def run(script: str, *, unset: tuple[str, ...] = ()) -> str:
        env = {k: v for k, v in os.environ.items() if k not in unset}
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=300, env=env, check=False
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    return run
