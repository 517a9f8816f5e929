"""How the context filler tells a store-filled context from a caller's, on rows written before the
``context_auto`` column existed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_retrievers.storage.context_fill import _legacy_auto, _made_of
from memory_retrievers.text.context import window_contexts

texts = st.lists(st.text(alphabet="ab \n", min_size=1, max_size=8), min_size=1, max_size=6, unique=True)


@given(texts, st.data())
def test_any_window_of_the_session_is_recognised_as_filled(turns: list[str], data: st.DataObject) -> None:
    window = data.draw(st.integers(1, 3))
    for i, context in window_contexts(turns, window).items():
        if context:
            assert _made_of(context, set(turns)), (turns, i, context)


def test_a_callers_own_words_are_not_taken_for_filled() -> None:
    session = {"I adopted a cat", "She is three"}
    assert not _made_of("I adopted a dog", session)
    assert not _made_of("I adopted a cat and more", session)
    assert not _made_of("I adopted a cat\nShe is three\n", session)  # a trailing line of nothing
    assert _made_of("I adopted a cat\nShe is three", session)


def test_only_legacy_rows_are_judged_by_content() -> None:
    turns = [
        {"id": "a", "text": "x", "context": "y", "context_auto": None},
        {"id": "b", "text": "y", "context": "mine", "context_auto": None},
        {"id": "c", "text": "z", "context": "mine", "context_auto": True},
        {"id": "d", "text": "w", "context": None, "context_auto": None},
    ]
    assert _legacy_auto(turns, [{"id": "gone", "text": "mine"}]) == {"a", "b", "d"}
    assert _legacy_auto(turns, []) == {"a", "d"}
