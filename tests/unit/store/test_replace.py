"""Replacing a set of memories (a chat session) in one commit: never empty, never half-written."""

from __future__ import annotations

import threading
from collections.abc import Callable

import lancedb
import pytest

from memory_retrievers import InvalidInputError, MemoryStore

Make = Callable[..., MemoryStore]
SESSION = {"session_ids": ["s"], "kinds": ["message"], "include_superseded": True}


def turns(*texts: str) -> list[dict]:
    return [{"text": t, "kind": "message", "session_id": "s"} for t in texts]


def version(store: MemoryStore) -> int:
    return int(lancedb.connect(store.uri).open_table(store.table_name).version)


def test_replace_swaps_a_session_in_one_commit(store: MemoryStore) -> None:
    old = store.add_many(turns("hello", "how are you", "fine thanks"), namespace="u")
    other = store.add("a fact outside the session", namespace="u")
    before = version(store)
    new = store.replace("u", turns("bonjour", "ça va", "très bien"), filter=SESSION)
    assert version(store) == before + 1
    left = store.list("u", filter=SESSION, newest_first=False)
    assert [m.text for m in left] == ["bonjour", "ça va", "très bien"] and [m.id for m in left] == [m.id for m in new]
    assert not {m.id for m in old} & {m.id for m in left}
    assert store.get(other.id, namespace="u").text == "a fact outside the session"
    # the new turns' context comes from the new session only
    assert store.get(new[1].id, namespace="u").context == "bonjour\ntrès bien"
    assert not store.fts_search("thanks", namespace="u", field="context")


@pytest.mark.parametrize(
    "bad",
    [
        {"text": "x" * 1_000_001, "kind": "message", "session_id": "s"},
        {"text": "lone \ud800", "kind": "message", "session_id": "s"},
    ],
)
def test_a_rejected_replacement_changes_nothing(store: MemoryStore, bad: dict) -> None:
    store.add_many(turns("hello", "how are you"), namespace="u")
    before = version(store)
    with pytest.raises(InvalidInputError, match="record 1"):
        store.replace("u", [*turns("new first"), bad], filter=SESSION)
    assert version(store) == before
    assert [m.text for m in store.list("u", filter=SESSION, newest_first=False)] == ["hello", "how are you"]


def test_replace_stays_in_its_namespace(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="writes one namespace"):
        store.replace("u", [{"text": "x", "namespace": "bob"}], filter=SESSION)


def test_readers_never_see_a_half_replaced_session(store: MemoryStore) -> None:
    store.add_many(turns("a", "b", "c"), namespace="u")
    seen: set[int] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(len(store.list("u", filter=SESSION)))

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(10):
        store.replace("u", turns(f"x{i}", f"y{i}", f"z{i}"), filter=SESSION)
    stop.set()
    reader.join()
    assert seen == {3}
