"""A store as adapters hold it: the checks for what refers to it, its spec, the live-store registry.

- Unknown constructor arguments raise :class:`~memory_retrievers.ConfigError` naming the valid ones
  (:func:`check_arguments`; pydantic's default would drop them silently).
- Keys (namespace, session) over ``StoreConfig.max_key_chars`` name that limit
  (:func:`check_store_key`).
- A :class:`~memory_retrievers.MemoryStore` is a handle on a table, not a value: ``deepcopy`` of an
  adapter shares it (:func:`deepcopy_memo`), and serialising an adapter writes the store's *spec*
  (:func:`store_spec`: uri, table, embedder, config) from which :func:`open_store` reopens it, or
  hands back the live store of this process that :func:`register` recorded.

The adapter base (:mod:`memory_retrievers.integration.adapter`) is built on these; adapters import them from
:mod:`memory_retrievers.integration.toolkit`, which re-exports them.
"""

from __future__ import annotations

import difflib
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from memory_retrievers.embeddings import HashEmbedder, SentenceTransformerEmbedder
from memory_retrievers.errors import ConfigError, InvalidInputError
from memory_retrievers.store.memory_store import MemoryStore
from memory_retrievers.validation import check_key, check_namespace

__all__ = [
    "SPEC_KEY",
    "check_arguments",
    "check_former",
    "check_store_key",
    "deepcopy_memo",
    "is_store_spec",
    "open_store",
    "register",
    "store_spec",
]


# ---------------------------------------------------------------------- arguments and keys


def check_arguments(owner: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Refuse argument names that ``owner`` does not take, naming the valid ones.

    Args:
        owner: The class or function the arguments are for, as the message names it.
        given: The argument names the caller passed.
        valid: Every argument name ``owner`` accepts.

    Raises:
        ConfigError: Naming each unknown argument (with the closest valid one, if any is close)
            and every valid one.
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
    """:func:`check_key` with the limit of ``store`` (``StoreConfig.max_key_chars``), named in the error.

    Args:
        value: The key (a namespace, a session id...).
        field: What the key is, as the message names it.
        store: The store the key is for.

    Returns:
        ``value``, checked.

    Raises:
        InvalidInputError: Not a non-empty valid str, or longer than ``StoreConfig.max_key_chars``.
    """
    limit = store.config.max_key_chars
    if isinstance(value, str) and len(value) > limit:
        raise InvalidInputError(
            f"{field} has {len(value):,} characters, over the limit of {limit:,} (StoreConfig.max_key_chars); "
            f"use a shorter {field} or open the store with a larger max_key_chars"
        )
    if field == "namespace":  # one rule for namespaces wherever they come in (see check_namespace)
        return check_namespace(value, max_chars=limit)
    return check_key(value, field=field, max_chars=limit)


# ---------------------------------------------------------------------- stores in copies and serialised adapters

#: Marks a dict as a serialised store (so a field validator knows to reopen it).
SPEC_KEY = "memory_retrievers_store"

# Stores adapters of this process were built on, by (uri, table): a deserialised adapter reuses
# the live store instead of opening a second handle on the same table, whose reads would not see
# the first handle's writes. Weak: a store nobody holds is not kept open by this registry.
# A db:// URI names a database of one LanceDB account: the key also holds the store's Cloud
# settings, as a digest (``None`` for every other store).
_LIVE: weakref.WeakValueDictionary[tuple[str, str, str | None], MemoryStore] = weakref.WeakValueDictionary()


def _live_key(store: MemoryStore) -> tuple[str, str, str | None]:
    return store.uri, store.table_name, getattr(store, "_cloud_id", None)


def register(store: MemoryStore) -> MemoryStore:
    """Remember ``store`` as this process's live handle on its table (the latest handle wins).

    An adapter calls this on the store it is built with, so that :func:`open_store` hands that
    same store back to a copy of the adapter deserialised in this process.

    Args:
        store: The store an adapter is built on.

    Returns:
        ``store``.
    """
    _LIVE[_live_key(store)] = store
    return store


def _embedder_spec(store: MemoryStore, owner: str) -> dict[str, Any]:
    embedder = store.embedder
    # Only the core's own embedders can be rebuilt from what the table records (name, dimension);
    # a wrapped framework model (OpenAI, Ollama...) needs its client and credentials.
    if type(embedder) is HashEmbedder:
        return {"type": "hash", "name": embedder.name, "dimension": embedder.dimension}
    if type(embedder) is SentenceTransformerEmbedder:
        # The model too: the recorded name may be a label for a hub name or a local path.
        return {"type": "sentence-transformers", "name": embedder.name, "model": embedder._model_name}
    raise ConfigError(
        f"{owner} cannot be serialised: its store's embedder {embedder.name!r} ({type(embedder).__name__}) "
        "cannot be rebuilt from its name; only HashEmbedder and SentenceTransformerEmbedder stores can. "
        f"Rebuild the {owner} with the store instead of serialising it"
    )


def store_spec(store: MemoryStore, owner: str) -> dict[str, Any]:
    """What reopens ``store`` in another process: uri, table, embedder and config (never credentials).

    The result is JSON-serialisable and marked with :data:`SPEC_KEY`. A
    :class:`~memory_retrievers.SentenceTransformerEmbedder` is recorded by its name and model (its
    device and batch size are not: it reopens with the defaults).

    Args:
        store: The store to describe.
        owner: The adapter being serialised, as the error names it.

    Returns:
        The spec, for :func:`open_store`.

    Raises:
        ConfigError: The store's embedder cannot be rebuilt from its name (only
            :class:`~memory_retrievers.HashEmbedder` and
            :class:`~memory_retrievers.SentenceTransformerEmbedder` can), or the store is a
            :class:`~memory_retrievers.ShardedMemoryStore` whose shards are tables of different names.
    """
    spec = {
        SPEC_KEY: 1,
        "uri": store.uri,
        "table_name": store.table_name,
        "embedder": _embedder_spec(store, owner),
        "config": store.config.model_dump(mode="json"),
    }
    if _live_key(store)[2] is not None:
        spec["cloud"] = _live_key(store)[2]  # finds this account's live store; never the key
    locations = getattr(store, "locations", None)  # a ShardedMemoryStore reopens on the same shards
    if locations is None:
        return spec
    tables = set(getattr(store, "tables", ()))
    if tables - {store.table_name}:  # it reopens one table name in every location
        raise ConfigError(
            f"{owner} cannot be serialised: its sharded store's shards are the tables {sorted(tables)} and it "
            "reopens one table name in every location; give every shard the same table_name"
        )
    return spec | {"shards": list(locations)}


def is_store_spec(value: Any) -> bool:
    """Whether ``value`` is a dict written by :func:`store_spec`.

    Args:
        value: Anything (typically what a field validator is given).

    Returns:
        ``True`` for a mapping marked with :data:`SPEC_KEY` (version 1).
    """
    return isinstance(value, Mapping) and value.get(SPEC_KEY) == 1


def _is_open(store: MemoryStore) -> bool:
    try:
        store.count("memory-retrievers-liveness-probe")  # an indexed count: cheap, and refused once closed
    except Exception:  # a closed store raises StorageError; anything else means it is unusable too
        return False
    return True


def open_store(spec: Mapping[str, Any]) -> MemoryStore:
    """The store ``spec`` describes: the live one of this process if there is one, else reopened.

    The live store (see :func:`register`) is reused only while it is open and has the spec's
    embedder. Storage options (credentials) are never serialised: a remote store reopens with the
    environment's credentials.

    Args:
        spec: A dict written by :func:`store_spec`.

    Returns:
        An open store on the spec's table.

    Raises:
        ConfigError: The spec is malformed or names an embedder that cannot be rebuilt.
    """
    try:
        uri, table, embedder, config = spec["uri"], spec["table_name"], dict(spec["embedder"]), spec["config"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"malformed serialised store (missing {exc}); it must come from serialising an adapter"
        ) from None
    live = _LIVE.get((uri, table, spec.get("cloud")))
    if live is not None and live.embedder.name == embedder.get("name") and _is_open(live):
        return live
    kind = embedder.get("type")
    if kind == "hash":
        built: Any = HashEmbedder(int(embedder["dimension"]), name=str(embedder["name"]))
    elif kind == "sentence-transformers":
        # Specs written before the model was recorded named the model by its name.
        model = str(embedder.get("model", embedder["name"]))
        built = SentenceTransformerEmbedder(model, name=str(embedder["name"]))
    else:
        raise ConfigError(
            f"serialised store names an embedder type {kind!r}; expected 'hash' or 'sentence-transformers'"
        )
    if spec.get("shards") is not None:
        from memory_retrievers.shards.sharded_store import ShardedMemoryStore

        store: MemoryStore = ShardedMemoryStore(spec["shards"], table_name=table, embedder=built, config=config)
    else:
        store = MemoryStore(uri, table_name=table, embedder=built, config=config)
    _LIVE[_live_key(store)] = store
    return store


def deepcopy_memo(memo: dict[int, Any] | None, *shared: Any) -> dict[int, Any]:
    """A ``deepcopy`` memo in which each of ``shared`` copies to itself.

    For an adapter's ``__deepcopy__``: a store or an open handle is shared by the copy, not
    duplicated. ``None`` entries of ``shared`` are skipped.

    Args:
        memo: The memo ``deepcopy`` passed (``None``: a new one).
        *shared: The objects the copy must share.

    Returns:
        ``memo`` (or the new memo), with ``shared`` added.
    """
    memo = {} if memo is None else memo
    for obj in shared:
        if obj is not None:
            memo[id(obj)] = obj
    return memo


def check_former(former: Any, store: MemoryStore) -> Any:
    """``former`` if it is ``None`` or a :class:`~memory_retrievers.formation.MemoryFormer` writing to ``store``.

    Raises:
        ConfigError: Anything else, or a former of another store (its facts would link to turns
            it cannot see).
    """
    if former is None:
        return None
    from memory_retrievers.formation import MemoryFormer  # the formation package is only loaded when used

    if not isinstance(former, MemoryFormer):
        raise ConfigError(f"former must be a memory_retrievers.formation.MemoryFormer, got {type(former).__name__}")
    if former.store is not store:
        raise ConfigError("former must write to the same store as the adapter (MemoryFormer(store, llm=...))")
    return former
