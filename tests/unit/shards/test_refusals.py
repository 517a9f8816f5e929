"""A call a sharded store refuses changes nothing: no shard is opened, no table or folder created.

Opening a shard creates its table, so a call refused by the shard itself left a new, empty shard
behind (issue 29). Every public method that names a namespace is found on the class, so a new one
without a case here fails :func:`test_every_namespace_method_has_bad_input_cases`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_retrievers import DimensionMismatchError, HashEmbedder, InvalidInputError, ShardedMemoryStore, StorageError
from memory_retrievers.shards.admin import ShardedAdmin
from memory_retrievers.store.call_checks import checker

EMBEDDER = HashEmbedder(32)
A = {"namespace": "alice"}
REC = {"text": "Alice likes tea"}

#: Bad calls of each method, by the async method's name (a sync twin uses its async method's).
Call = tuple[tuple[Any, ...], dict[str, Any]]
ADD: list[Call] = [
    (("x",), {"namespace": ""}),
    (("",), A),
    (("x",), {**A, "kind": "nope"}),
    (("x",), {**A, "session_id": 42}),
    (("x",), {**A, "dedup": "yes"}),
    (("x",), {**A, "priority": 99}),
    (("x",), {**A, "bogus": 1}),
    (("x",), {**A, "vector": [0.0] * 32}),
    (("x",), {**A, "vector": [1.0] * 3}),
    (("x",), {**A, "created_at": "yesterday"}),
]
FILTERS: list[dict[str, Any]] = [{"bogus": 1}, {"kinds": ["nope"]}, {"kinds": []}]
SEARCH_K: list[dict[str, Any]] = [{**A, "k": 0}, {**A, "k": -1}, {**A, "k": "3"}] + [
    {**A, "filter": f} for f in FILTERS
]


def _cases() -> dict[str, list[Call]]:
    """Made anew for each test: a case may hold a one-shot iterator."""
    return {
        "aadd": ADD,
        "add_later": ADD,
        "aadd_many": [
            (([{**REC, "kind": "nope"}],), A),
            (([REC, {"text": ""}],), A),
            (([REC],), {}),
            (("Alice likes tea",), A),
            (([REC],), {**A, "batch_size": 0}),
            (([REC],), {**A, "progress": "yes"}),
            (([REC],), {**A, "dedup": "no"}),
        ],
        "add_many_later": [
            (([REC],), {"namespace": ""}),
            (([{**REC, "namespace": "bob"}],), A),
            (([REC, {"text": ""}],), A),
            ((iter([{**REC, "kind": "nope"}]),), A),
            (([REC],), {**A, "dedup": "no"}),
            (("Alice likes tea",), A),
        ],
        "areplace": [
            (("",), {"records": [REC]}),
            (("alice", [{**REC, "namespace": "bob"}]), {}),
            (("alice", [{"text": ""}]), {}),
            (("alice", iter([{**REC, "kind": "nope"}])), {}),
            (("alice", [REC]), {"filter": {"bogus": 1}}),
        ],
        "aupdate": [
            (("",), {**A, "tags": ["x"]}),
            (("m1",), A),
            (("m1",), {**A, "id": "m2"}),
            (("m1",), {**A, "priority": 99}),
            (("m1",), {**A, "bogus": 1}),
            (("m1",), {**A, "text": ""}),
            (("m1",), {**A, "kind": "nope"}),
        ],
        "asupersede": [
            (("", "new"), A),
            (("m1", ""), A),
            (("m1", {"text": "t", "kind": "nope"}), A),
            (("m1", {"tags": ["t"]}), A),
            (("m1", 42), A),
            (("m1", {"text": "t", "id": "m1"}), A),
            (("m1", "t"), {**A, "dedup": 1}),
        ],
        "adelete": [(([],), A), ((42,), A), (("",), A), (("m1",), {"namespace": None})],
        "aforget": [(("",), {}), ((42,), {})],
        "aget": [(([],), A), (("",), A), ((b"m1",), A)],
        "alist": [
            (("alice",), {"limit": -1}),
            (("alice",), {"limit": 0}),
            (("alice",), {"offset": -1}),
            *[(("alice",), {"filter": f}) for f in FILTERS],
        ],
        "acount": [(("",), {}), *[(("alice",), {"filter": f}) for f in FILTERS]],
        "avector_search": [
            (("",), A),
            (("x" * 5000,), A),
            (([0.0] * 32,), A),
            (([1.0] * 3,), A),
            *[(("tea",), kw) for kw in SEARCH_K],
        ],
        "afts_search": [
            (("",), A),
            ((42,), A),
            (("tea",), {**A, "field": "nope"}),
            *[(("tea",), kw) for kw in SEARCH_K],
        ],
        "aentity_search": [(("alice",), A), (([""],), A), *[((["alice"],), kw) for kw in SEARCH_K]],
        "arecency_search": [((), kw) for kw in SEARCH_K],
        "ahas_entities": [(("",), {}), (("alice",), {"max_age_s": "soon"})],
        "aspeakers": [(("",), {}), (("alice",), {"max_age_s": None})],
        "arecall_source": [(("",), {}), *[(("alice",), {"filter": f}) for f in FILTERS]],
        "acolumns": [
            (("", ["id"]), {}),
            (([], ["id"]), {}),
            ((["alice", 42], ["id"]), {}),
            (("alice", ["nope"]), {}),
            (("alice", "text"), {}),
            (("alice", ["id"]), {"limit": 0}),
            *[(("alice", ["id"]), {"filter": f}) for f in FILTERS],
        ],
        "aversion": [(("",), {}), ((42,), {})],
        "arecord_access": [(([],), A), ((["m1"],), {**A, "at": "yesterday"}), (([""],), A)],
        "aexpire": [((), {"namespace": ""}), ((42,), {})],
        "aexport": [
            (("alice",), {"limit": 0}),
            (("alice",), {"limit": "all"}),
            (("alice",), {"offset": -1}),
            (("",), {}),
        ],
        "arestore": [(([{"bogus": 1}],), {}), (("x",), {}), (([{"text": "x"}],), {"namespace": ""})],
        "shard_index": [(("",), {}), ((42,), {})],
        "ashard_for": [(("",), {}), ((None,), {})],
    }


def _names(cls: type) -> list[str]:
    """The public methods of ``cls`` that take a ``namespace``."""
    found = []
    for name, value in inspect.getmembers(cls, callable):
        public = not name.startswith("_") and not isinstance(value, type)
        if public and "namespace" in inspect.signature(value).parameters:
            found.append(name)
    return found


def _case_key(name: str, names: list[str]) -> str:
    return f"a{name}" if f"a{name}" in names else name


STORE_METHODS = _names(ShardedMemoryStore)
ADMIN_METHODS = _names(ShardedAdmin)
PARAMS = [
    pytest.param(owner, name, i, id=f"{owner}.{name}-{i}")
    for owner, names in (("store", STORE_METHODS), ("admin", ADMIN_METHODS))
    for name in names
    for i in range(len(_cases().get(_case_key(name, names), [])))
]


def test_every_namespace_method_has_bad_input_cases() -> None:
    assert {"aadd", "add", "alist", "list", "add_later", "record_access", "aupdate"} <= set(STORE_METHODS)
    assert {"aexport", "export", "aexpire", "restore"} <= set(ADMIN_METHODS)
    for names in (STORE_METHODS, ADMIN_METHODS):
        missing = sorted(n for n in names if not _cases().get(_case_key(n, names)))
        assert missing == [], f"add bad-input cases for {missing} to _cases()"


def _call(target: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    method: Callable[..., Any] = getattr(target, name)
    result = method(*args, **kwargs)
    if inspect.isawaitable(result):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(result: Any) -> Any:
    return await result


@pytest.mark.parametrize(("owner", "name", "case"), PARAMS)
def test_a_refused_call_opens_and_creates_no_shard(tmp_path: Path, owner: str, name: str, case: int) -> None:
    store = ShardedMemoryStore([tmp_path / f"shard-{i}" for i in range(3)], embedder=EMBEDDER)
    try:
        target = store if owner == "store" else store.admin
        names = STORE_METHODS if owner == "store" else ADMIN_METHODS
        args, kwargs = _cases()[_case_key(name, names)][case]
        # A vector of another width is the one refusal of its own type (as on a plain store).
        wrong_width = any(np.shape(v) == (3,) for v in [*args, *kwargs.values()] if isinstance(v, list))
        with pytest.raises(DimensionMismatchError if wrong_width else InvalidInputError) as refused:
            _call(target, name, args, kwargs)
        assert str(refused.value)  # the message says what to fix
        assert store.open_shards == []
        assert sorted(p.name for p in tmp_path.iterdir()) == []
    finally:
        store.close()


def test_a_method_with_a_parameter_no_check_knows_is_refused_when_routed() -> None:
    async def asearch_widely(self: Any, ids: list[str], *, namespace: str, breadth: int = 3) -> None: ...

    with pytest.raises(TypeError, match="'breadth'"):
        checker(asearch_widely)


def test_the_checks_leave_a_one_shot_iterator_of_records_for_the_call(tmp_path: Path) -> None:
    with ShardedMemoryStore([tmp_path / f"shard-{i}" for i in range(2)], embedder=EMBEDDER) as store:
        added = store.replace("alice", iter([REC, {"text": "Alice flies to Oslo"}]))
        assert len(added) == 2
        texts = sorted(m.text for m in store.list("alice"))
        assert texts == ["Alice flies to Oslo", "Alice likes tea"]


def test_the_checks_leave_a_generator_of_entities_for_the_call(tmp_path: Path) -> None:
    shards = [tmp_path / f"shard-{i}" for i in range(2)]
    with ShardedMemoryStore(shards, embedder=EMBEDDER) as store:
        met = store.add("Alice met Bob", namespace="alice", entities=["bob"])
    with ShardedMemoryStore(shards, embedder=EMBEDDER) as store:  # the shard not open yet: checked first
        assert store.open_shards == []
        found = store.entity_search((e for e in ["bob"]), namespace="alice")
        assert [hit.id for hit in found] == [met.id]
    with ShardedMemoryStore(shards, embedder=EMBEDDER) as store:
        with pytest.raises(InvalidInputError, match="entities"):
            store.entity_search(42, namespace="alice")  # type: ignore[arg-type]
        assert store.open_shards == []


def test_a_valid_call_still_opens_its_shard_and_an_open_shard_refuses_alike(tmp_path: Path) -> None:
    with ShardedMemoryStore([tmp_path / f"shard-{i}" for i in range(3)], embedder=EMBEDDER) as store:
        assert store.list("alice", limit=5) == []
        assert store.open_shards == [store.shard_index("alice")]
        with pytest.raises(InvalidInputError, match="limit"):
            store.list("alice", limit=-1)  # now the open shard's own check
        with pytest.raises(InvalidInputError, match="kind"):
            store.add_later("x", namespace="alice", kind="nope")


def test_a_closed_sharded_store_refuses_routed_calls_with_their_shard_open_or_not(tmp_path: Path) -> None:
    store = ShardedMemoryStore([tmp_path / f"shard-{i}" for i in range(3)], embedder=EMBEDDER)
    store.add("Alice likes tea", namespace="alice")
    store.close()
    other = next(ns for ns in ("bob", "carol", "dave", "erin") if store.shard_index(ns) != store.shard_index("alice"))
    for namespace in ("alice", other):
        with pytest.raises(StorageError, match="closed"):
            asyncio.run(store.ahas_entities(namespace))
        with pytest.raises(StorageError, match="closed"):
            store.count(namespace)
    assert store.open_shards == [store.shard_index("alice")]
