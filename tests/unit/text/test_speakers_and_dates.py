"""The query cues: who said a turn, which speakers a query names, which dates it names."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_retrievers.text.dates import DateSpan, mentioned_dates
from memory_retrievers.text.query import analyze
from memory_retrievers.text.speakers import may_name_a_speaker, named_speakers, speaker_of, strip_speaker, without_names

UTC = timezone.utc


@pytest.mark.parametrize(
    ("text", "speaker"),
    [
        ("Caroline: I went to the support group.", "Caroline"),
        ("Dr. Smith: take two a day", "Dr. Smith"),
        ("Mary Ann: hi", "Mary Ann"),
        ("user: lower-case roles are not names", None),
        ("no speaker here", None),
        ("Caroline:", None),  # a label with nothing said
        ("Caroline said: hi", "Caroline said"),  # the format is the caller's; a label is a label
    ],
)
def test_speaker_of(text: str, speaker: str | None) -> None:
    assert speaker_of(text) == speaker
    assert strip_speaker(text) == (text.split(": ", 1)[1] if speaker else text)


def test_named_speakers_are_capitalised_whole_words_in_query_order() -> None:
    speakers = ["Caroline", "Melanie", "Mary Ann", "Mel"]
    assert named_speakers("What did Melanie tell CAROLINE?", speakers) == ("Melanie", "Caroline")
    assert named_speakers("What did melanie tell caroline?", speakers) == ()  # lower case: a word, maybe
    assert named_speakers("What did melanie tell Melanie?", speakers) == ("Melanie",)
    assert named_speakers("What are Melanie's kids like?", speakers) == ("Melanie",)
    assert named_speakers("Melanie\u2019s kids", speakers) == ("Melanie",)
    assert named_speakers("Is Mary  ann coming?", speakers) == ("Mary Ann",)
    assert named_speakers("What do Melanies do?", speakers) == ()  # not a whole word
    assert named_speakers("caramel cake", speakers) == ()
    assert named_speakers("anything", []) == ()
    # A common word opening the query is not a name; the same word later, capitalised, is.
    assert named_speakers("Will it rain?", ["Will"]) == ()
    assert named_speakers("What did Will say?", ["Will"]) == ("Will",)
    assert named_speakers("Melanie, what did you paint?", ["Melanie"]) == ("Melanie",)


_WORDS = st.sampled_from(
    [
        "Will",
        "will",
        "Melanie",
        "melanie's",
        "Melanie's",
        "what",
        "What",
        "Dr.",
        "Smith",
        "it",
        "O'Brien",
        "-Bob",
        "Bob",
    ]
)


@given(st.lists(_WORDS, max_size=6), st.sampled_from(["", " ", "  "]), st.sampled_from(["", "?", "."]))
def test_a_query_that_names_a_speaker_always_passes_the_cheap_precheck(words: list[str], lead: str, end: str) -> None:
    # The precheck lets recall skip reading the namespace's speakers: it must never hide a name.
    query = lead + " ".join(words) + end
    if named_speakers(query, ["Will", "Melanie", "Will Smith", "Dr. Smith", "O'Brien", "Bob", "Smith"]):
        assert may_name_a_speaker(query)


def test_the_precheck_skips_queries_without_a_capitalised_name() -> None:
    assert not may_name_a_speaker("what did she paint last week?")
    assert not may_name_a_speaker("Will it rain on the trip?")  # a common first word names nobody
    assert not may_name_a_speaker("")
    assert may_name_a_speaker("what did Melanie paint?")
    assert may_name_a_speaker("Melanie painted what?")


def test_without_names_removes_names_and_possessives_but_never_empties_the_query() -> None:
    assert without_names("What does Melanie do to destress?", ["Melanie"]) == "What does do to destress?"
    assert without_names("What are Melanie's kids like?", ["Melanie"]) == "What are kids like?"
    assert without_names("melanie and Caroline, friends?", ["Melanie", "Caroline"]) == "and, friends?"
    assert without_names("Melanie?", ["Melanie"]) == "Melanie?"  # nothing would remain


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("What dish did Nate make on 9 November, 2022?", [("2022-11-09", "2022-11-10")]),
        ("on October 13, 2023?", [("2023-10-13", "2023-10-14")]),
        ("March 3rd, 2021 and the 2nd of March 2021", [("2021-03-03", "2021-03-04"), ("2021-03-02", "2021-03-03")]),
        ("Where did Joanna travel in July 2022?", [("2022-07-01", "2022-08-01")]),
        ("in December 2022", [("2022-12-01", "2023-01-01")]),
        ("Sept. 2020", [("2020-09-01", "2020-10-01")]),
        ("in May 2022", [("2022-05-01", "2022-06-01")]),
        ("what may 2022 bring", [("2022-01-01", "2023-01-01")]),  # "may" the verb is not a month
        ("2022-11-09", [("2022-11-09", "2022-11-10")]),
        ("in 2022 and again in 2022", [("2022-01-01", "2023-01-01")]),  # no repeats
        ("31 February 2022", []),  # not a date
        ("call 555-2022 or room 12022", []),  # numbers that are not years
        ("what did she like?", []),
    ],
)
def test_mentioned_dates(query: str, spans: list[tuple[str, str]]) -> None:
    got = [(s.start.date().isoformat(), s.end.date().isoformat()) for s in mentioned_dates(query)]
    assert got == spans
    assert analyze(query).dates == mentioned_dates(query)


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2099, 12, 31)), st.sampled_from(["dmy", "mdy", "iso"]))
def test_a_written_day_is_read_back_as_that_day(day: date, style: str) -> None:
    month = day.strftime("%B")
    text = {
        "dmy": f"what happened on {day.day} {month}, {day.year}?",
        "mdy": f"what happened on {month} {day.day}, {day.year}?",
        "iso": f"what happened on {day.isoformat()}?",
    }[style]
    (span,) = mentioned_dates(text)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert span == DateSpan(start, start + timedelta(days=1))
    assert span.contains(start) and span.contains(start.replace(tzinfo=None) + timedelta(hours=23, minutes=59))
    assert not span.contains(start + timedelta(days=1)) and not span.contains(start - timedelta(microseconds=1))
    assert span.contains_seconds(start.timestamp()) and not span.contains_seconds(span.end.timestamp())
