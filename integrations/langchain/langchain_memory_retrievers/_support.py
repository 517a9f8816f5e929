"""What every class of this package checks the same way: argument names, keys, and how a store is copied or saved.

- Unknown constructor arguments raise :class:`~memory_retrievers.ConfigError` naming the valid ones
  (pydantic's default would drop them silently).
- Keys (namespace, session) over ``StoreConfig.max_key_chars`` name that limit.
- A :class:`~memory_retrievers.MemoryStore` is a handle on a table, not a value: ``deepcopy`` of an
  adapter shares it, and serialising an adapter writes the store's *spec* (uri, table, embedder,
  config) from which :func:`open_store` reopens it (or hands back the live store of this process).

The LlamaIndex package has the same module: the two packages share nothing but the core.
"""

from __future__ import annotations

import difflib
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from memory_retrievers import ConfigError, HashEmbedder, InvalidInputError, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.integration import check_key

__all__ = [
    "SPEC_KEY",
    "check_arguments",
    "check_store_key",
    "deepcopy_memo",
    "is_store_spec",
    "open_store",
    "register",
    "store_spec",
]

#: Marks a dict as a serialised store (so a field validator knows to reopen it).
SPEC_KEY = "memory_retrievers_store"

# Stores adapters of this process were built on, by (uri, table): a deserialised adapter reuses
# the live store instead of opening a second handle on the same table, whose reads would not see
# the first handle's writes.
_LIVE: weakref.WeakValueDictionary[tuple[str, str], MemoryStore] = weakref.WeakValueDictionary()


def check_arguments(owner: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Raise :class:`ConfigError` for any name in ``given`` that is not in ``valid``.

    Raises:
        ConfigError: Naming each unknown argument (with the closest valid one) and every valid one.
    """
    allowed = sorted(set(valid))
    unknown = sorted(set(given) - set(allowed))
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, allowed, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(f"unknown argument(s) for {owner}: {', '.join(hints)}; valid arguments are: {', '.join(allowed)}")


def check_store_key(value: Any, *, field: str, store: MemoryStore) -> str:
    """``check_key`` with the limit that applies to keys, named in the error.

    Raises:
        InvalidInputError: Not a non-empty valid str, or longer than ``StoreConfig.max_key_chars``.
    """
    limit = store.config.max_key_chars
    if isinstance(value, str) and len(value) > limit:
        raise InvalidInputError(
            f"{field} has {len(value):,} characters, over the limit of {limit:,} (StoreConfig.max_key_chars); "
            f"use a shorter {field} or open the store with a larger max_key_chars"
        )
    return check_key(value, field=field, max_chars=limit)


def register(store: MemoryStore) -> MemoryStore:
    """Remember ``store`` as this process's live handle on its table; returns it."""
    _LIVE[(store.uri, store.table_name)] = store  # the latest handle wins
    return store


def _embedder_spec(store: MemoryStore, owner: str) -> dict[str, Any]:
    embedder = store.embedder
    # Only the core's own embedders can be rebuilt from what the table records (name, dimension);
    # a wrapped framework model (OpenAI, Ollama...) needs its client and credentials.
    if type(embedder) is HashEmbedder:
        return {"type": "hash", "name": embedder.name, "dimension": embedder.dimension}
    if type(embedder) is SentenceTransformerEmbedder:
        return {"type": "sentence-transformers", "name": embedder.name}
    raise ConfigError(
        f"{owner} cannot be serialised: its store's embedder {embedder.name!r} ({type(embedder).__name__}) "
        "cannot be rebuilt from its name; only HashEmbedder and SentenceTransformerEmbedder stores can. "
        f"Rebuild the {owner} with the store instead of serialising it"
    )


def store_spec(store: MemoryStore, owner: str) -> dict[str, Any]:
    """What reopens ``store`` in another process: uri, table, embedder and config (never credentials).

    Raises:
        ConfigError: The store's embedder cannot be rebuilt from its name.
    """
    return {
        SPEC_KEY: 1,
        "uri": store.uri,
        "table_name": store.table_name,
        "embedder": _embedder_spec(store, owner),
        "config": store.config.model_dump(mode="json"),
    }


def is_store_spec(value: Any) -> bool:
    """Whether ``value`` is a dict written by :func:`store_spec`."""
    return isinstance(value, Mapping) and value.get(SPEC_KEY) == 1


def _is_open(store: MemoryStore) -> bool:
    try:
        store.count("memory-retrievers-liveness-probe")  # an indexed count: cheap, and refused once closed
    except Exception:  # a closed store raises StorageError; anything else means it is unusable too
        return False
    return True


def open_store(spec: Mapping[str, Any]) -> MemoryStore:
    """The store ``spec`` describes: the live one of this process if there is one, else reopened.

    Storage options (credentials) are never serialised: a remote store reopens with the
    environment's credentials.

    Raises:
        ConfigError: The spec is malformed or names an embedder that cannot be rebuilt.
    """
    try:
        uri, table, embedder, config = spec["uri"], spec["table_name"], dict(spec["embedder"]), spec["config"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"malformed serialised store (missing {exc}); it must come from serialising an adapter"
        ) from None
    live = _LIVE.get((uri, table))
    if live is not None and live.embedder.name == embedder.get("name") and _is_open(live):
        return live
    kind = embedder.get("type")
    if kind == "hash":
        built: Any = HashEmbedder(int(embedder["dimension"]), name=str(embedder["name"]))
    elif kind == "sentence-transformers":
        built = SentenceTransformerEmbedder(str(embedder["name"]), name=str(embedder["name"]))
    else:
        raise ConfigError(
            f"serialised store names an embedder type {kind!r}; expected 'hash' or 'sentence-transformers'"
        )
    store = MemoryStore(uri, table_name=table, embedder=built, config=config)
    _LIVE[(uri, table)] = store
    return store


def deepcopy_memo(memo: dict[int, Any] | None, *shared: Any) -> dict[int, Any]:
    """A ``deepcopy`` memo in which each of ``shared`` copies to itself (stores, open handles)."""
    memo = {} if memo is None else memo
    for obj in shared:
        if obj is not None:
            memo[id(obj)] = obj
    return memo
