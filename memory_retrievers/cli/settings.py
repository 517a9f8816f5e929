"""Where the command line finds its store, namespace and embedder, in a documented order.

Precedence, first found wins:

- store: ``--store`` > ``MEMORY_RETRIEVERS_STORE`` > ``store`` in the config file > the default
  per-user location (:func:`memory_retrievers.default_store_path`). A sharded store
  (:class:`~memory_retrievers.ShardedMemoryStore`) is ``shards://<location>,<location>...`` (its
  ``uri``), or a list of locations as ``store`` in the config file;
- namespace: ``--namespace/-n`` > ``MEMORY_RETRIEVERS_NAMESPACE`` > ``namespace`` in the config file;
- embedder: ``--embedder`` > ``MEMORY_RETRIEVERS_EMBEDDER`` > ``embedder`` in the config file > ``minilm``;
- LanceDB Cloud or Enterprise (a ``db://`` store): ``LANCEDB_API_KEY``, ``LANCEDB_REGION`` and
  ``LANCEDB_HOST_OVERRIDE`` (environment only: a secret does not belong in the config file).

The config file is TOML at ``<user config dir>/memory-retrievers/config.toml``
(``~/.config/memory-retrievers/config.toml`` on Linux), or wherever ``MEMORY_RETRIEVERS_CONFIG``
points. Relative paths in it are relative to the file's folder; relative ``--store`` values and
``MEMORY_RETRIEVERS_STORE`` are relative to the working directory.

This module imports only the standard library and ``platformdirs``: the command line's thin client
uses it to find the worker of a store before anything heavy is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CONFIG_KEYS",
    "ENV_CONFIG",
    "ENV_CLOUD",
    "ENV_EMBEDDER",
    "ENV_NAMESPACE",
    "ENV_NO_WORKER",
    "ENV_RUNTIME_DIR",
    "ENV_STORE",
    "ENV_WORKER_IDLE",
    "ENV_WORKER_TIMEOUT",
    "Settings",
    "SettingsError",
    "config_path",
    "default_store_location",
    "load_config",
    "resolve",
    "shard_locations",
]

ENV_STORE = "MEMORY_RETRIEVERS_STORE"
ENV_NAMESPACE = "MEMORY_RETRIEVERS_NAMESPACE"
ENV_EMBEDDER = "MEMORY_RETRIEVERS_EMBEDDER"
ENV_CONFIG = "MEMORY_RETRIEVERS_CONFIG"
ENV_NO_WORKER = "MEMORY_RETRIEVERS_NO_WORKER"
ENV_WORKER_IDLE = "MEMORY_RETRIEVERS_WORKER_IDLE"
ENV_WORKER_TIMEOUT = "MEMORY_RETRIEVERS_WORKER_TIMEOUT"
ENV_RUNTIME_DIR = "MEMORY_RETRIEVERS_RUNTIME_DIR"
#: LanceDB Cloud or Enterprise settings by ``MemoryStore`` argument (the variables LanceDB's own clients read).
ENV_CLOUD = {"api_key": "LANCEDB_API_KEY", "region": "LANCEDB_REGION", "host_override": "LANCEDB_HOST_OVERRIDE"}

#: Keys the config file may hold, with what each sets.
CONFIG_KEYS: dict[str, str] = {
    "store": "store folder or LanceDB URI, or a list of them (one per shard)",
    "namespace": "default namespace",
    "embedder": "embedder spec: minilm, hash[:DIM] or st:<model name or path>",
    "worker": "true/false: route recall, list, show, add and stats through the persistent worker",
    "worker_idle_seconds": "seconds a worker waits for a request before it exits",
    "worker_timeout_seconds": "seconds a command waits for the worker before it runs in its own process",
}

DEFAULT_EMBEDDER = "minilm"
DEFAULT_WORKER_IDLE_S = 900.0
DEFAULT_WORKER_TIMEOUT_S = 30.0


class SettingsError(Exception):
    """The config file or an environment variable is unusable (the CLI maps it to a config error)."""


def default_store_location() -> Path:
    """The default per-user store folder; the same as :func:`memory_retrievers.default_store_path`.

    Spelt out here because importing the store module loads LanceDB (seconds); a test pins the two
    together.
    """
    import platformdirs

    return platformdirs.user_data_path("memory-retrievers") / "store"


def config_path(env: Mapping[str, str]) -> Path:
    """The config file: ``MEMORY_RETRIEVERS_CONFIG`` or the per-user config dir's ``config.toml``."""
    given = env.get(ENV_CONFIG)
    if given:
        return Path(given).expanduser()
    import platformdirs

    return platformdirs.user_config_path("memory-retrievers") / "config.toml"


def load_config(path: Path) -> dict[str, Any]:
    """The config file's values (empty when the file does not exist).

    Raises:
        SettingsError: Unreadable, not TOML, an unknown key or a value of the wrong type.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"the config file {path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise SettingsError(f"unknown key(s) {unknown} in {path}; valid keys are: {', '.join(CONFIG_KEYS)}")
    if isinstance(data.get("store"), list):
        data["store"] = _sharded(data["store"], f"store in {path}")
    for key in ("store", "namespace", "embedder"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise SettingsError(f"{key} in {path} must be a non-empty string, got {data[key]!r}")
    if "worker" in data and not isinstance(data["worker"], bool):
        raise SettingsError(f"worker in {path} must be true or false, got {data['worker']!r}")
    for key in ("worker_idle_seconds", "worker_timeout_seconds"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise SettingsError(f"{key} in {path} must be a positive number, got {value!r}")
    return data


#: The prefix of a sharded store's location: ``shards://<location>,<location>...``.
SHARDS = "shards://"


def _sharded(locations: Any, where: str) -> str:
    """A list of shard locations as one ``shards://`` location.

    Raises:
        SettingsError: Not a non-empty list of non-empty strings without commas.
    """
    if not locations or not all(isinstance(x, str) and x.strip() and "," not in x for x in locations):
        raise SettingsError(
            f"{where} must be a store location or a non-empty list of them (strings without commas), got {locations!r}"
        )
    return SHARDS + ",".join(locations)


def shard_locations(location: str) -> list[str] | None:
    """The shard locations of a ``shards://`` location (``None`` for any other store)."""
    return location[len(SHARDS) :].split(",") if location.startswith(SHARDS) else None


def _cloud(location: str) -> bool:
    """Whether the store (or a shard of it) is on LanceDB Cloud or Enterprise."""
    return any(one.startswith("db://") for one in shard_locations(location) or [location])


def _location(value: str, base: Path) -> str:
    """A store location made absolute (URIs such as ``s3://…`` are kept; each shard's of ``shards://``)."""
    shards = shard_locations(value)
    if shards is not None:
        return _sharded([_location(s, base) if s.strip() else s for s in shards], f"the sharded store {value!r}")
    if "://" in value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved settings of one invocation.

    Attributes:
        store: Absolute store folder or LanceDB URI.
        store_source: Where ``store`` came from (``--store``, the env var, the config file, default).
        namespace: The namespace, or ``None`` when none was given anywhere.
        embedder: The embedder spec.
        worker: Whether worker-eligible commands go through the persistent worker.
        worker_idle_s: How long a worker it starts waits for requests.
        config_file: The config file consulted (it may not exist).
        worker_timeout_s: How long a command waits for the worker (for a free slot, then for the
            answer) before it runs in its own process instead.
        cloud: For a ``db://`` store: the ``MemoryStore`` arguments ``api_key``, ``region`` and
            ``host_override`` found in the environment (never shown in the repr).
    """

    store: str
    store_source: str
    namespace: str | None
    embedder: str
    worker: bool
    worker_idle_s: float
    config_file: Path
    worker_timeout_s: float = DEFAULT_WORKER_TIMEOUT_S
    cloud: Mapping[str, str] = field(default_factory=dict, repr=False)


def resolve(
    env: Mapping[str, str],
    cwd: Path,
    *,
    store: str | None = None,
    namespace: str | None = None,
    embedder: str | None = None,
    no_worker: bool = False,
) -> Settings:
    """Apply the precedence rules to the options given, the environment and the config file.

    Raises:
        SettingsError: The config file, ``MEMORY_RETRIEVERS_WORKER_IDLE`` or
            ``MEMORY_RETRIEVERS_WORKER_TIMEOUT`` is unusable.
    """
    cfg_file = config_path(env)
    if not cfg_file.is_absolute():
        cfg_file = cwd / cfg_file
    cfg = load_config(cfg_file)
    if store:
        location, source = _location(store, cwd), "--store"
    elif env.get(ENV_STORE):
        location, source = _location(env[ENV_STORE], cwd), ENV_STORE
    elif cfg.get("store"):
        location, source = _location(cfg["store"], cfg_file.parent), f"config file {cfg_file}"
    else:
        location, source = str(default_store_location()), "default"
    idle = _seconds(env, ENV_WORKER_IDLE, cfg, "worker_idle_seconds", DEFAULT_WORKER_IDLE_S)
    timeout = _seconds(env, ENV_WORKER_TIMEOUT, cfg, "worker_timeout_seconds", DEFAULT_WORKER_TIMEOUT_S)
    return Settings(
        store=location,
        store_source=source,
        namespace=namespace or env.get(ENV_NAMESPACE) or cfg.get("namespace") or None,
        embedder=embedder or env.get(ENV_EMBEDDER) or cfg.get("embedder") or DEFAULT_EMBEDDER,
        worker=not (no_worker or _truthy(env.get(ENV_NO_WORKER))) and bool(cfg.get("worker", True)),
        worker_idle_s=idle,
        config_file=cfg_file,
        worker_timeout_s=timeout,
        cloud={arg: env[var] for arg, var in ENV_CLOUD.items() if env.get(var)} if _cloud(location) else {},
    )


def _seconds(env: Mapping[str, str], variable: str, cfg: Mapping[str, Any], key: str, default: float) -> float:
    """A positive number of seconds: the environment variable, else the config file's key, else the default.

    Raises:
        SettingsError: The variable is set but not a positive number.
    """
    raw = env.get(variable)
    if not raw:
        return float(cfg.get(key, default))
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise SettingsError(f"{variable} must be a positive number of seconds, got {raw!r}")
    return value


def env_snapshot() -> dict[str, str]:
    """The process environment as a plain dict (what an invocation resolves against)."""
    return dict(os.environ)
