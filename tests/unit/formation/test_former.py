"""Memory formation: zero-LLM steps, extraction with provenance, every consolidation decision,
and bad LLM output that never costs a memory. Real LanceDB tables, a hash embedder."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_retrievers import ConfigError, HashEmbedder, InvalidInputError, MemoryStore
from memory_retrievers.formation import (
    Confidence,
    Decision,
    FormationConfig,
    LLMOutputWarning,
    MemoryFormer,
    find_contradictions,
    find_fuzzy_duplicates,
    importance,
)
from memory_retrievers.formation.parse import UnusableAnswer, parse_facts, parse_verdict

NS = "ana"
# A hash embedder scores paraphrases low: show every stored fact to consolidation.
ALL_SIMILAR = {"similar_min": -1.0}
TURNS = [
    "Ana: Hey Bo!",
    "Bo: Hi Ana, how was the move?",
    "Ana: Great, I moved to Lisbon last week and started a job at a bakery.",
    "Ana: By the way I do not like jazz any more.",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "db", embedder=HashEmbedder(64))
    yield s
    s.close()


class ScriptedLLM:
    """Answers extraction and consolidation prompts from functions; records every prompt."""

    def __init__(self, extraction: str | Callable[[str], str], consolidation: str = '{"action": "ADD"}') -> None:
        self.extraction = extraction
        self.consolidation = consolidation
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if prompt.startswith("Extract"):
            return self.extraction(prompt) if callable(self.extraction) else self.extraction
        if prompt.startswith("Summarise"):
            return "Ana told Bo about her move to Lisbon."
        return self.consolidation

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def facts_answer(*facts: dict) -> str:
    return "Here you go:\n```json\n" + json.dumps({"facts": list(facts)}) + "\n```"


LISBON = {"text": "Ana moved to Lisbon.", "about": "Ana", "sources": [3], "confidence": "explicit"}
BAKERY = {"text": "Ana works at a bakery in Lisbon.", "about": "Ana", "sources": ["[3]"], "confidence": "implied"}
GUESS = {"text": "Ana may open her own bakery.", "sources": [3], "confidence": "speculative"}


# --- zero-LLM steps ---------------------------------------------------------------------------


def test_importance_scores_fillers_low_and_information_high() -> None:
    low = ["Hey Mel! Good to see you!", "Caroline: Thanks!", "👍", "ok", "lol", "Bo: Hi!"]
    high = ["Ana: I moved to Lisbon on 3 May and started a job at a bakery.", "I am allergic to peanuts."]
    assert all(importance(t) <= 0.1 for t in low), [(t, importance(t)) for t in low]
    assert all(importance(t) >= 0.45 for t in high), [(t, importance(t)) for t in high]
    assert importance("I love the sunrise over the lake") > importance("sunrise")


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_importance_is_a_score_for_any_text(text: str) -> None:
    assert 0.0 <= importance(text) <= 1.0


def test_contradictions_are_opposite_statements_of_the_same_thing() -> None:
    texts = [
        "Ana likes jazz",  # 0
        "Ana does not like jazz",  # 1
        "Ana doesn't like jazz",  # 2
        "Bo is vegetarian",  # 3
        "Bo is no longer vegetarian",  # 4
        "Cy loves mornings",  # 5
        "Cy hates mornings",  # 6
        "Dee lives in Paris",  # 7
        "Dee lives in Rome",  # 8: a different fact, not a negation: not reported
        "Ana likes jazz",  # 9
    ]
    pairs = {(c.first, c.second) for c in find_contradictions(texts)}
    assert pairs == {(0, 1), (0, 2), (1, 9), (2, 9), (3, 4), (5, 6)}


@given(st.lists(st.sampled_from(["Ana likes jazz", "Bo eats meat", "Cy runs daily", "Dee reads"]), max_size=8))
@settings(max_examples=100, deadline=None)
def test_statements_without_negation_never_contradict(texts: list[str]) -> None:
    assert find_contradictions(texts) == []


def test_fuzzy_duplicates_find_paraphrases_but_not_changes() -> None:
    texts = [
        "Ana likes jazz music",  # 0
        "Ana really likes jazz music",  # 1: paraphrase of 0
        "The meeting is at 3pm on Friday",  # 2
        "The meeting is at 4pm on Friday",  # 3: a changed number is a change
        "Ana does not like jazz music",  # 4: a negation is a change
        "Bo adopted a dog named Rex in May",  # 5
        "Bo adopted a dog named Rex in May at the shelter near home",  # 6: contains 5
    ]
    found = {(d.keep, d.drop, d.reason) for d in find_fuzzy_duplicates(texts)}
    assert found == {(1, 0, "jaccard"), (6, 5, "substring")}


# --- parsing LLM answers ----------------------------------------------------------------------


def test_parse_facts_reads_fenced_json_and_drops_what_it_cannot_use() -> None:
    answer = facts_answer(LISBON, {"text": ""}, {"text": "Bo asked.", "sources": [99, "x"], "confidence": "sure"})
    facts, dropped = parse_facts(answer, n_turns=4)
    assert [f.text for f in facts] == ["Ana moved to Lisbon.", "Bo asked."]
    assert facts[0].sources == (2,) and facts[0].confidence is Confidence.EXPLICIT
    assert facts[1].sources == () and facts[1].confidence is Confidence.SPECULATIVE
    assert len(dropped) == 2


@pytest.mark.parametrize("answer", ["", "no idea", "{not json", '{"facts": 3}', "[1, 2"])
def test_parse_facts_refuses_unusable_answers(answer: str) -> None:
    with pytest.raises(UnusableAnswer):
        parse_facts(answer, n_turns=3)


@pytest.mark.parametrize(
    "answer",
    ['{"action": "MAYBE"}', '{"action": "UPDATE", "target": 7}', '{"action": "MERGE", "target": 1}', "[]"],
)
def test_parse_verdict_refuses_unusable_decisions(answer: str) -> None:
    with pytest.raises(UnusableAnswer):
        parse_verdict(answer, n_candidates=2)


def test_formation_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="drop_below"):
        FormationConfig(drop_below=2)
    with pytest.raises(ConfigError, match="bogus"):
        FormationConfig(bogus=1)


# --- the pipeline -----------------------------------------------------------------------------


def test_without_an_llm_turns_are_stored_with_importance_and_nothing_pretends(store: MemoryStore) -> None:
    report = MemoryFormer(store).form(TURNS, namespace=NS, session_id="s1")
    assert [m.text for m in report.turns] == TURNS
    assert report.facts == () and report.summary is None
    stored = store.list(NS, limit=10)
    assert {m.kind.value for m in stored} == {"message"} and len(stored) == 4
    by_text = {m.text: m for m in stored}
    assert by_text["Ana: Hey Bo!"].importance <= 0.1 < by_text[TURNS[2]].importance
    assert all(m.session_id == "s1" for m in stored)


def test_drop_below_leaves_out_only_low_importance_turns(store: MemoryStore) -> None:
    report = MemoryFormer(store, config={"drop_below": 0.2}).form(TURNS, namespace=NS)
    assert report.dropped_turns == ("Ana: Hey Bo!",)
    assert sorted(m.text for m in store.list(NS)) == sorted(TURNS[1:])


def test_facts_link_to_the_turns_they_came_from(store: MemoryStore) -> None:
    llm = ScriptedLLM(facts_answer(LISBON, BAKERY, GUESS))
    report = MemoryFormer(store, llm=llm, config={"summarize": True}).form(TURNS, namespace=NS, session_id="s1")
    source = report.turns[2]
    assert [o.fact.text for o in report.facts] == [LISBON["text"], BAKERY["text"], GUESS["text"]]
    assert report.dropped_facts == ()
    for outcome in report.facts[:2]:
        stored = store.get(outcome.memory.id, namespace=NS)
        assert stored.kind.value == "fact" and stored.links == (source.id,) and stored.session_id == "s1"
        assert stored.entities == ("ana",) and stored.metadata["formed_by"] == "extraction"
    assert report.summary is not None and report.summary.metadata["summary_of"] == "s1"
    assert "[3] Ana: Great, I moved to Lisbon" in llm.prompts[0]
    # Recall follows the fact to its source turn through the link channel.
    from memory_retrievers import MemoryRetriever

    res = MemoryRetriever(store, namespace=NS).recall("Where does Ana live now? Lisbon", k=10, explain=True)
    assert source.id in [m.id for m in res.memories]


def test_facts_under_min_confidence_are_dropped(store: MemoryStore) -> None:
    llm = ScriptedLLM(facts_answer(LISBON, GUESS))
    report = MemoryFormer(store, llm=llm, config={"min_confidence": "inferred"}).form(TURNS, namespace=NS)
    assert [o.fact.text for o in report.facts] == [LISBON["text"]]
    assert [f.text for f in report.dropped_facts] == [GUESS["text"]]
    assert store.count(NS, filter={"kinds": ["fact"]}) == 1


def test_a_speculative_fact_expires_unless_a_surer_one_confirms_it(make_store: Callable[..., MemoryStore]) -> None:
    from memory_retrievers.testing import ManualClock

    clock = ManualClock()
    store = make_store(clock=clock)
    guess = {"text": "Ana may open her own bakery.", "sources": [3], "confidence": "speculative"}
    other = {"text": "Ana may move to Madrid.", "sources": [3], "confidence": "speculative"}
    first = MemoryFormer(store, llm=ScriptedLLM(facts_answer(guess, other))).form(TURNS, namespace=NS)
    opening, moving = (o.memory for o in first.facts)
    assert opening.expires_at == clock() + timedelta(days=30) and moving.expires_at is not None
    # Ten days later Ana says it outright: consolidation finds the guess and the LLM says SKIP.
    clock.advance(days=10)
    sure = {"text": "Ana may open her own bakery.", "sources": [1], "confidence": "explicit"}
    confirm = ScriptedLLM(facts_answer(sure), '{"action": "SKIP", "target": 1}')
    (outcome,) = (
        MemoryFormer(store, llm=confirm, config={"similar_min": 0.99})
        .form(["Ana: I'm opening a bakery!"], namespace=NS)
        .facts
    )
    assert outcome.decision is Decision.SKIP and outcome.memory.id == opening.id
    confirmed = store.get(opening.id, namespace=NS)
    assert confirmed.expires_at is None and confirmed.metadata["confidence"] == "explicit"
    clock.advance(days=25)  # past the 30 days: the unconfirmed guess is gone, the confirmed one stays
    assert [m.text for m in store.list(NS, filter={"kinds": ["fact"]})] == [opening.text]


def _seeded(store: MemoryStore) -> str:
    return store.add("Ana lives in Porto.", namespace=NS, kind="fact", links=["old-source"]).id


def test_decision_add_stores_a_new_fact(store: MemoryStore) -> None:
    old = _seeded(store)
    llm = ScriptedLLM(facts_answer(LISBON), '{"action": "ADD"}')
    report = MemoryFormer(store, llm=llm, config=ALL_SIMILAR).form(TURNS, namespace=NS)
    assert report.count(Decision.ADD) == 1 and "NEW: Ana moved to Lisbon." in llm.prompts[1]
    assert store.get(old, namespace=NS).superseded_by is None
    assert store.count(NS, filter={"kinds": ["fact"]}) == 2


def test_decision_skip_adds_only_the_new_source(store: MemoryStore) -> None:
    old = _seeded(store)
    llm = ScriptedLLM(facts_answer(LISBON), '{"action": "SKIP", "target": 1}')
    report = MemoryFormer(store, llm=llm, config=ALL_SIMILAR).form(TURNS, namespace=NS)
    (outcome,) = report.facts
    assert outcome.decision is Decision.SKIP and outcome.memory.id == old == outcome.target
    assert store.get(old, namespace=NS).links == ("old-source", report.turns[2].id)
    assert store.count(NS, filter={"kinds": ["fact"]}) == 1


def test_decision_merge_supersedes_with_the_merged_text_and_keeps_the_chain(store: MemoryStore) -> None:
    old = _seeded(store)
    answer = '{"action": "MERGE", "target": 1, "text": "Ana lived in Porto and moved to Lisbon."}'
    report = MemoryFormer(store, llm=ScriptedLLM(facts_answer(LISBON), answer), config=ALL_SIMILAR).form(
        TURNS, namespace=NS
    )
    (outcome,) = report.facts
    new = store.get(outcome.memory.id, namespace=NS)
    assert new.text == "Ana lived in Porto and moved to Lisbon." and new.supersedes == old
    assert new.metadata["consolidated_from"] == [old] and new.metadata["decision"] == "MERGE"
    assert set(new.links) == {"old-source", report.turns[2].id}
    assert store.get(old, namespace=NS).superseded_by == new.id  # kept in history, out of recall
    assert [m.id for m in store.list(NS, filter={"kinds": ["fact"]})] == [new.id]


@pytest.mark.parametrize("decision", ["UPDATE", "INVALIDATE"])
def test_decisions_update_and_invalidate_replace_the_target(store: MemoryStore, decision: str) -> None:
    old = _seeded(store)
    llm = ScriptedLLM(facts_answer(LISBON), json.dumps({"action": decision, "target": 1}))
    (outcome,) = MemoryFormer(store, llm=llm, config=ALL_SIMILAR).form(TURNS, namespace=NS).facts
    new = store.get(outcome.memory.id, namespace=NS)
    assert outcome.decision.value == decision and new.text == "Ana moved to Lisbon."
    assert new.supersedes == old and new.metadata["replaces"] == old
    assert new.links == (outcome.memory.links[0],) and store.get(old, namespace=NS).superseded_by == new.id


def test_a_contradicted_memory_is_named_on_the_new_fact(store: MemoryStore) -> None:
    old = store.add("Ana likes jazz.", namespace=NS, kind="fact").id
    fact = {"text": "Ana does not like jazz.", "sources": [4]}
    (outcome,) = (
        MemoryFormer(store, llm=ScriptedLLM(facts_answer(fact)), config=ALL_SIMILAR).form(TURNS, namespace=NS).facts
    )
    assert outcome.contradicts == (old,)
    assert store.get(outcome.memory.id, namespace=NS).metadata["contradicts"] == [old]


# --- a bad LLM never costs a memory -----------------------------------------------------------


def _raises(prompt: str) -> str:
    raise RuntimeError("model overloaded")


@pytest.mark.parametrize(
    "extraction", ["I cannot help with that.", '{"facts": "many"}', "```json\n{oops\n```", _raises]
)
def test_unusable_extraction_warns_and_keeps_every_turn(store: MemoryStore, extraction: object) -> None:
    with pytest.warns(LLMOutputWarning, match="fact extraction"):
        report = MemoryFormer(store, llm=ScriptedLLM(extraction)).form(TURNS, namespace=NS)  # type: ignore[arg-type]
    assert report.facts == () and len(report.turns) == 4
    assert store.count(NS) == 4


@pytest.mark.parametrize("consolidation", ["whatever", '{"action": "UPDATE", "target": 9}', '{"action": "MERGE"}'])
def test_unusable_consolidation_warns_and_adds_the_fact(store: MemoryStore, consolidation: str) -> None:
    old = _seeded(store)
    llm = ScriptedLLM(facts_answer(LISBON), consolidation)
    with pytest.warns(LLMOutputWarning, match="consolidation"):
        (outcome,) = MemoryFormer(store, llm=llm, config=ALL_SIMILAR).form(TURNS, namespace=NS).facts
    assert outcome.decision is Decision.ADD and store.get(outcome.memory.id, namespace=NS).text == LISBON["text"]
    assert store.get(old, namespace=NS).superseded_by is None


def test_an_llm_that_never_answers_times_out_and_the_turns_stay(store: MemoryStore) -> None:
    class Hanging:
        def complete(self, prompt: str) -> str:
            raise AssertionError("async path expected")

        async def acomplete(self, prompt: str) -> str:
            await asyncio.sleep(3600)
            return ""

    former = MemoryFormer(store, llm=Hanging(), config={"llm_timeout_s": 0.2})
    with pytest.warns(LLMOutputWarning, match="timed out"):
        report = former.form(TURNS, namespace=NS)
    assert len(report.turns) == 4 and report.facts == ()


def test_bad_messages_are_refused_before_anything_is_stored(store: MemoryStore) -> None:
    former = MemoryFormer(store)
    with pytest.raises(InvalidInputError, match=r"messages\[1\]"):
        former.form(["fine", 42], namespace=NS)  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="messages must be a list"):
        former.form("just a string", namespace=NS)
    with pytest.raises(ConfigError):
        MemoryFormer(store, config=3)  # type: ignore[arg-type]
    assert store.count(NS) == 0


def test_already_stored_turns_are_used_as_they_are(store: MemoryStore) -> None:
    stored = store.add_many([{"text": t, "kind": "message"} for t in TURNS], namespace=NS)
    llm = ScriptedLLM(facts_answer(LISBON))
    report = asyncio.run(MemoryFormer(store, llm=llm).aform(stored, namespace=NS))
    assert store.count(NS) == 5 and report.facts[0].memory.links == (stored[2].id,)


def test_no_warning_when_everything_works(store: MemoryStore) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MemoryFormer(store, llm=ScriptedLLM(facts_answer(LISBON))).form(TURNS, namespace=NS)


def test_a_fact_the_store_already_holds_word_for_word_is_reported_as_folded_into_it(store: MemoryStore) -> None:
    old = store.add("Ana moved to Lisbon.", namespace=NS, kind="fact").id
    # No LLM judging (consolidation off): the store's exact-duplicate check decides, and the
    # outcome says what it did (the new fields merged into the known memory), not "ADD".
    former = MemoryFormer(store, llm=ScriptedLLM(facts_answer(LISBON)), config={"consolidate": False})
    report = former.form(TURNS, namespace=NS)
    (outcome,) = report.facts
    assert outcome.decision is Decision.UPDATE and outcome.target == old == outcome.memory.id
    assert store.count(NS, filter={"kinds": ["fact"]}) == 1
    assert report.turns[2].id in store.get(old, namespace=NS).links


# --- lifecycle tiers ----------------------------------------------------------------------------


def test_a_formed_fact_is_validated_by_use_and_archived_when_unused(make_store: Callable[..., MemoryStore]) -> None:
    from memory_retrievers import MemoryRetriever
    from memory_retrievers.testing import ManualClock

    clock = ManualClock()
    store = make_store(clock=clock)
    former = MemoryFormer(store, llm=ScriptedLLM(facts_answer(LISBON, BAKERY)), config={"validate_after_uses": 2})
    lisbon, bakery = (o.memory for o in former.form(TURNS, namespace=NS).facts)
    assert lisbon.lifecycle == bakery.lifecycle == "candidate"
    assert former.review_lifecycle(NS) == {}  # unused, but not for long

    retriever = MemoryRetriever(store, namespace=NS)
    for _ in range(2):  # each recall counts an access of what it returns
        retriever.recall("Ana moved to Lisbon.", k=1, kinds=["fact"])
    store.admin.flush_access()
    assert store.get(lisbon.id, namespace=NS).access_count >= 2
    assert former.review_lifecycle(NS) == {"validated": 1}
    assert store.get(lisbon.id, namespace=NS).lifecycle == "validated"

    clock.advance(days=181)  # neither used since: both archived, raw turns untouched
    assert former.review_lifecycle(NS) == {"archived": 2}
    facts_now = store.list(NS, filter={"kinds": ["fact"]})
    assert facts_now == [] and store.count(NS) == len(TURNS)
    recalled = MemoryRetriever(store, namespace=NS).recall("Where does Ana live? Lisbon bakery", k=10)
    assert {m.id for m in recalled.memories}.isdisjoint({lisbon.id, bakery.id})
    archived = store.list(NS, filter={"kinds": ["fact"], "include_archived": True})
    assert {m.lifecycle for m in archived} == {"archived"}
    store.update(lisbon.id, namespace=NS, lifecycle="validated")  # brought back on purpose
    assert [m.id for m in store.list(NS, filter={"kinds": ["fact"]})] == [lisbon.id]


def test_a_confirmation_validates_a_candidate(store: MemoryStore) -> None:
    first = MemoryFormer(store, llm=ScriptedLLM(facts_answer(LISBON))).form(TURNS, namespace=NS)
    (candidate,) = (o.memory for o in first.facts)
    again = ScriptedLLM(facts_answer(LISBON), '{"action": "SKIP", "target": 1}')
    (outcome,) = (
        MemoryFormer(store, llm=again, config={"similar_min": 0.99})
        .form(["Ana: Lisbon is home now"], namespace=NS)
        .facts
    )
    assert outcome.decision is Decision.SKIP and store.get(candidate.id, namespace=NS).lifecycle == "validated"


def test_lifecycle_values_are_checked(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="lifecycle"):
        store.add("x", namespace=NS, lifecycle="forgotten")
    assert store.count(NS) == 0


# --- scheduled duplicate review -----------------------------------------------------------------


def test_duplicate_review_reports_then_folds_without_deleting(store: MemoryStore) -> None:
    short = store.add("Bo adopted a dog named Rex in May", namespace=NS, kind="fact", links=["t1"], tags=["pets"])
    long = store.add("Bo adopted a dog named Rex in May at the shelter", namespace=NS, kind="fact", links=["t2"])
    other = store.add("Bo adopted a dog named Rex in June", namespace=NS, kind="fact")  # a change, not a duplicate
    store.add("Bo adopted a dog named Rex in May", namespace=NS, kind="message")  # chat turns are never reviewed
    former = MemoryFormer(store)

    (finding,) = former.review_duplicates(NS)  # dry run: nothing changes
    assert (finding.keep.id, finding.drop.id, finding.reason, finding.applied) == (
        long.id,
        short.id,
        "substring",
        False,
    )
    assert store.count(NS) == 4

    (applied,) = former.review_duplicates(NS, apply=True)
    assert applied.applied
    kept = store.get(long.id, namespace=NS)
    assert kept.links == ("t2", "t1") and kept.tags == ("pets",)
    dropped = store.get(short.id, namespace=NS)
    assert dropped.lifecycle == "archived" and dropped.metadata["duplicate_of"] == long.id
    assert {m.id for m in store.list(NS, filter={"kinds": ["fact"]})} == {long.id, other.id}
    assert former.review_duplicates(NS) == []  # the archived one is out of the next pass


def test_form_later_refuses_bad_input_in_the_callers_thread(store: MemoryStore) -> None:
    former = MemoryFormer(store, llm=ScriptedLLM(facts_answer(LISBON)))
    with pytest.raises(InvalidInputError, match="priority"):
        former.form_later(["fine", {"text": "bad", "priority": "high"}], namespace=NS)
    with pytest.raises(InvalidInputError, match=r"messages\[0\]"):
        former.form_later([None], namespace=NS)  # type: ignore[list-item]
    former.flush(timeout=30)
    assert store.count(NS) == 0
    former.close()


def test_threads_writing_and_recalling_while_the_former_works_lose_nothing(store: MemoryStore) -> None:
    import threading

    from memory_retrievers import MemoryRetriever

    def answer(prompt: str) -> str:
        if not prompt.startswith("Extract"):
            return '{"action": "ADD"}'
        said = [line.split("] ", 1)[1] for line in prompt.splitlines() if line.startswith("[1] ")]
        return json.dumps({"facts": [{"text": f"Fact about {said[0]}", "sources": [1]}]})

    former = MemoryFormer(store, llm=answer, config={"consolidate": False})
    retriever = MemoryRetriever(store, namespace=NS)
    errors: list[BaseException] = []

    def chat(worker: int) -> None:
        try:
            for turn in range(5):
                stored = store.add_many([{"text": f"user {worker} says thing {turn}", "kind": "message"}], namespace=NS)
                former.form_later(stored, namespace=NS, session_id=f"w{worker}")
                retriever.recall(f"thing {turn}", k=5)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=chat, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    former.flush(timeout=60)
    assert errors == []
    turns = {m.id: m for m in store.list(NS, filter={"kinds": ["message"]}, limit=100)}
    facts = store.list(NS, filter={"kinds": ["fact"]}, limit=100)
    assert len(turns) == 20 and len(facts) == 20
    for fact in facts:  # each fact links to the very turn it was formed from
        (source,) = fact.links
        worker = turns[source].text.split()[1]
        assert fact.text == f"Fact about {turns[source].text}" and fact.session_id == f"w{worker}"
    former.close()
