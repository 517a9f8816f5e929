"""``MemoryStoreLangGraph``: LangGraph's long-term memory ``BaseStore`` on a memory store.

**Namespaces.** A LangGraph namespace tuple is kept in one core namespace of a reserved form:
``"langgraph:"`` followed by its labels joined with ``"."`` (LangGraph forbids ``"."`` in a label,
so the mapping is exact both ways). ``("memories", "alice")`` is the core namespace
``"langgraph:memories.alice"``; :meth:`MemoryStoreLangGraph.core_namespace` gives it, so a
:class:`~langchain_memory_retrievers.RecallRetriever` can read the same memories. Core namespaces
not of that form (``"alice.smith"`` written through the core API) are never LangGraph items.
LangGraph allows labels the core's namespace rule refuses (a control character, such as a
newline, or whitespace at the end); such a namespace is kept under ``"langgraph%:"`` instead, with ``%``, those
characters, a label's trailing whitespace and the combining marks right after one of them (which
NFC would otherwise compose with the last hex digit) written as ``%`` and six hex digits, so it
stays a namespace of its own. Labels are compared in Unicode NFC, as every core namespace: the composed
and decomposed spellings of ``"émile"`` are one label for every operation (put, get, delete,
search prefixes, ``list_namespaces`` conditions, batches, TTL refresh), and namespaces come back in NFC.

**Indexing.** An item's text is what ``index_fields`` (or the put's ``index=[...]``) select; by
default every string of the value. With one selected text the memory's vector is that text's
embedding. With several (several paths, or a path matching a list), each text is embedded on its
own, as LangGraph does: the vectors are kept in the memory's metadata and the memory's own vector
is their normalised mean (so no extra embedding is spent on the joined text). ``index=False``, or
a value with no selected text, makes an item that semantic search does not rank: a query search
returns it after every indexed item, with ``score=None``, as LangGraph's own stores do (``get``,
listing and filter-only search find it as any other); it is tagged :data:`UNINDEXED_TAG`.

**Values** are dicts that JSON holds exactly: str keys; str, int, finite float, bool, ``None``,
lists (tuples come back as lists) and dicts, at most :data:`MAX_VALUE_DEPTH` levels deep. Anything
else (a ``datetime``, a ``set``, ``bytes``, NaN) is refused with
:class:`~memory_retrievers.InvalidInputError` naming the key and where in the value it is, rather
than stored as something else: store a time as its ISO string.

**Search.** ``search(prefix, query=...)`` selects the items (namespaces under ``prefix``, then
``filter``) *before* ranking them, and pages over all of them: ranking is the full recall pipeline
(``ranking="recall"``, the default: vector, BM25, entity, recency, links, decay, MMR) over the
selected items, followed by any the pipeline's candidate lists did not reach, by cosine; or the
cosine alone (``ranking="vector"``, LangGraph's own ordering). ``SearchItem.score`` is always the
cosine similarity between the query and the item's best-matching indexed text.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from typing import Any, Literal, cast

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)

from memory_retrievers import (
    Channel,
    ConfigError,
    FilterError,
    InvalidInputError,
    Memory,
    MemoryKind,
    MemoryStore,
    NotFoundError,
    RecallConfig,
    ScoredMemory,
)
from memory_retrievers.integration import PAGE_SIZE, RecallBinding, aiter_memories, deepcopy_memo, run_sync, unit_rows

from ._ttl import (
    DEFAULT_SWEEP_INTERVAL_MINUTES,
    TTL_KEY,
    Awaitable,
    Sweeper,
    SweeperTask,
    check_ttl,
    check_ttl_config,
    expires_at,
)
from .llms import to_memory_llm

__all__ = ["MAX_VALUE_DEPTH", "NAMESPACE_PREFIX", "UNINDEXED_TAG", "MemoryStoreLangGraph"]

#: Every core namespace holding LangGraph items starts with this.
NAMESPACE_PREFIX = "langgraph:"
#: Core namespaces of LangGraph namespaces with labels the core's rule refuses (see the module docstring).
ESCAPED_PREFIX = "langgraph%:"
_ESCAPED = re.compile(r"%([0-9A-F]{6})")
#: Tag of items that semantic search must not return (``index=False``, or nothing to index).
UNINDEXED_TAG = "langgraph:unindexed"
VALUE_KEY = "langgraph_value"
VECTORS_KEY = "langgraph_vectors"
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
#: How deeply an item's value may nest (LangGraph's Postgres store, through orjson, refuses past 254).
MAX_VALUE_DEPTH = 200
# Recall's candidate lists and k stop here; items beyond them are ranked by cosine.
_RECALL_MAX = 1000
Ranking = Literal["recall", "vector"]


def _unsafe(char: str) -> bool:
    """A character the core's namespace rule refuses (control, invisible) or may (other format characters)."""
    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


def _escape(label: str) -> str:
    kept = label.rstrip()
    body: list[str] = []
    escaped = False
    for c in kept:
        # A combining mark right after an escape would compose with its last hex digit when the
        # core normalises to NFC ("%00200C" + U+0301 gives "%00200\u0106"), so it is escaped too.
        escaped = c == "%" or _unsafe(c) or (escaped and unicodedata.category(c)[0] == "M")
        body.append(f"%{ord(c):06X}" if escaped else c)
    return "".join(body) + "".join(f"%{ord(c):06X}" for c in label[len(kept) :])


def core_namespace(namespace: Sequence[str]) -> str:
    """The core namespace that holds the LangGraph namespace ``namespace`` (see the module docstring).

    ``namespace`` is checked labels (:func:`_check_labels`), so in NFC, the form every read compares.
    """
    plain = NAMESPACE_PREFIX + ".".join(namespace)
    if not any(_unsafe(c) for c in plain) and plain == plain.rstrip():
        return plain
    return ESCAPED_PREFIX + ".".join(_escape(label) for label in namespace)


def langgraph_namespace(namespace: str) -> tuple[str, ...] | None:
    """The LangGraph namespace a core namespace holds (``None``: not one of the reserved forms)."""
    if namespace.startswith(ESCAPED_PREFIX):
        rest = namespace[len(ESCAPED_PREFIX) :]
        return tuple(_ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), label) for label in rest.split("."))
    if not namespace.startswith(NAMESPACE_PREFIX):
        return None
    rest = namespace[len(NAMESPACE_PREFIX) :]
    return tuple(rest.split(".")) if rest else ()


def _check_labels(namespace: Sequence[str]) -> tuple[str, ...]:
    """LangGraph's label rules, for every operation (``put`` adds its own, see :func:`_check_put_namespace`).

    Returns:
        The labels in Unicode NFC: the core keeps every namespace in NFC, so every path that takes
        a namespace, prefix or match condition compares this form, and ``"e\u0301mile"`` and
        ``"\u00e9mile"`` are one label everywhere.
    """
    if isinstance(namespace, str):
        raise InvalidNamespaceError(
            f"a namespace is a tuple of labels, got the str {namespace!r}; wrap it: ({namespace!r},)"
        )
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"namespace labels must be strings, got {type(label).__name__} in {namespace!r}"
            )
        if not label:
            raise InvalidNamespaceError(f"namespace labels cannot be empty strings, got {namespace!r}")
        if "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"namespace labels cannot contain '.' or NUL, got {label!r} in {namespace!r}")
    return tuple(unicodedata.normalize("NFC", label) for label in namespace)


def _check_put_namespace(namespace: Sequence[str]) -> tuple[str, ...]:
    """A put's namespace: labels as everywhere, and not empty.

    The reserved root label ``"langgraph"`` is refused by ``BaseStore.put`` only: a ``PutOp`` sent
    through ``batch`` may write under it, as LangGraph's own stores allow.
    """
    path = _check_labels(namespace)
    if not path:
        raise InvalidNamespaceError("namespace cannot be empty")
    return path


def _condition_path(condition: MatchCondition) -> tuple[str, ...]:
    """A match condition's labels; a plain string is one label (``"public"`` as ``("public",)``)."""
    path = condition.path
    return _check_labels((path,) if isinstance(path, str) else path)


def _check_op(op: Op) -> None:
    """The namespace rules of one op (``batch`` takes ops as given: ``BaseStore``'s methods did not check them)."""
    if isinstance(op, PutOp):
        _check_put_namespace(op.namespace)
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _condition_path(condition)
    else:
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality, nested dicts, lists, and ``$eq/$ne/$gt/$gte/$lt/$lte``."""
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, dict) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op not in _OPERATORS:
        raise FilterError(f"unsupported filter operator {op!r}; use one of {', '.join(_OPERATORS)}")
    try:
        a, b = float(actual), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _lookup(value: Mapping[str, Any], key: str) -> Any:
    """``value[key]``, or a nested field for a dotted key (``"user.name"``) as LangGraph's SQL stores read it."""
    if key in value or "." not in key:
        return value.get(key)
    current: Any = value
    for part in key.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


#: Stored times are UTC; the earliest one, for a memory without any (never one stored by the store).
_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def _last_updated(memory: Memory) -> datetime:
    """An item's ``updated_at`` as LangGraph shows it: when it was last put (its creation if never since)."""
    return memory.updated_at or memory.created_at or _NEVER


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(_compare(_lookup(value, key), wanted) for key, wanted in flt.items())


def _path_matches(path: tuple[str, ...], condition: MatchCondition) -> bool:
    pattern = _condition_path(condition)
    if len(pattern) > len(path):
        return False
    part = path[: len(pattern)] if condition.match_type == "prefix" else path[len(path) - len(pattern) :]
    return all(want == "*" or want == got for want, got in zip(pattern, part, strict=True))


def _unfit(node: Any) -> str | None:
    """Why JSON cannot hold ``node`` exactly, with the fix; ``None`` when it can (containers included)."""
    if node is None or isinstance(node, str | int | dict | list | tuple):
        return None
    if isinstance(node, float):
        return None if math.isfinite(node) else f"{node!r}, which JSON cannot hold; store None or a number"
    name = type(node).__name__
    if isinstance(node, datetime | date | time):
        return f"a {name}, which JSON cannot hold; store its ISO string (value.isoformat())"
    if isinstance(node, set | frozenset):
        return f"a {name}, which JSON cannot hold; store it as a list"
    return f"a {name}, which JSON cannot hold; store str, numbers, bools, None, lists or dicts"


def _check_value(key: str, value: Any) -> None:
    """An item's value, checked to come back exactly as given (see the module docstring).

    Walked without recursion, so a hostile depth is refused by name instead of a ``RecursionError``.

    Raises:
        InvalidInputError: Not a dict, a key that is not a str, something JSON cannot hold, or
            nested deeper than :data:`MAX_VALUE_DEPTH`.
    """
    if not isinstance(value, dict):
        raise InvalidInputError(f"item values must be dicts, got {type(value).__name__} for key {key!r}")
    stack: list[tuple[Any, str, int]] = [(value, "value", 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_VALUE_DEPTH:
            raise InvalidInputError(f"the value of key {key!r} nests deeper than {MAX_VALUE_DEPTH} levels; flatten it")
        problem = _unfit(node)
        if problem is not None:
            raise InvalidInputError(f"{where} of key {key!r} is {problem}")
        if isinstance(node, dict):
            for name, item in node.items():
                if not isinstance(name, str):
                    raise InvalidInputError(
                        f"{where} of key {key!r} has the {type(name).__name__} key {name!r}; keys must be str"
                    )
                stack.append((item, f"{where}[{name!r}]", depth + 1))
        elif isinstance(node, list | tuple):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(node))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _encode(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def _decode(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32)


@dataclass
class _Found:
    """One search result before paging: the memory and its cosine (``None``: an unindexed item)."""

    memory: Memory
    cosine: float | None


class MemoryStoreLangGraph(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memories, searched by the full recall pipeline.

    See the module docstring for how namespaces map, what is embedded and how search ranks and
    scores. ``filter`` matches item values with LangGraph's semantics (equality, lists, nested
    dicts and dotted keys, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``). Memories written
    through other APIs in a reserved namespace appear as items whose value is
    ``{"text": ..., "kind": ...}``.

    Args:
        store: The memory store. Closing it closes this store too: every operation then raises
            :class:`~memory_retrievers.StorageError`.
        index_fields: JSON paths of the value whose texts are embedded (LangGraph's
            ``index={"fields": [...]}``), each on its own; by default every string in the value,
            as one text.
        recall_config: Settings for ``search`` with a query.
        llm: Optional LangChain model for query expansion / HyDE in ``search``.
        kind: The memory kind of stored items.
        ranking: ``"recall"`` (the fused pipeline orders results) or ``"vector"`` (the cosine alone).
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, for puts that give no ``ttl``),
            ``refresh_on_read`` (default ``True``: a get or search of an item restarts its TTL),
            ``sweep_interval_minutes`` (for :meth:`start_ttl_sweeper`, default 5). An item's TTL is the
            core's ``expires_at``: expired items leave get, search and listings at once, and
            :meth:`sweep_ttl` (or ``store.admin.expire``/``optimize``) deletes them.
        channels: Recall channels of your own (:class:`~memory_retrievers.Channel`) for ``search``
            with a query (``ranking="recall"``), added to the built-in ones.

    Raises:
        ConfigError: Bad arguments.

    Example:
        .. code-block:: python

            store = MemoryStoreLangGraph(MemoryStore("./memories"))
            store.put(("memories", "alice"), "theme", {"text": "Alice prefers the dark theme"})
            store.search(("memories", "alice"), query="which theme?", limit=3)
    """

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        index_fields: Sequence[str] | None = None,
        recall_config: RecallConfig | Mapping[str, Any] | None = None,
        llm: Any = None,
        kind: MemoryKind | str = MemoryKind.FACT,
        ranking: Ranking = "recall",
        ttl: Mapping[str, Any] | None = None,
        channels: Sequence[Channel] | None = None,
    ) -> None:
        if isinstance(index_fields, str):
            raise InvalidInputError(f"index_fields must be a list of paths; wrap it: [{index_fields!r}]")
        if ranking not in ("recall", "vector"):
            raise ConfigError(f"ranking must be 'recall' or 'vector', got {ranking!r}")
        # One core retriever for every LangGraph namespace: each search names its core namespace.
        self._binding = RecallBinding(store, config=recall_config, llm=llm, channels=channels, to_llm=to_memory_llm)
        self._store = self._binding.store
        self.index_fields = tuple(index_fields) if index_fields is not None else None
        self.kind = MemoryKind(kind)
        self.ranking: Ranking = ranking
        self.ttl_config = check_ttl_config(ttl)  # type: ignore[assignment]
        self._sweeper = Sweeper(self.sweep_ttl)

    def __deepcopy__(self, memo: dict[int, Any]) -> MemoryStoreLangGraph:
        # The store and its recall binding are handles the copy shares (a store cannot be copied:
        # it is bound to this process's connection); the TTL sweeper is the copy's own, not started.
        memo = deepcopy_memo(memo, self._store, self._binding)
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for name, value in vars(self).items():
            if name != "_sweeper":
                setattr(clone, name, copy.deepcopy(value, memo))
        clone._sweeper = Sweeper(clone.sweep_ttl)
        return clone

    # ------------------------------------------------------------------ TTL
    def sweep_ttl(self) -> Awaitable:
        """Delete every expired memory of the store now; returns how many (also when awaited, as async stores do)."""
        return Awaitable(self._store.admin.expire())

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await self._store.admin.aexpire()

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> SweeperTask:
        """Sweep expired items every ``sweep_interval_minutes`` in a thread.

        The interval is, in this order: the argument, the ttl config's ``sweep_interval_minutes``,
        :data:`~langchain_memory_retrievers._ttl.DEFAULT_SWEEP_INTERVAL_MINUTES` (5, as LangGraph's
        Postgres store). Returns a ``concurrent.futures.Future`` that completes when
        :meth:`stop_ttl_sweeper` has stopped it, as ``SqliteStore``'s; awaited, as
        ``AsyncPostgresStore`` users write ``await store.start_ttl_sweeper()``, an asyncio future of
        the same (cancel it to stop the sweeper).

        Raises:
            ConfigError: ``sweep_interval_minutes`` is not a number > 0.
        """
        if sweep_interval_minutes is not None:
            check_ttl_config({"sweep_interval_minutes": sweep_interval_minutes})
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        interval = sweep_interval_minutes or configured or DEFAULT_SWEEP_INTERVAL_MINUTES
        return self._sweeper.start(float(interval))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> Awaitable:
        """Stop the sweeper; true when it has stopped within ``timeout`` seconds (also when awaited)."""
        return Awaitable.of_bool(self._sweeper.stop(timeout))

    async def _refresh(self, memories: Sequence[Memory]) -> None:
        now = self._store.clock()
        for memory in memories:
            minutes = memory.metadata.get(TTL_KEY)
            if isinstance(minutes, int | float) and not isinstance(minutes, bool):
                with contextlib.suppress(NotFoundError):  # deleted meanwhile: nothing to refresh
                    await self._store.aupdate(
                        memory.id, namespace=memory.namespace, expires_at=expires_at(now, minutes)
                    )

    def __repr__(self) -> str:
        return f"MemoryStoreLangGraph({self._store!r}, ranking={self.ranking!r})"

    @property
    def store(self) -> MemoryStore:
        """The memory store (fixed: build another ``MemoryStoreLangGraph`` for another store)."""
        return self._store

    @staticmethod
    def core_namespace(namespace: Sequence[str]) -> str:
        """The core namespace holding a LangGraph namespace (for a ``RecallRetriever``, the CLI...).

        Example:
            >>> MemoryStoreLangGraph.core_namespace(("memories", "alice"))
            'langgraph:memories.alice'
        """
        return core_namespace(_check_labels(namespace))

    @staticmethod
    def langgraph_namespace(namespace: str) -> tuple[str, ...] | None:
        """The LangGraph namespace a core namespace holds, or ``None`` if it holds none."""
        return langgraph_namespace(namespace)

    # ------------------------------------------------------------------ conversions
    def _texts(self, value: Mapping[str, Any], index: Sequence[str] | None) -> list[str]:
        """The texts to embed, each on its own; ``[]``: nothing to index."""
        fields = index if index is not None else self.index_fields
        if fields is None:
            joined = "\n".join(t for t in _strings(value) if t.strip())
            return [joined] if joined else []
        return [t for path in fields for t in get_text_at_path(value, path) if isinstance(t, str) and t.strip()]

    @staticmethod
    def _value(memory: Memory) -> dict[str, Any]:
        stored = memory.metadata.get(VALUE_KEY)
        if isinstance(stored, dict):
            return dict(stored)
        return {"text": memory.text, "kind": memory.kind.value}

    def _item(self, memory: Memory) -> Item:
        return Item(
            value=self._value(memory),
            key=memory.id,
            namespace=langgraph_namespace(memory.namespace) or (),
            created_at=memory.created_at or datetime.min,
            updated_at=memory.updated_at or memory.created_at or datetime.min,
        )

    def _search_item(self, memory: Memory, score: float | None) -> SearchItem:
        item = self._item(memory)
        return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)

    # ------------------------------------------------------------------ ops
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order (sync shell over :meth:`abatch`)."""
        return run_sync(self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order; consecutive puts to one namespace share one commit.

        Every op's namespace, and every put's value and ttl, is checked before any op runs, so a
        batch with an invalid one changes nothing.
        """
        ops = list(ops)
        for op in ops:
            _check_op(op)
            if isinstance(op, PutOp) and op.value is not None:
                self._check_put(op)
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, PutOp):
                j = i
                path = _check_labels(op.namespace)
                # Compared in NFC: puts spelling one label two ways go to one namespace, in one commit.
                while j < len(ops) and isinstance(ops[j], PutOp) and _check_labels(ops[j].namespace) == path:  # type: ignore[union-attr]
                    j += 1
                await self._aput_many(op.namespace, ops[i:j])  # type: ignore[arg-type]
                i = j
                continue
            if isinstance(op, GetOp):
                results[i] = await self._aget(op)
            elif isinstance(op, SearchOp):
                results[i] = await self._asearch(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = await self._alist_namespaces(op)
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
            i += 1
        return results

    def _check_put(self, op: PutOp) -> None:
        """A put's value and ttl, checked before any op of the batch runs."""
        _check_value(op.key, op.value)
        minutes = check_ttl(op.ttl)
        if minutes is not None:
            expires_at(self._store.clock(), minutes)  # past year 9999: refused here, not mid-batch

    async def _aget(self, op: GetOp) -> Item | None:
        path = _check_labels(op.namespace)
        try:
            memory = cast(Memory, await self._store.aget(op.key, namespace=core_namespace(path)))
        except NotFoundError:
            return None
        if memory.expires_at is not None and memory.expires_at <= self._store.clock():
            return None  # expired, not yet swept
        if op.refresh_ttl:
            await self._refresh([memory])
        return self._item(memory)

    async def _aput_many(self, namespace: Sequence[str], ops: Sequence[PutOp]) -> None:
        ns = core_namespace(_check_put_namespace(namespace))
        latest: dict[str, PutOp] = {}
        for op in ops:  # LangGraph semantics: the last op on a key wins
            latest.pop(op.key, None)
            latest[op.key] = op
        deletes = [key for key, op in latest.items() if op.value is None]
        records: list[dict[str, Any]] = []
        several: list[tuple[dict[str, Any], list[str]]] = []  # records whose texts are embedded one by one
        for key, op in latest.items():
            if op.value is None:
                continue
            texts = [] if op.index is False else self._texts(op.value, None if op.index is None else list(op.index))
            record: dict[str, Any] = {"id": key, "kind": self.kind, "metadata": {VALUE_KEY: op.value}}
            minutes = check_ttl(op.ttl)
            if minutes is not None:
                record["expires_at"] = expires_at(self._store.clock(), minutes)
                record["metadata"][TTL_KEY] = minutes
            if not texts:
                # Found by get/list/filter, never by semantic search. Its text (the value as JSON)
                # is still embedded by the store, like any memory.
                record["text"] = json.dumps(op.value, ensure_ascii=False, sort_keys=True)
                record["tags"] = [UNINDEXED_TAG]
            else:
                record["text"] = "\n".join(texts)
                if len(texts) > 1:
                    several.append((record, texts))
            record["text"] = record["text"][: self._store.config.max_text_chars]
            records.append(record)
        if several:
            await self._embed_each(several)
        if records:
            # Keys identify items: near-duplicate detection must never swallow a put.
            await self._store.aadd_many(records, namespace=ns, dedup=False)
        if deletes:
            await self._store.adelete(deletes, namespace=ns, missing_ok=True)

    async def _embed_each(self, several: Sequence[tuple[dict[str, Any], list[str]]]) -> None:
        """Embed each selected text on its own (one call for the whole batch), as LangGraph does."""
        flat = [text for _, texts in several for text in texts]
        vectors = unit_rows(await self._store.embedder.aembed_documents(flat), source="the store's embedder")
        if vectors.shape[0] != len(flat):
            raise InvalidInputError(f"the embedder returned {vectors.shape[0]} vectors for {len(flat)} texts")
        start = 0
        for record, texts in several:
            own = vectors[start : start + len(texts)]
            start += len(texts)
            mean = own.mean(axis=0)
            norm = float(np.linalg.norm(mean))
            # The memory's own vector (recall's vector channel) is the mean of its texts'; opposite
            # texts can cancel out, then the first text's vector stands in.
            record["vector"] = mean / norm if norm > 1e-6 else own[0]
            record["metadata"][VECTORS_KEY] = [_encode(v) for v in own]

    # ------------------------------------------------------------------ search
    async def _anamespaces_under(self, prefix: Sequence[str]) -> list[str]:
        wanted = _check_labels(prefix)
        out = []
        for ns in await self._store.anamespaces():
            path = langgraph_namespace(ns)
            if path is not None and path[: len(wanted)] == wanted:
                out.append(ns)
        return out

    async def _asearch(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 1 or op.offset < 0:
            raise InvalidInputError(f"limit must be >= 1 and offset >= 0, got limit={op.limit}, offset={op.offset}")
        if op.filter:
            _matches({}, op.filter)  # an unsupported operator fails even when nothing is stored
        namespaces = await self._anamespaces_under(op.namespace_prefix)
        wanted = op.offset + op.limit
        if not op.query:
            listed: list[Memory] = []
            for ns in namespaces:
                listed.extend(await self._alist(ns, op.filter, wanted))
            listed.sort(key=_last_updated, reverse=True)
            page = listed[op.offset : wanted]
            if op.refresh_ttl:
                await self._refresh(page)
            return [self._search_item(m, None) for m in page]
        qvec = np.asarray(await self._store.aembed_query(op.query), dtype=np.float32)
        ranked: list[tuple[float, _Found]] = []
        rest: list[_Found] = []
        unscored: list[Memory] = []
        for ns in namespaces:
            got, tail, unindexed = await self._asearch_namespace(ns, op.query, qvec, op.filter, wanted)
            ranked.extend(got)
            rest.extend(tail)
            unscored.extend(unindexed)
        ranked.sort(key=lambda pair: -pair[0])
        rest.sort(key=lambda found: -(found.cosine or 0.0))
        # Unindexed items (index=False, nothing to embed) come last, unscored, as in LangGraph's stores.
        unscored.sort(key=_last_updated, reverse=True)
        found = ([f for _, f in ranked] + rest + [_Found(m, None) for m in unscored])[op.offset : wanted]
        if op.refresh_ttl:
            await self._refresh([f.memory for f in found])
        return [self._search_item(f.memory, f.cosine) for f in found]

    async def _asearch_namespace(
        self, ns: str, query: str, qvec: np.ndarray, flt: Mapping[str, Any] | None, wanted: int
    ) -> tuple[list[tuple[float, _Found]], list[_Found], list[Memory]]:
        """One namespace's results: those recall ranked (with their fused score), the rest, the unindexed."""
        # Select first, rank second: a filter (or index=False) decides which items compete at all.
        selected: list[Memory] | None = None
        if flt or self.ranking == "vector":
            matching = [m for m in await self._aall(ns) if _matches(self._value(m), flt)]
            selected = [m for m in matching if UNINDEXED_TAG not in m.tags]
            unindexed = [m for m in matching if UNINDEXED_TAG in m.tags]
            if not selected:
                return [], [], unindexed
        else:
            unindexed = await self._aall(ns, {"tags_any": [UNINDEXED_TAG]})
        skip = {m.id for m in unindexed}
        ranked: list[tuple[float, _Found]] = []
        if self.ranking == "recall":
            scored = await self._arecall(ns, query, qvec, wanted, selected, sorted(skip))
            ranked = [(s.score, _Found(s.memory, self._cosine(s, qvec))) for s in scored]
        if len(ranked) >= wanted:
            return ranked, [], unindexed
        # Beyond recall's candidate lists (or with ranking="vector"): the other items, by cosine.
        seen = {f.memory.id for _, f in ranked}
        if selected is None:
            selected = [m for m in await self._aall(ns) if m.id not in skip and UNINDEXED_TAG not in m.tags]
        others = [m for m in selected if m.id not in seen]
        return ranked, await self._by_cosine(ns, others, qvec), unindexed

    async def _arecall(
        self, ns: str, query: str, qvec: np.ndarray, wanted: int, selected: list[Memory] | None, unindexed: list[str]
    ) -> list[ScoredMemory]:
        depth = min(max(wanted, 30), _RECALL_MAX)
        args: dict[str, Any] = {
            "k": min(wanted, _RECALL_MAX),
            "token_budget": None,
            # Pure score order: a page is a slice of this list (offset + limit), so the first k must be
            # a prefix of the first k + n; the block's latest-first reordering depends on which lines are in.
            "config": {"channels": {"candidate_depth": depth}, "selection": {"newest_first": False}},
            "query_vector": qvec,
        }
        if selected is not None:
            args["ids"] = [m.id for m in selected]
        if unindexed:
            args["exclude_ids"] = unindexed
        result = await self._binding.arecall(query, namespace=ns, **args)
        return list(result.memories)

    @staticmethod
    def _cosine(scored: ScoredMemory, qvec: np.ndarray) -> float:
        vectors = scored.memory.metadata.get(VECTORS_KEY)
        if isinstance(vectors, list) and vectors:
            return float(max(np.dot(_decode(v), qvec) for v in vectors))
        semantic = scored.explanation.semantic
        return float(semantic) if semantic is not None else 0.0

    async def _by_cosine(self, ns: str, memories: list[Memory], qvec: np.ndarray) -> list[_Found]:
        """``memories`` scored by their best text's cosine (LangGraph's max over an item's vectors)."""
        out: list[_Found] = []
        single: list[Memory] = []
        for memory in memories:
            vectors = memory.metadata.get(VECTORS_KEY)
            if isinstance(vectors, list) and vectors:
                out.append(_Found(memory, float(max(np.dot(_decode(v), qvec) for v in vectors))))
            else:
                single.append(memory)
        for start in range(0, len(single), PAGE_SIZE):
            chunk = single[start : start + PAGE_SIZE]
            # A list of ids gives a list (the overload for a str id gives one Memory).
            with_vectors = cast(
                "list[Memory]", await self._store.aget([m.id for m in chunk], namespace=ns, include_vector=True)
            )
            for memory, full in zip(chunk, with_vectors, strict=True):
                vector = full.vector
                cosine = float(np.dot(np.asarray(vector, dtype=np.float32), qvec)) if vector is not None else 0.0
                out.append(_Found(memory, cosine))
        out.sort(key=lambda found: -(found.cosine or 0.0))
        return out

    async def _aall(self, ns: str, flt: Mapping[str, Any] | None = None) -> list[Memory]:
        out: list[Memory] = []
        async for page in aiter_memories(self._store, ns, filter=flt):
            out.extend(page)
        return out

    async def _alist(self, ns: str, flt: Mapping[str, Any] | None, wanted: int) -> list[Memory]:
        """The ``wanted`` items of a namespace last updated first (matching ``flt``)."""
        if not flt:
            with contextlib.suppress(NotFoundError):  # one deleted between the two reads: the long way
                return await self._alatest(ns, wanted)
        # A filter matches values in Python, so every item is read: the store pages by creation, and
        # a listing by update cannot stop at the first page that holds enough matches.
        matching = [m for m in await self._aall(ns) if _matches(self._value(m), flt)]
        matching.sort(key=_last_updated, reverse=True)
        return matching[:wanted]

    async def _alatest(self, ns: str, wanted: int) -> list[Memory]:
        """The ``wanted`` items last updated, from two small columns of every item and then only those.

        A search without a query is a listing by ``updated_at``; the store pages by creation, so
        paging through it and stopping at the first page that held enough missed an old item put
        again since, in a namespace larger than a page (1,000). Ties: the newer-created first.
        """
        columns = await self._store.acolumns(ns, ["id", "updated_at", "created_at"])
        rows = columns.to_pylist()
        rows.sort(key=lambda r: (r["updated_at"] or r["created_at"], r["created_at"]))
        ids = [r["id"] for r in reversed(rows[-wanted:])]  # wanted >= 1: offset + limit, limit >= 1
        return cast("list[Memory]", await self._store.aget(ids, namespace=ns)) if ids else []

    async def _alist_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        for condition in op.match_conditions or ():
            _condition_path(condition)
        paths = [p for p in (langgraph_namespace(ns) for ns in await self._store.anamespaces()) if p]
        if op.match_conditions:
            paths = [p for p in paths if all(_path_matches(p, c) for c in op.match_conditions)]
        if op.max_depth is not None:
            paths = [p[: op.max_depth] for p in paths]
        unique = sorted(set(paths))
        return unique[op.offset : op.offset + op.limit]
