"""``supersede`` detects duplicates as ``add`` does: re-running a script never piles up live copies.

The bug these pin: ``supersede`` stored its new memory without looking for a duplicate, so running
the README's Quickstart three times left three live "Alice now prefers the light theme" memories.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lancedb
import pytest

from memory_retrievers import (
    InvalidInputError,
    MemoryRetriever,
    MemoryStore,
    WriteAction,
)

QUIET = {"scoring": {"decay": "none"}, "selection": {"mmr": False}, "record_access": False}


def version(store: MemoryStore) -> int:
    return int(lancedb.connect(store.uri).open_table(store.table_name).version)


Make = Callable[..., MemoryStore]
NS = "alice"
DARK = "Alice prefers the dark theme"
LIGHT = "Alice now prefers the light theme"
LOOSE = {"near_duplicate_threshold": 0.3}  # the hash embedder proposes every pair; the words decide


def table_version(store: MemoryStore) -> int:
    return int(lancedb.connect(store.uri).open_table(store.table_name).version)


def live_texts(store: MemoryStore) -> list[str]:
    return sorted(m.text for m in store.list(NS))


def test_rerunning_the_quickstart_supersede_keeps_one_live_copy(store: MemoryStore) -> None:
    # The README's Quickstart, run three times against the same store.
    first = None
    for run in range(3):
        m = store.add(DARK, namespace=NS, kind="preference", entities=["Alice"])
        assert m.action is WriteAction.ADDED  # the earlier dark-theme memories are superseded: not live
        newer = store.supersede(m.id, LIGHT, namespace=NS)
        assert store.get(m.id, namespace=NS).superseded_by == newer.id
        if run == 0:
            first = newer
            assert newer.action is WriteAction.ADDED and newer.supersedes == m.id
        else:
            assert first is not None
            assert newer.action is WriteAction.SKIPPED and newer.id == first.id
            assert newer.duplicate_of == first.id and newer.similarity == 1.0 and newer.reason
            assert newer.supersedes == first.supersedes  # the duplicate's own link is left as it was
    assert live_texts(store) == [LIGHT]
    assert store.count(NS, filter={"include_superseded": True}) == 4  # three dark ones in history


def test_the_duplicate_is_linked_in_one_commit_and_nothing_is_stored(store: MemoryStore) -> None:
    light = store.add(LIGHT, namespace=NS, kind="preference")
    old = store.add(DARK, namespace=NS, kind="preference")
    before = table_version(store)
    got = store.supersede(old.id, LIGHT, namespace=NS)
    assert table_version(store) - before == 1  # the old memory's link, alone
    assert got.action is WriteAction.SKIPPED and got.id == light.id and got.duplicate_of == light.id
    assert store.get(old.id, namespace=NS).superseded_by == light.id
    assert store.count(NS, filter={"include_superseded": True}) == 2
    # Deleting the duplicate makes the old memory live again, as for any supersession.
    store.delete(light.id, namespace=NS)
    assert live_texts(store) == [DARK]


def test_superseding_a_memory_by_its_own_text_changes_nothing(store: MemoryStore) -> None:
    old = store.add(DARK, namespace=NS, kind="preference", tags=["ui"])
    before = table_version(store)
    got = store.supersede(old.id, "Alice prefers the  dark theme ", namespace=NS)
    assert table_version(store) == before  # no commit at all
    assert got.action is WriteAction.SKIPPED and got.id == old.id and got.duplicate_of == old.id
    assert store.get(old.id, namespace=NS).superseded_by is None
    assert live_texts(store) == [DARK] and store.count(NS, filter={"include_superseded": True}) == 1


def test_repeating_a_supersede_returns_its_successor_and_a_different_text_is_still_refused(
    store: MemoryStore,
) -> None:
    old = store.add(DARK, namespace=NS, kind="preference")
    newer = store.supersede(old.id, LIGHT, namespace=NS)
    before = table_version(store)
    again = store.supersede(old.id, LIGHT, namespace=NS)
    assert table_version(store) == before
    assert again.action is WriteAction.SKIPPED and again.id == newer.id and again.duplicate_of == newer.id
    with pytest.raises(InvalidInputError, match=f"already superseded by '{newer.id}'"):
        store.supersede(old.id, "Alice now prefers the blue theme", namespace=NS)
    # Another live memory with the text is not the successor: still refused, nothing linked twice.
    other = store.add("Alice likes green tea", namespace=NS, kind="preference")
    with pytest.raises(InvalidInputError, match="already superseded"):
        store.supersede(old.id, other.text, namespace=NS)
    assert live_texts(store) == sorted([LIGHT, other.text])


def test_a_repeat_naming_the_successors_id_is_skipped(store: MemoryStore) -> None:
    old = store.add(DARK, namespace=NS, kind="preference")
    store.supersede(old.id, {"text": LIGHT, "id": "light"}, namespace=NS)
    again = store.supersede(old.id, {"text": LIGHT, "id": "light"}, namespace=NS)
    assert again.action is WriteAction.SKIPPED and again.id == "light"
    assert live_texts(store) == [LIGHT]


def test_supersede_again_finishes_an_interrupted_supersede_without_a_copy(store: MemoryStore) -> None:
    old = store.add("Alice lives in Paris", namespace=NS, kind="fact")

    async def crash(data: object) -> None:
        raise RuntimeError("the process dies here")  # after the new memory's commit

    store._table.rewrite = crash  # type: ignore[method-assign,assignment]
    with pytest.raises(RuntimeError, match="dies here"):
        store.supersede(old.id, {"text": "Alice lives in Berlin", "id": "berlin"}, namespace=NS)
    del store._table.rewrite
    assert store.get(old.id, namespace=NS).superseded_by is None  # both live, linked one way
    done = store.supersede(old.id, {"text": "Alice lives in Berlin", "id": "berlin"}, namespace=NS)
    assert done.action is WriteAction.SKIPPED and done.id == "berlin"
    assert store.get(old.id, namespace=NS).superseded_by == "berlin"
    assert live_texts(store) == ["Alice lives in Berlin"]


def test_a_near_duplicate_counts_like_on_add(make_store: Make) -> None:
    store = make_store(config=LOOSE)
    light = store.add(LIGHT, namespace=NS, kind="preference")
    old = store.add(DARK, namespace=NS, kind="preference")
    got = store.supersede(old.id, "Alice now prefers a light theme.", namespace=NS)
    assert got.action is WriteAction.SKIPPED and got.id == light.id and got.text == LIGHT
    assert got.similarity is not None and got.similarity < 1.0 and "near duplicate" in (got.reason or "")
    # Different words (a changed colour) are never a duplicate, however close the vectors.
    other = store.supersede(light.id, "Alice now prefers the blue theme", namespace=NS)
    assert other.action is WriteAction.ADDED
    assert live_texts(store) == ["Alice now prefers the blue theme"]


def test_duplicates_are_only_within_one_scope(store: MemoryStore) -> None:
    store.add(LIGHT, namespace=NS, kind="fact")  # another kind
    store.add(LIGHT, namespace=NS, kind="preference", project="ui")  # another project
    store.add(LIGHT, namespace="bob", kind="preference")  # another namespace
    old = store.add(DARK, namespace=NS, kind="preference")
    got = store.supersede(old.id, LIGHT, namespace=NS)  # inherits kind=preference, no project
    assert got.action is WriteAction.ADDED and got.supersedes == old.id
    assert store.count(NS) == 3


def test_exempt_kinds_dedup_false_and_keep_both_store_the_copy(make_store: Make) -> None:
    store = make_store()
    light = store.add(LIGHT, namespace=NS, kind="preference")
    old = store.add(DARK, namespace=NS, kind="preference")
    forced = store.supersede(old.id, LIGHT, namespace=NS, dedup=False)
    assert forced.action is WriteAction.ADDED and forced.id != light.id and forced.duplicate_of is None
    turn = store.add("ok", namespace=NS, kind="message", session_id="s")
    store.add("ok", namespace=NS, kind="message", session_id="s")
    assert store.supersede(turn.id, "ok", namespace=NS).action is WriteAction.ADDED  # messages are exempt
    with pytest.raises(InvalidInputError, match="dedup must be True, False or None"):
        store.supersede(light.id, "x", namespace=NS, dedup="no")  # type: ignore[arg-type]
    store.close()

    kept = make_store(config={"dedup_policy": "keep_both"})
    old2 = kept.add("Bob prefers tea", namespace=NS, kind="preference")
    got = kept.supersede(old2.id, LIGHT, namespace=NS)
    assert got.action is WriteAction.ADDED and got.duplicate_of in {light.id, forced.id}
    assert "kept beside" in (got.reason or "") and kept.get(old2.id, namespace=NS).superseded_by == got.id


def test_a_skipped_supersede_loses_no_annotation(store: MemoryStore) -> None:
    light = store.add(LIGHT, namespace=NS, kind="preference", tags=["ui"])
    old = store.add(DARK, namespace=NS, kind="preference", entities=["Alice"], pinned=True)
    before = table_version(store)
    got = store.supersede(old.id, {"text": LIGHT, "tags": ["theme"]}, namespace=NS)
    assert table_version(store) - before == 1  # the link and the merge: one commit
    assert got.action is WriteAction.UPDATED and got.id == light.id and "merged into it" in (got.reason or "")
    # What the new memory would have inherited or been given, the duplicate gains.
    stored = store.get(light.id, namespace=NS)
    assert stored.tags == ("ui", "theme") and stored.entities == ("alice",) and stored.pinned
    assert stored.text == LIGHT and store.get(old.id, namespace=NS).superseded_by == light.id


def test_dedup_policy_update_rewrites_the_duplicate(make_store: Make) -> None:
    store = make_store(config={**LOOSE, "dedup_policy": "update"})
    light = store.add(LIGHT, namespace=NS, kind="preference")
    old = store.add(DARK, namespace=NS, kind="preference")
    got = store.supersede(old.id, "Alice now prefers a light theme.", namespace=NS)
    assert got.action is WriteAction.UPDATED and got.id == light.id and got.text == "Alice now prefers a light theme."
    assert store.get(light.id, namespace=NS).text == got.text
    assert store.get(old.id, namespace=NS).superseded_by == light.id
    assert [h.id for h in store.fts_search("light theme", namespace=NS)] == [light.id]


def test_a_duplicate_deleted_by_another_process_during_the_link_never_hides_the_old(store: MemoryStore) -> None:
    light = store.add(LIGHT, namespace=NS, kind="preference")
    old = store.add(DARK, namespace=NS, kind="preference")
    real = store._table.rewrite
    calls: list[Any] = []

    async def racing(data: Any) -> Any:
        if not calls:  # another process deletes the duplicate just before the link commits
            lancedb.connect(store.uri).open_table(store.table_name).delete(f"id = '{light.id}'")
        calls.append(data)
        return await real(data)

    store._table.rewrite = racing  # type: ignore[method-assign]
    got = store.supersede(old.id, LIGHT, namespace=NS)
    del store._table.rewrite
    assert len(calls) == 3  # the link, its taking back, then the new memory's link
    # The link pointed at a deleted memory: it was taken back and the new memory stored after all.
    assert got.action is WriteAction.ADDED and got.id != light.id and got.supersedes == old.id
    assert store.get(old.id, namespace=NS).superseded_by == got.id
    assert live_texts(store) == [LIGHT]


async def test_async_twin_skips_the_same(store: MemoryStore) -> None:
    m = await store.aadd(DARK, namespace=NS, kind="preference")
    first = await store.asupersede(m.id, LIGHT, namespace=NS)
    m2 = await store.aadd(DARK, namespace=NS, kind="preference")
    second = await store.asupersede(m2.id, LIGHT, namespace=NS, dedup=None)
    assert second.id == first.id and second.action is WriteAction.SKIPPED
    assert sorted(m.text for m in await store.alist(NS)) == [LIGHT]


# ---------------------------------------------------------------- supersede, then delete the successor
def test_deleting_the_successor_makes_the_superseded_memory_live_again(store: MemoryStore) -> None:
    old = store.add("Alice lives in Paris", namespace="u")
    new = store.supersede(old.id, "Alice lives in Berlin", namespace="u")
    assert store.get(old.id, namespace="u").superseded_by == new.id
    before = version(store)
    assert store.delete(new.id, namespace="u") == 1
    assert version(store) == before + 1  # restored and deleted in one commit
    assert store.get(old.id, namespace="u").superseded_by is None
    assert [h.id for h in store.fts_search("Alice lives", namespace="u")] == [old.id]
    assert [
        m.id for m in MemoryRetriever(store, namespace="u", config=QUIET).recall("where does Alice live").memories
    ] == [old.id]


def test_deleting_both_ends_of_a_supersession_restores_nothing(store: MemoryStore) -> None:
    old = store.add("the meeting is on Monday", namespace="u")
    new = store.supersede(old.id, "the meeting moved to Tuesday", namespace="u")
    store.add("an unrelated memory", namespace="u")
    assert store.delete([old.id, new.id], namespace="u") == 2
    assert store.count("u", filter={"include_superseded": True}) == 1
