"""What counts as a duplicate: nothing a reader would call different is ever skipped.

Each case the trust review found (issue "Nothing lost, nothing leaked, nothing stalled", item 14)
and the near-duplicate cases of the first-hour review, by name. The threshold is lowered where the
hash embedder would not even propose the pair, so that the same-words rule is what decides.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_retrievers import (
    InvalidInputError,
    MemoryKind,
    MemoryStore,
    WriteAction,
)
from memory_retrievers.text.dedup import content_words, same_words

Make = Callable[..., MemoryStore]
LOOSE = {"near_duplicate_threshold": 0.3}  # every pair below is proposed; the words decide


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Password is Hunter2", "Password is hunter2"),
        ("the limit is 10⁵ requests", "the limit is 105 requests"),
        ("Maße", "Masse"),
        ("Chapter Ⅳ", "Chapter IV"),
        ("def f():\n    return 1", "def f():\n  return 1"),
        ("my phone number is 555-0101", "my phone number is 555-0199"),
        ("the meeting is at 3pm on Friday", "the meeting is at 2pm on Friday"),
        ("I like coffee", "I don't like coffee"),
        ("Alice owes Bob five euros", "Bob owes Alice five euros"),
        ("the flight lands on 12 March", "the flight lands on 21 March"),
    ],
)
def test_texts_a_reader_would_tell_apart_are_both_stored(make_store: Make, first: str, second: str) -> None:
    store = make_store(config=LOOSE)
    a = store.add(first, namespace="u")
    b = store.add(second, namespace="u")
    assert b.action is WriteAction.ADDED and b.id != a.id and b.duplicate_of is None
    assert {m.text for m in store.list("u")} == {first, second}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I live in Berlin", "I live in   Berlin "),  # whitespace
        ("Alice prefers the dark theme", "Alice prefers a dark theme."),  # stop words, punctuation
    ],
)
def test_texts_that_say_the_same_are_one_memory(make_store: Make, first: str, second: str) -> None:
    store = make_store(config=LOOSE)
    a = store.add(first, namespace="u")
    b = store.add(second, namespace="u")
    assert b.action is WriteAction.SKIPPED and b.duplicate_of == a.id and b.reason
    assert store.count("u") == 1


def test_content_words_keep_negations_numbers_and_case() -> None:
    assert content_words("I don't like the 3pm meeting") == ("don't", "3pm", "meeting")
    assert same_words("Alice likes tea.", "alice likes tea") is False
    assert same_words("We never met", "We met") is False


def test_duplicates_are_only_within_one_kind_project_and_topic(store: MemoryStore) -> None:
    fact = store.add("use tabs for indentation", namespace="u", kind="fact", project="repo-a")
    pref = store.add("use tabs for indentation", namespace="u", kind="preference", project="repo-b", pinned=True)
    assert pref.action is WriteAction.ADDED and pref.id != fact.id
    assert store.get(pref.id, namespace="u").project == "repo-b" and store.get(pref.id, namespace="u").pinned
    other_topic = store.add("use tabs for indentation", namespace="u", kind="fact", project="repo-a", topic="go")
    assert other_topic.action is WriteAction.ADDED
    same_scope = store.add("use tabs for indentation", namespace="u", kind="fact", project="repo-a")
    assert same_scope.action is WriteAction.SKIPPED and same_scope.duplicate_of == fact.id


def test_a_fact_never_swallows_a_chat_turn(make_store: Make) -> None:
    store = make_store(config={"dedup_policy": "update"})
    turn = store.add("I moved to Lisbon", namespace="u", kind="message", session_id="chat")
    fact = store.add("I moved to Lisbon", namespace="u", kind="fact")
    assert fact.action is WriteAction.ADDED and fact.id != turn.id
    history = store.list("u", filter={"kinds": ["message"], "session_ids": ["chat"]})
    assert [m.kind for m in history] == [MemoryKind.MESSAGE]


def test_a_skipped_duplicate_adds_its_annotations(store: MemoryStore) -> None:
    a = store.add("Alice prefers the dark theme", namespace="u", tags=["ui"], metadata={"source": "chat"})
    b = store.add(
        "Alice prefers the dark theme",
        namespace="u",
        tags=["editor"],
        pinned=True,
        priority=3.0,
        metadata={"source": "import", "confidence": 0.9},
        entities=["Alice"],
    )
    assert b.action is WriteAction.UPDATED and b.id == a.id and "merged into it" in (b.reason or "")
    got = store.get(a.id, namespace="u")
    assert got.tags == ("ui", "editor") and got.pinned and got.priority == 3.0 and got.entities == ("alice",)
    assert got.metadata == {"source": "chat", "confidence": 0.9}  # the stored value of a key wins
    assert got.created_at == a.created_at and got.text == a.text
    again = store.add("Alice prefers the dark theme", namespace="u", tags=["ui"])
    assert again.action is WriteAction.SKIPPED and again.duplicate_of == a.id  # nothing new: nothing written
    assert store.count("u") == 1


def test_update_policy_replaces_only_the_fields_the_caller_set(make_store: Make) -> None:
    store = make_store(config={"dedup_policy": "update"})
    base = store.add("Alice lives in Paris", namespace="u")
    a = store.add(
        "Alice lives in Berlin",
        namespace="u",
        project="p",
        pinned=True,
        priority=2.0,
        tags=["home"],
        metadata={"k": 1},
        links=[base.id],
    )
    b = store.add("Alice lives in Berlin!", namespace="u", project="p", tags=["city"])
    assert b.action is WriteAction.UPDATED and b.id == a.id
    got = store.get(a.id, namespace="u")
    assert got.text == "Alice lives in Berlin!" and got.tags == ("city",)
    assert got.pinned and got.priority == 2.0 and got.metadata == {"k": 1} and got.links == (base.id,)


def test_an_explicit_id_of_a_superseded_memory_is_refused(store: MemoryStore) -> None:
    old = store.add("the office is on floor 2", namespace="u", id="office")
    new = store.supersede(old.id, "the office is on floor 5", namespace="u")
    with pytest.raises(InvalidInputError, match=f"superseded by '{new.id}'"):
        store.add("the office is on floor 3", namespace="u", id="office")
    assert store.get("office", namespace="u").text == "the office is on floor 2"


# ---------------------------------------------------------------- dedup_policy="update" in one batch
def test_update_policy_with_two_duplicates_of_a_stored_memory_in_one_batch(make_store) -> None:
    store = make_store(config={"dedup_policy": "update"})
    first = store.add("Alice likes the dark theme", namespace="u")
    out = store.add_many(
        [{"text": "Alice likes the dark  theme"}, {"text": "Alice likes the dark theme!"}], namespace="u"
    )
    assert [r.action for r in out] == [WriteAction.UPDATED, WriteAction.UPDATED]
    assert [r.id for r in out] == [first.id, first.id]
    assert [r.duplicate_of for r in out] == [first.id, first.id]
    assert store.count("u") == 1
    assert store.get(first.id, namespace="u").text == "Alice likes the dark theme!"  # the last record wins


def test_update_policy_with_a_duplicate_inside_the_batch_after_an_earlier_batch(make_store) -> None:
    store = make_store(config={"dedup_policy": "update"})
    out = store.add_many(
        [
            {"text": "a note about tea"},
            {"text": "a note about coffee"},
            {"text": "plans for Friday"},
            {"text": "plans for Friday."},
        ],
        namespace="u",
        batch_size=2,
    )
    assert [r.action for r in out] == [WriteAction.ADDED, WriteAction.ADDED, WriteAction.ADDED, WriteAction.UPDATED]
    assert out[2].id == out[3].id and out[3].duplicate_of == out[2].id
    assert out[2].text == out[3].text == "plans for Friday."  # both report the memory as it was stored
    assert store.count("u") == 3
