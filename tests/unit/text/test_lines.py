"""What a block line says: copies, questions and speakers (memory_retrievers.text.lines), and long queries."""

from __future__ import annotations

import doctest
from types import SimpleNamespace

import pytest

import memory_retrievers.recall.long_query as long_query_module
import memory_retrievers.text.lines as lines_module
import memory_retrievers.text.speakers as speakers_module
from memory_retrievers.recall.long_query import HEAD_SHARE, searched_query
from memory_retrievers.recall.stage_searches import statements_cut
from memory_retrievers.text.lines import (
    asks,
    body_of,
    content_word_count,
    line_asks,
    line_facts,
    line_key,
    role_of,
    speaker_label,
)
from memory_retrievers.text.speakers import speaker_of


@pytest.mark.parametrize("module", [lines_module, long_query_module, speakers_module])
def test_docstring_examples_hold(module: object) -> None:
    failed, attempted = doctest.testmod(module)  # type: ignore[arg-type]
    assert attempted > 0 and failed == 0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("user: thanks, that's helpful!", "user: Thanks, that's helpful."),
        ("user: thanks, that's helpful!", "user: thanks so much, that's helpful"),
        ("assistant: You're welcome! Anything else?", "assistant: you're welcome!! anything else?"),
        ("user: ok", "user: OK!"),
        ("Caroline: I love painting.", "user: Caroline: I love painting!"),  # a speaker's words, however stored
        ("Caroline: I love painting sunsets", "Caroline: I love painting sunset"),  # a plain plural
    ],
)
def test_lines_that_say_the_same_share_a_key(a: str, b: str) -> None:
    assert line_key(a) == line_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("user: thanks!", "assistant: thanks!"),  # another speaker
        ("Caroline: I love painting", "Melanie: I love painting"),
        ("user: I moved to Berlin", "user: I moved to Berlin?"),  # a question is not its statement
        ("user: the meeting is at 3pm", "user: the meeting is at 2pm"),  # a number counts
        ("user: I like it", "user: I don't like it"),  # a negation counts
        ("user: ok", "user: yes"),  # lines of stop words alone still differ by their words
    ],
)
def test_lines_that_differ_keep_their_own_keys(a: str, b: str) -> None:
    assert line_key(a) != line_key(b)


def test_roles_speakers_and_bodies() -> None:
    assert role_of("user: hi") == "user" and role_of("Caroline: hi") is None and role_of("hi: ") is None
    assert speaker_label("user: Caroline: hi") == speaker_label("Caroline: hi") == "caroline"
    assert speaker_label("assistant: hi") == "assistant" and speaker_label("hello") == ""
    assert body_of("user: Caroline: I went to the group.") == "I went to the group."
    assert body_of("assistant: Noted.") == "Noted."
    # A speaker named after a role label keeps the label: only lower-case labels are roles.
    assert speaker_of("user: Caroline: hi") == "Caroline" and speaker_of("user: hi") is None


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("user: Where does my sister live?", True),
        ("user: Remind me, when did Caroline go to the support group?", True),
        ("how do I reset it", True),
        ("My sister Carla lives in Lisbon.", False),
        ("Caroline: Is that right? Yes, I went on Monday.", False),  # answered in the same line
        ("user: thanks", False),
    ],
)
def test_questions_are_told_from_statements(text: str, question: bool) -> None:
    assert asks(text) is question


def test_chatter_has_fewer_content_words_than_content() -> None:
    assert content_word_count("user: thanks!") <= 1
    assert content_word_count("user: my daughter Mia starts school in September") >= 4


def test_a_short_query_is_searched_as_it_is() -> None:
    assert searched_query("x" * 50, 100).text == "x" * 50 and searched_query("x" * 50, 100).note is None


def test_a_long_query_is_searched_by_its_opening_and_end_at_word_boundaries() -> None:
    log = "ERROR worker-3 timeout connecting to db " * 300
    query = f"Here is the log from last night: {log} Why does the nightly export fail?"
    searched = searched_query(query, 1_000)
    assert searched.text.startswith("Here is the log from last night:")
    assert searched.text.endswith("Why does the nightly export fail?")
    head, tail = searched.text.split("\n…\n")
    assert len(head) <= int(1_000 * HEAD_SHARE) and len(head) + len(tail) <= 1_000
    # Never half a word: every word of each part is a word of the query.
    words = set(query.split())
    assert set(head.split()) <= words and set(tail.split()) <= words
    assert searched.note is not None and f"{len(query):,} characters" in searched.note


def test_a_channel_cut_reads_whether_each_hit_asks_and_no_other_fact_of_it() -> None:
    texts = ["user: Where does she live now?", "She moved to Lisbon.", "how do I reset it", "It works."]
    assert [line_asks(t) for t in texts] == [asks(t) for t in texts] == [True, False, True, False]
    source = SimpleNamespace(memories_of=lambda ids: [SimpleNamespace(text=texts[int(i)]) for i in ids])
    line_facts.cache_clear()
    ids, ranks = statements_cut(source, ("0", "1", "2", "3"), None, 1)  # type: ignore[arg-type]
    assert ids == ("0", "1") and ranks is not None  # up to the first statement, the question before kept
    # The full facts (~0.2 ms a text) are left to the few hits that are fused.
    assert line_facts.cache_info().currsize == 0


@pytest.mark.parametrize(
    "text",
    [
        "user: Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
        "assistant: ok",
        "user: Where does my sister live?",
        "\uff2d\uff59 \uff53\uff49\uff53\uff54\uff45\uff52 lives in Lisbon",  # full-width (NFKC differs)
        "The ﬁle editors didn't open; the files did",  # a ligature, a negation, plurals
        "the the the, a an",
    ],
)
def test_line_facts_say_what_the_single_functions_say(text: str) -> None:
    facts = line_facts.__wrapped__(text)
    assert facts.key == line_key(text)
    assert facts.asks == asks(text) == line_asks(text)
    assert facts.content_words == content_word_count(text)
