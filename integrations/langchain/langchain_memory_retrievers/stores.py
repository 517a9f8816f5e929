"""``MemoryStoreLangGraph``: LangGraph's long-term memory ``BaseStore`` on a memory store.

A LangGraph namespace tuple maps to one of our namespaces by joining its labels with ``"."``
(LangGraph forbids ``"."`` inside a label, so the mapping is exact both ways): the item
``("memories", "alice"), key "k1"`` is the memory ``k1`` of namespace ``"memories.alice"``, and a
:class:`~langchain_memory_retrievers.RecallRetriever` over ``"memories.alice"`` recalls it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
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
from langgraph.store.base import _validate_namespace as validate_namespace

from memory_retrievers import (
    FilterError,
    InvalidInputError,
    Memory,
    MemoryKind,
    MemoryStore,
    NotFoundError,
    RecallConfig,
)
from memory_retrievers.integration import aiter_memories, run_sync

from ._recallers import Recallers

__all__ = ["MemoryStoreLangGraph"]

VALUE_KEY = "langgraph_value"
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def to_namespace(path: tuple[str, ...]) -> str:
    """Our namespace for a LangGraph namespace tuple."""
    return ".".join(path)


def to_path(namespace: str) -> tuple[str, ...]:
    """The LangGraph namespace tuple of one of our namespaces."""
    return tuple(namespace.split("."))


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality, nested dicts, and ``$eq/$ne/$gt/$gte/$lt/$lte``."""
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, dict) and all(_compare(actual.get(k), v) for k, v in wanted.items())
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


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(_compare(value.get(key), wanted) for key, wanted in flt.items())


def _path_matches(path: tuple[str, ...], condition: MatchCondition) -> bool:
    pattern = tuple(condition.path)
    if len(pattern) > len(path):
        return False
    part = path[: len(pattern)] if condition.match_type == "prefix" else path[len(path) - len(pattern) :]
    return all(want == "*" or want == got for want, got in zip(pattern, part, strict=True))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


class MemoryStoreLangGraph(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memories, searched by the full recall pipeline.

    ``search(prefix, query=...)`` runs hybrid recall (vector, BM25, entity, recency, links, decay,
    MMR) in every namespace under ``prefix``; without a query it lists items, newest first.
    ``filter`` matches item values with LangGraph's semantics (equality and ``$eq``, ``$ne``,
    ``$gt``, ``$gte``, ``$lt``, ``$lte``). Memories written through other APIs appear as items whose
    value is ``{"text": ..., "kind": ...}``.

    Args:
        store: The memory store.
        index_fields: JSON paths of the value whose text is embedded and indexed (LangGraph's
            ``index={"fields": [...]}``); by default every string in the value.
        recall_config: Settings for ``search`` with a query.
        llm: Optional LangChain model for query expansion / HyDE in ``search``.
        kind: The memory kind of stored items.

    Example:
        .. code-block:: python

            store = MemoryStoreLangGraph(MemoryStore("./memories"))
            store.put(("memories", "alice"), "theme", {"text": "Alice prefers the dark theme"})
            store.search(("memories", "alice"), query="which theme?", limit=3)
    """

    supports_ttl = False

    def __init__(
        self,
        store: MemoryStore,
        *,
        index_fields: Sequence[str] | None = None,
        recall_config: RecallConfig | Mapping[str, Any] | None = None,
        llm: Any = None,
        kind: MemoryKind | str = MemoryKind.FACT,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise InvalidInputError(f"store must be a MemoryStore, got {type(store).__name__}")
        if isinstance(index_fields, str):
            raise InvalidInputError(f"index_fields must be a list of paths; wrap it: [{index_fields!r}]")
        self.store = store
        self.index_fields = tuple(index_fields) if index_fields is not None else None
        self.kind = MemoryKind(kind)
        self._recallers = Recallers(store, recall_config, llm)

    def __repr__(self) -> str:
        return f"MemoryStoreLangGraph({self.store!r})"

    # ------------------------------------------------------------------ conversions
    def _text(self, value: Mapping[str, Any], index: Sequence[str] | None) -> str:
        fields = index if index is not None else self.index_fields
        parts = (
            [t for path in fields for t in get_text_at_path(value, path)]
            if fields is not None
            else list(_strings(value))
        )
        text = "\n".join(p for p in parts if p and p.strip()) or json.dumps(value, ensure_ascii=False, sort_keys=True)
        return text[: self.store.config.max_text_chars]

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
            namespace=to_path(memory.namespace),
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
        """Run ops in order; consecutive puts to one namespace share one commit."""
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, PutOp):
                j = i
                while j < len(ops) and isinstance(ops[j], PutOp) and ops[j].namespace == op.namespace:  # type: ignore[union-attr]
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

    async def _aget(self, op: GetOp) -> Item | None:
        validate_namespace(op.namespace)
        try:
            memory = await self.store.aget(op.key, namespace=to_namespace(op.namespace))
        except NotFoundError:
            return None
        return self._item(memory)  # type: ignore[arg-type]

    async def _aput_many(self, path: tuple[str, ...], ops: Sequence[PutOp]) -> None:
        validate_namespace(path)
        ns = to_namespace(path)
        latest: dict[str, PutOp] = {}
        for op in ops:  # LangGraph semantics: the last op on a key wins
            latest.pop(op.key, None)
            latest[op.key] = op
        deletes = [key for key, op in latest.items() if op.value is None]
        records = []
        for key, op in latest.items():
            if op.value is None:
                continue
            if not isinstance(op.value, dict):
                raise InvalidInputError(f"item values must be dicts, got {type(op.value).__name__} for key {key!r}")
            index = None if op.index is None else ([] if op.index is False else list(op.index))
            records.append(
                {
                    "id": key,
                    "text": self._text(op.value, index),
                    "kind": self.kind,
                    "metadata": {VALUE_KEY: op.value},
                }
            )
        if records:
            # Keys identify items: near-duplicate detection must never swallow a put.
            await self.store.aadd_many(records, namespace=ns, dedup=False)
        if deletes:
            await self.store.adelete(deletes, namespace=ns, missing_ok=True)

    async def _anamespaces_under(self, prefix: tuple[str, ...]) -> list[str]:
        if prefix:
            validate_namespace(prefix)
        return [ns for ns in await self.store.anamespaces() if to_path(ns)[: len(prefix)] == prefix]

    async def _asearch(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 1 or op.offset < 0:
            raise InvalidInputError(f"limit must be >= 1 and offset >= 0, got limit={op.limit}, offset={op.offset}")
        wanted = op.offset + op.limit
        scored: list[tuple[float, Memory]] = []
        for ns in await self._anamespaces_under(op.namespace_prefix):
            if op.query:
                scored.extend(await self._arecall(ns, op.query, op.filter, wanted))
            else:
                scored.extend(await self._alist(ns, op.filter, wanted))
        if op.query:
            scored.sort(key=lambda pair: -pair[0])
        else:
            scored.sort(key=lambda pair: pair[1].updated_at or datetime.min, reverse=True)
        page = scored[op.offset : wanted]
        return [self._search_item(m, score if op.query else None) for score, m in page]

    async def _arecall(
        self, ns: str, query: str, flt: Mapping[str, Any] | None, wanted: int
    ) -> list[tuple[float, Memory]]:
        # A value filter applies after recall, so over-fetch when there is one.
        k = min(1000, wanted * (4 if flt else 1))
        result = await self._recallers.get(ns).arecall(query, k=k, token_budget=None)
        return [(m.score, m.memory) for m in result.memories if _matches(self._value(m.memory), flt)][:wanted]

    async def _alist(self, ns: str, flt: Mapping[str, Any] | None, wanted: int) -> list[tuple[float, Memory]]:
        out: list[tuple[float, Memory]] = []
        async for page in aiter_memories(self.store, ns):
            out.extend((0.0, m) for m in page if _matches(self._value(m), flt))
            if len(out) >= wanted:
                break
        return out[:wanted]

    async def _alist_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        paths = [to_path(ns) for ns in await self.store.anamespaces()]
        if op.match_conditions:
            paths = [p for p in paths if all(_path_matches(p, c) for c in op.match_conditions)]
        if op.max_depth is not None:
            paths = [p[: op.max_depth] for p in paths]
        unique = sorted(set(paths))
        return unique[op.offset : op.offset + op.limit]
