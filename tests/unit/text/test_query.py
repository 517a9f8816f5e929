from memory_retrievers.llm import parse_rewrites
from memory_retrievers.text.query import analyze, feedback_terms, keywords


def test_keywords_drop_stop_words_and_repeats() -> None:
    assert keywords("When did Caroline go to the LGBTQ support group, the group?") == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]


def test_analyze_finds_entities_and_cues() -> None:
    f = analyze("When did Caroline go to the LGBTQ support group?")
    assert f.entities == ("Caroline", "LGBTQ") and f.temporal and not f.recency and f.intent == "temporal"
    f = analyze("What are all the hobbies Melanie enjoys?")
    assert f.aggregation and f.preference and f.intent == "preference" and f.entities == ("Melanie",)
    f = analyze("What is the latest on the project?")
    assert f.recency and f.entities == () and f.intent == "general"
    assert analyze("Did we meet in 2023?").temporal  # a year is a temporal cue


def test_feedback_terms_need_two_supporting_hits() -> None:
    texts = ["Caroline joined a pottery class", "The pottery class meets on Fridays", "Caroline likes tea"]
    # "pottery" and "class" appear in two hits; "caroline" is already in the query; singletons are noise
    assert feedback_terms(["caroline"], texts, 3) == ["pottery", "class"]
    assert feedback_terms(["caroline"], texts, 1) == ["pottery"]
    assert feedback_terms([], ["one text only"], 3) == []


def test_parse_rewrites_strips_bullets_and_duplicates() -> None:
    answer = "1. dark mode editor\n- Dark Mode Editor\n* favourite colour scheme\n\nWhat theme?\n" + "x" * 400
    assert parse_rewrites(answer, "What theme?", 5) == ["dark mode editor", "favourite colour scheme"]
    assert parse_rewrites("a\nb\nc", "q", 2) == ["a", "b"]
