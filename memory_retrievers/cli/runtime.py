"""One invocation's world: its streams, terminal, environment and stores.

A command never reads ``sys.stdout``, ``os.environ`` or the working directory itself: it gets an
:class:`Invocation`. Run in a terminal, that holds the process's own; run by the persistent worker
for a client, it holds the client's (its environment, directory, terminal width, whether its
stdout is a terminal), so the output is the same byte for byte either way.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memory_retrievers.cli import exits
from memory_retrievers.cli.settings import Settings, shard_locations

if TYPE_CHECKING:
    from rich.console import Console

    from memory_retrievers.embeddings import Embedder
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["Invocation", "StoreProvider", "WrongStoreError", "make_embedder", "route_std_streams", "std_streams_to"]


class WrongStoreError(Exception):
    """A worker was asked about a store it does not serve (the client then runs the command itself)."""


def make_embedder(spec: str) -> Embedder:
    """The embedder of a spec: ``minilm`` (default, offline), ``hash[:DIM]`` (tests), ``st:<model or path>``.

    Raises:
        CliError: An unknown spec (exit code 6).
    """
    from memory_retrievers.embeddings import HashEmbedder, SentenceTransformerEmbedder

    if spec == "minilm":
        return SentenceTransformerEmbedder()
    if spec == "hash" or spec.startswith("hash:"):
        size = spec.partition(":")[2] or "64"
        if not size.isdigit() or int(size) < 2:
            raise exits.CliError(f"embedder {spec!r}: the dimension must be an int >= 2, e.g. hash:64", exits.CONFIG)
        return HashEmbedder(int(size))
    if spec.startswith("st:") and spec[3:].strip():
        return SentenceTransformerEmbedder(model=spec[3:])
    raise exits.CliError(
        f"unknown embedder {spec!r}; use minilm (the default), hash[:DIM] or st:<model name or path>", exits.CONFIG
    )


def store_exists(location: str, table: str = "memories") -> bool:
    """Whether a local store already holds a table (URIs are assumed to exist: LanceDB will say).

    A sharded store (``shards://…``) exists when any of its shards does: a shard is created by the
    first write to one of its namespaces.
    """
    shards = shard_locations(location)
    if shards is not None:
        return any(store_exists(shard, table) for shard in shards)
    if "://" in location:
        return True
    return (Path(location) / f"{table}.lance").is_dir()


class StoreProvider:
    """Opens stores for commands: a fresh one per invocation, or (in a worker) one kept open.

    Args:
        keep_open: Keep stores open across invocations (the worker) instead of closing them after each.
        serves: In a worker: the only (store, embedder) it answers for.
    """

    def __init__(self, *, keep_open: bool = False, serves: tuple[str, str] | None = None) -> None:
        self._keep_open = keep_open
        self._serves = serves
        self._open: dict[tuple[str, str], MemoryStore] = {}
        # The worker runs commands on several threads: they must share one store, not open two.
        self._lock = threading.Lock()

    def open(self, settings: Settings, *, create: bool) -> MemoryStore:
        """The store of ``settings``.

        Args:
            settings: The resolved settings.
            create: Create the store when it does not exist (writes); reads refuse a missing store.

        Raises:
            CliError: No store at the location and ``create`` is false (exit code 3).
            WrongStoreError: A worker asked about another store.
        """
        key = (settings.store, settings.embedder)
        if self._serves is not None and key != self._serves:
            raise WrongStoreError(f"this worker serves {self._serves}, not {key}")
        with self._lock:
            store = self._open.get(key)
            return store if store is not None else self._opened(settings, key, create=create)

    def _opened(self, settings: Settings, key: tuple[str, str], *, create: bool) -> MemoryStore:
        """Open the store of ``settings`` now and remember it (the caller holds the lock)."""
        if not create and not store_exists(settings.store):
            raise exits.CliError(
                f"no store at {settings.store} (from {settings.store_source}); add a memory first "
                "(memory-retrievers add TEXT -n NAMESPACE) or pass --store PATH",
                exits.NOT_FOUND,
            )
        from memory_retrievers.store.memory_store import MemoryStore

        # A long-lived worker must see what other processes commit meanwhile (≈1.4 ms per read);
        # a one-shot process opens the latest version anyway.
        config = {"read_consistency_interval": timedelta(0)} if self._keep_open else None
        shards, embedder = shard_locations(settings.store), make_embedder(settings.embedder)
        # A db:// store's API key, region and host, from the environment (see settings.ENV_CLOUD).
        api_key, region, host = (settings.cloud.get(k) for k in ("api_key", "region", "host_override"))
        cloud: dict[str, Any] = {"api_key": api_key, "region": region, "host_override": host}
        if shards is not None:
            from memory_retrievers.shards.sharded_store import ShardedMemoryStore

            store: MemoryStore = ShardedMemoryStore(shards, embedder=embedder, config=config, **cloud)
        else:
            store = MemoryStore(settings.store, embedder=embedder, config=config, **cloud)
        self._open[key] = store
        return store

    def finish(self) -> None:
        """End of an invocation: close the stores unless they are kept open."""
        if not self._keep_open:
            self.close()

    def close(self) -> None:
        """Close every store (pending access statistics are written)."""
        with self._lock:
            stores, self._open = list(self._open.values()), {}
        for store in stores:
            store.close()


class _ThreadRouted(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` of the worker: each thread writes where its command's output goes.

    Click writes help, version and error text to ``sys.stdout``/``sys.stderr``;
    ``contextlib.redirect_stdout`` swaps them for the whole process, which mixes the output of
    commands run at the same time on different threads.
    """

    def __init__(self, default: Any) -> None:
        self._default = default
        self._local = threading.local()

    @property
    def target(self) -> Any:
        return getattr(self._local, "target", None) or self._default

    @contextlib.contextmanager
    def routed(self, target: TextIO) -> Iterator[None]:
        previous = getattr(self._local, "target", None)
        self._local.target = target
        try:
            yield
        finally:
            self._local.target = previous

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.target, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.target, "errors", None)

    def write(self, text: str) -> int:
        return int(self.target.write(text) or 0)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return bool(self.target.isatty())

    def writable(self) -> bool:
        return True


def route_std_streams() -> None:
    """Make ``sys.stdout``/``sys.stderr`` per-thread (the worker, which runs commands concurrently)."""
    if not isinstance(sys.stdout, _ThreadRouted):
        sys.stdout = _ThreadRouted(sys.stdout)
    if not isinstance(sys.stderr, _ThreadRouted):
        sys.stderr = _ThreadRouted(sys.stderr)


@contextlib.contextmanager
def std_streams_to(stdout: TextIO, stderr: TextIO) -> Iterator[None]:
    """Send what is written to ``sys.stdout``/``sys.stderr`` to these streams: per thread when routed, else globally."""
    out, err = sys.stdout, sys.stderr
    if isinstance(out, _ThreadRouted) and isinstance(err, _ThreadRouted):
        with out.routed(stdout), err.routed(stderr):
            yield
    else:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            yield


@dataclass
class Invocation:
    """Everything a command may touch besides its arguments.

    Attributes:
        env: The environment variables to resolve settings and colours against.
        cwd: The directory relative paths are relative to.
        stdout: Where output goes.
        stderr: Where progress, notes and errors go.
        stdin: Where ``add -`` reads its text.
        stdout_tty: Whether ``stdout`` is a terminal (colours, tables for people).
        stderr_tty: Whether ``stderr`` is a terminal (progress bars).
        stdin_tty: Whether ``stdin`` is a terminal (confirmation prompts possible).
        width: Terminal width, if known.
        stores: Opens the stores.
        in_worker: Run by the persistent worker.
    """

    env: Mapping[str, str]
    cwd: Path
    stdout: TextIO
    stderr: TextIO
    stdin: TextIO
    stdout_tty: bool
    stderr_tty: bool
    stdin_tty: bool
    width: int | None = None
    stores: StoreProvider = field(default_factory=StoreProvider)
    in_worker: bool = False
    _consoles: dict[bool, Console] = field(default_factory=dict)

    def console(self, *, err: bool = False) -> Console:
        """A Rich console on stdout (or stderr): colours only on a terminal, ``NO_COLOR`` respected."""
        console = self._consoles.get(err)
        if console is None:
            from rich.console import Console

            tty = self.stderr_tty if err else self.stdout_tty
            console = Console(
                file=self.stderr if err else self.stdout,
                force_terminal=tty,
                no_color=not tty or "NO_COLOR" in self.env,
                width=self.width if tty and self.width else (None if tty else 120),
                highlight=False,
                markup=False,
                emoji=False,
                _environ=dict(self.env),
            )
            self._consoles[err] = console
        return console

    def out(self, text: str = "") -> None:
        """Write a line to stdout, verbatim."""
        self.stdout.write(text + "\n")

    def err(self, text: str, *, style: str | None = None) -> None:
        """Write a line to stderr (styled on a terminal)."""
        if style and self.stderr_tty:
            self.console(err=True).print(text, style=style, soft_wrap=True)
        else:
            self.stderr.write(text + "\n")

    def json(self, value: Any, *, err: bool = False) -> None:
        """Write one JSON document (one line) to stdout or stderr."""
        (self.stderr if err else self.stdout).write(json.dumps(value, ensure_ascii=False, default=str) + "\n")


#: A command body: gets the invocation, returns the exit code.
Body = Callable[[Invocation], int]
