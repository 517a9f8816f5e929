"""One base for framework adapters: the wiring every adapter used to redo, done once.

An adapter (a LangChain retriever, a LlamaIndex memory block, a chat store...) is a store, a
namespace and recall settings dressed in a framework's class. Each used to check its store and
keys, validate its recall config, convert its LLM, check its former, build a core retriever per
namespace (and cache one per namespace), and decide what a copy or a pickle does with the store:
seven to nine calls per class, each a place where a copy re-pointed at another user could keep
reading the first user's memories. Here it is done once:

- :class:`StoreBinding`: a store, checked and registered (see :func:`~memory_retrievers.integration.handles.register`),
  and the checks of what refers to it (keys, a former).
- :class:`RecallBinding`: a store binding plus the recall settings and the one
  :class:`~memory_retrievers.MemoryRetriever` built on them *without a namespace*: every recall
  names its namespace (issue 28, namespace per call). Nothing that recalls remembers whose
  memories it read last, so an adapter copied, re-pointed at another namespace, or shared between
  requests reads the namespace the call names and no other.
- :class:`AdapterModel`: the pydantic base of adapters that are pydantic models (LangChain and
  LlamaIndex components are): the ``store`` field (a serialised store reopened), the ``namespace``
  / ``session_id`` / ``recall_config`` / ``channels`` / ``llm`` / ``former`` / ``filters`` fields
  checked wherever a subclass declares them, unknown arguments refused by name, copies sharing the store, ``pickle``
  writing the store as its spec, and the recall binding rebuilt only when a setting it was built
  from changed.
- :data:`DEFAULT_K` and :data:`DEFAULT_TOKEN_BUDGET`: the defaults every adapter shares, those of
  :class:`~memory_retrievers.RecallConfig`.

A framework adapter keeps only its framework's specifics. Nothing here imports a framework.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_serializer, field_validator

from memory_retrievers.config import validated
from memory_retrievers.errors import ConfigError, NotAStoreError
from memory_retrievers.filters import coerce_filter
from memory_retrievers.integration.handles import (
    check_arguments,
    check_former,
    check_store_key,
    deepcopy_memo,
    is_store_spec,
    open_store,
    register,
    store_spec,
)
from memory_retrievers.llm import LLM, as_llm
from memory_retrievers.recall.builtin import default_registry
from memory_retrievers.recall.channel import Channel
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.registry import ChannelRegistry
from memory_retrievers.recall.rerank import Reranker
from memory_retrievers.recall.results import RecallResult
from memory_retrievers.recall.retriever import MemoryRetriever
from memory_retrievers.store.memory_store import MemoryStore
from memory_retrievers.tokens import TokenCounter

__all__ = [
    "ADAPTER_MODEL_CONFIG",
    "DEFAULT_K",
    "DEFAULT_TOKEN_BUDGET",
    "AdapterChannels",
    "AdapterModel",
    "LLMConverter",
    "RecallBinding",
    "StoreBinding",
]

_DEFAULTS = RecallConfig()
#: Memories an adapter recalls when it is not told (``RecallConfig().k``).
DEFAULT_K: int = _DEFAULTS.k
#: Tokens of recalled memories an adapter adds when it is not told (``RecallConfig().token_budget``).
DEFAULT_TOKEN_BUDGET: int | None = _DEFAULTS.token_budget

#: Turns whatever an adapter's ``llm`` argument takes (a framework model...) into a core LLM.
LLMConverter = Callable[[Any], "LLM | None"]


def channel_tuple(channels: Any) -> tuple[Channel, ...]:
    """``channels`` (``None`` or an iterable of :class:`~memory_retrievers.Channel`) as a tuple.

    Raises:
        ConfigError: Not a list of channels (a str, a single channel, anything not iterable), or
            an item that is not a channel or has a bad name, ``needs`` or weight.
    """
    if channels is None:
        return ()
    if isinstance(channels, (str, bytes, Channel)) or not isinstance(channels, Iterable):
        raise ConfigError(f"channels must be a list of Channel, got {type(channels).__name__}")
    out = tuple(channels)
    ChannelRegistry(out)  # each checked now, at construction, not on the first recall
    return out


def registry_with(channels: Iterable[Channel]) -> ChannelRegistry:
    """The built-in channels plus ``channels`` (a built-in's name replaces it), as recall runs them."""
    return default_registry().with_channels(channels)


#: The ``channels`` field of an adapter model: the user's recall channels, added to the built-ins
#: (validated even when not given, so that ``recall_config``'s weights are checked against them).
AdapterChannels = Annotated[
    tuple[Channel, ...] | None,
    Field(
        default=None,
        validate_default=True,
        description="Recall channels of your own, added to the built-in ones (a built-in's name replaces it).",
    ),
]


class StoreBinding:
    """The store an adapter is built on, checked and registered, with the checks of what refers to it.

    A binding is shared, never copied, by the copies of its adapter (``copy``/``deepcopy`` return
    it): it holds a handle on a table and nothing of any one namespace.

    Args:
        store: The memory store.

    Raises:
        NotAStoreError: ``store`` is not a :class:`~memory_retrievers.MemoryStore` (a
            ``ConfigError`` and an ``InvalidInputError``).
    """

    __slots__ = ("_store",)

    def __init__(self, store: Any) -> None:
        if not isinstance(store, MemoryStore):
            raise NotAStoreError(f"store must be a MemoryStore, got {type(store).__name__}")
        self._store = register(store)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._store!r})"

    def __copy__(self) -> StoreBinding:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> StoreBinding:
        return self

    @property
    def store(self) -> MemoryStore:
        """The memory store."""
        return self._store

    def key(self, value: Any, *, field: str = "namespace") -> str:
        """``value`` checked as a key of this store (see :func:`~.handles.check_store_key`).

        Raises:
            InvalidInputError: Not a non-empty valid str, or longer than ``StoreConfig.max_key_chars``.
        """
        return check_store_key(value, field=field, store=self._store)

    def former(self, former: Any) -> Any:
        """``former`` if it is ``None`` or a ``MemoryFormer`` writing to this store.

        Raises:
            ConfigError: Anything else (see :func:`~memory_retrievers.integration.handles.check_former`).
        """
        return check_former(former, self._store)


class RecallBinding(StoreBinding):
    """A store binding plus recall settings, and the one core retriever every namespace is recalled through.

    The :class:`~memory_retrievers.MemoryRetriever` is built now (so a bad config, reranker or
    calibration fails at construction, not on the first recall) and without a namespace: each
    :meth:`recall` names one, checked against the store's key limit.

    Args:
        store: The memory store.
        config: A :class:`~memory_retrievers.RecallConfig`, a dict of its fields, or ``None``.
        llm: Anything ``to_llm`` accepts (by default a core ``LLM``, a callable or ``None``).
        reranker: Optional core reranker.
        channels: Recall channels (:class:`~memory_retrievers.Channel`) added to the built-in ones
            (one named like a built-in replaces it); ``config.weights`` may name them.
        to_llm: The framework's conversion of ``llm`` to a core LLM.

    Raises:
        ConfigError: A bad store, config, llm, reranker or channel, or a weight naming no channel.

    Example:
        An adapter that is a plain class holds one binding and names the namespace per call:

        .. code-block:: python

            self._binding = RecallBinding(store, config=recall_config, llm=llm, to_llm=to_core_llm)
            result = await self._binding.arecall(query, namespace=user_id, k=k)
    """

    __slots__ = ("_channels", "_llm", "_reranker", "_retriever")

    def __init__(
        self,
        store: Any,
        *,
        config: RecallConfig | Mapping[str, Any] | None = None,
        llm: Any = None,
        reranker: Reranker | None = None,
        channels: Iterable[Channel] | None = None,
        to_llm: LLMConverter = as_llm,
    ) -> None:
        super().__init__(store)
        self._llm = to_llm(llm)
        self._reranker = reranker
        self._channels = channel_tuple(channels)
        self._retriever = MemoryRetriever(
            self._store, config=config, llm=self._llm, reranker=reranker, channels=self._channels
        )

    @property
    def retriever(self) -> MemoryRetriever:
        """The shared core retriever (it has no namespace: every call names one)."""
        return self._retriever

    @property
    def config(self) -> RecallConfig:
        """The validated recall config."""
        return self._retriever.config

    @property
    def token_counter(self) -> TokenCounter:
        """How recall counts prompt tokens."""
        return self._retriever.token_counter

    def bound(self, namespace: str) -> MemoryRetriever:
        """A core retriever whose default namespace is ``namespace``, with this binding's settings.

        For an adapter's public ``memory_retriever`` (``adapter.memory_retriever.recall(query)`` reads
        the adapter's namespace). Built per call: it is cheap (the config is validated and the LLM
        converted already) and keeps no namespace anywhere the adapter's copies share.

        Raises:
            InvalidInputError: A bad ``namespace``.
        """
        return MemoryRetriever(
            self._store,
            namespace=self.key(namespace),
            config=self.config,
            llm=self._llm,
            reranker=self._reranker,
            channels=self._channels,
        )

    def recall(self, query: str, *, namespace: str, **kwargs: Any) -> RecallResult:
        """``MemoryRetriever.recall`` of ``namespace`` (checked against the store's key limit first)."""
        return self._retriever.recall(query, namespace=self.key(namespace), **kwargs)

    async def arecall(self, query: str, *, namespace: str, **kwargs: Any) -> RecallResult:
        """Async twin of :meth:`recall`."""
        return await self._retriever.arecall(query, namespace=self.key(namespace), **kwargs)


#: The pydantic config of every adapter model: arbitrary types (the store), assignments checked
#: like the constructor's arguments, unknown fields refused. A subclass whose framework base has a
#: model config of its own sets ``model_config = ADAPTER_MODEL_CONFIG`` (pydantic merges the bases'
#: configs in order, so the framework's would win).
ADAPTER_MODEL_CONFIG = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True, extra="forbid")


def _restore(cls: type[AdapterModel], state: dict[str, Any]) -> AdapterModel:
    """Unpickle an adapter: rebuild it from its fields (the store from its spec)."""
    return cls(**state)


class AdapterModel(BaseModel):
    """The base of adapters that are pydantic models; list it first among the bases.

    Checks, wherever a subclass declares the field (validators run on construction and on
    assignment): ``namespace`` and ``session_id`` against the store's key limit (``None`` passes,
    for adapters whose namespace comes per call), ``recall_config`` into a frozen
    :class:`~memory_retrievers.RecallConfig` whose weights name registered channels, ``channels``
    (declare it as :data:`AdapterChannels`) into a tuple of channels, ``filters`` into a
    :class:`~memory_retrievers.MemoryFilter`, ``llm`` through :meth:`convert_llm`, ``former``
    against the store. ``store`` may be given as its spec (from ``model_dump`` or ``pickle``): the
    live store of the process is reused, or it is reopened.

    Copies: ``copy``, ``deepcopy`` and ``model_copy`` share the store, the channels and the recall
    binding (which hold no namespace); ``pickle`` writes the fields with the store as its spec, and refuses when
    one of :attr:`unserialisable` is set.

    Raises:
        ConfigError: An unknown argument (naming the valid ones), or a bad config.

    Example:
        A third framework's component declares its fields and does its framework's work; the
        wiring above comes with the base (``tests/unit/integration/test_toolkit.py`` runs one):

        .. code-block:: python

            class FrameworkRecall(AdapterModel, FrameworkComponent):
                model_config = ADAPTER_MODEL_CONFIG
                namespace: str
                recall_config: RecallConfig | None = None

                def run(self, query: str) -> list[str]:
                    result = self.recall_binding().recall(query, namespace=self.namespace)
                    return [m.text for m in result.memories]
    """

    model_config = ADAPTER_MODEL_CONFIG

    store: MemoryStore
    """The memory store."""

    #: Constructor arguments taken besides the fields and dropped (LlamaIndex passes ``class_name``).
    extra_arguments: ClassVar[tuple[str, ...]] = ()
    #: Fields that hold a model or a client: set, they make the adapter refuse to serialise.
    unserialisable: ClassVar[tuple[str, ...]] = ("llm", "former", "reranker", "channels")

    _adapter_binding: tuple[tuple[Any, ...], RecallBinding] | None = PrivateAttr(default=None)

    @classmethod
    def convert_llm(cls, llm: Any) -> LLM | None:
        """The ``llm`` field as a core LLM; a framework's adapter overrides it with its conversion.

        Raises:
            ConfigError: ``llm`` cannot drive expansion/HyDE.
        """
        return as_llm(llm)

    def __init__(self, **data: Any) -> None:
        owner = type(self).__name__
        check_arguments(owner, data, [*type(self).model_fields, *self.extra_arguments])
        for name in self.extra_arguments:
            data.pop(name, None)
        super().__init__(**data)

    # ------------------------------------------------------------------ field checks
    @field_validator("store", mode="before")
    @classmethod
    def _reopen_store(cls, value: Any) -> Any:
        return open_store(value) if is_store_spec(value) else value

    @field_validator("store")
    @classmethod
    def _register_store(cls, value: MemoryStore) -> MemoryStore:
        return register(value)

    @field_validator("namespace", "session_id", check_fields=False)
    @classmethod
    def _check_key(cls, value: Any, info: ValidationInfo) -> Any:
        # A field validator, not a model one: it runs before an assignment lands, so a rejected
        # key leaves the adapter as it was.
        store = info.data.get("store")
        if value is None or not isinstance(store, MemoryStore):
            return value  # no store: its own error is reported
        return check_store_key(value, field=str(info.field_name), store=store)

    @field_validator("recall_config", mode="before", check_fields=False)
    @classmethod
    def _check_recall_config(cls, value: Any, info: ValidationInfo) -> Any:
        # Frozen once validated: an edit in place cannot leave the recall binding out of date.
        if value is None:
            return None
        config: RecallConfig = validated(RecallConfig, value, "RecallConfig")
        # A weight naming no channel (a typo) fails here, at construction or assignment, not on the
        # first recall in production. While constructing, the channels (declared after this field)
        # are not read yet: their own validator checks these weights against them.
        if "channels" in cls.model_fields and "channels" not in info.data:
            return config
        registry_with(info.data.get("channels") or ()).check_weights(config.weights)
        return config

    @field_validator("channels", mode="before", check_fields=False)
    @classmethod
    def _check_channels(cls, value: Any, info: ValidationInfo) -> Any:
        channels = channel_tuple(value)
        config = info.data.get("recall_config")
        if isinstance(config, RecallConfig):
            registry_with(channels).check_weights(config.weights)
        return channels or None

    @field_validator("filters", mode="before", check_fields=False)
    @classmethod
    def _check_filters(cls, value: Any) -> Any:
        return None if value is None else coerce_filter(value)

    @field_validator("llm", check_fields=False)
    @classmethod
    def _check_llm(cls, value: Any) -> Any:
        cls.convert_llm(value)  # raises ConfigError for what cannot drive expansion/HyDE
        return value

    @field_validator("former", check_fields=False)
    @classmethod
    def _check_former(cls, value: Any, info: ValidationInfo) -> Any:
        store = info.data.get("store")
        return check_former(value, store) if isinstance(store, MemoryStore) else value

    @field_serializer("store")
    def _serialise_store(self, store: MemoryStore) -> dict[str, Any]:
        return store_spec(store, type(self).__name__)

    # ------------------------------------------------------------------ recall
    def recall_binding(self) -> RecallBinding:
        """The recall binding of the current store, ``recall_config``, ``llm``, ``reranker`` and ``channels``.

        Rebuilt when one of them changed (compared by identity: validated values are frozen, so a
        change is always a new object); never for a namespace, which every recall names.
        """
        inputs = (
            self.store,
            getattr(self, "recall_config", None),
            getattr(self, "llm", None),
            getattr(self, "reranker", None),
            getattr(self, "channels", None),
        )
        held = self._adapter_binding
        if held is not None and all(a is b for a, b in zip(held[0], inputs, strict=True)):
            return held[1]
        binding = RecallBinding(
            self.store,
            config=inputs[1],
            llm=inputs[2],
            reranker=inputs[3],
            channels=inputs[4],
            to_llm=type(self).convert_llm,
        )
        self._adapter_binding = (inputs, binding)
        return binding

    # ------------------------------------------------------------------ copies and serialisation
    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> AdapterModel:
        # The store is a handle on a table: a copy uses the same one (copying it would fail, and a
        # second handle would not see this one's writes); so does a former, which writes to it, and
        # so do the channels (a plug-in may hold a client; the recall binding stays shared too).
        shared = (self.store, getattr(self, "former", None), getattr(self, "channels", None))
        return super().__deepcopy__(deepcopy_memo(memo, *shared))

    def serialisable_state(self) -> dict[str, Any]:
        """The fields, the store as its spec: what ``pickle`` writes and the constructor takes back.

        Raises:
            ConfigError: One of :attr:`unserialisable` is set, or the store's embedder cannot be
                rebuilt from its name.
        """
        owner = type(self).__name__
        held = [name for name in self.unserialisable if getattr(self, name, None) is not None]
        if held:
            names = " or ".join(held)
            raise ConfigError(
                f"a {owner} with {names} set cannot be serialised ({names} holds a model, a client or code, not data); "
                f"rebuild the {owner} with it instead"
            )
        state = {name: getattr(self, name) for name in type(self).model_fields}
        state["store"] = store_spec(self.store, owner)
        return state

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.serialisable_state()))
