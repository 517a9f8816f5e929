"""Issue 27, items 5 and 9: forget is a barrier for formation and queued writes, and one bad LLM
item never aborts formation. Real LanceDB tables, a hash embedder, fake LLMs that block on cue."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryStore, NamespaceForgottenError, QueueFullError
from memory_retrievers.formation import FormationConfig, LLMOutputWarning, MemoryFormer
from memory_retrievers.store.barrier import Ticket, holding

NS = "ana"
TURNS = ["Ana: I have news.", "Ana: I was diagnosed with HIV last month and I started treatment."]
FACT = {"text": "Ana has HIV and started treatment.", "about": "Ana", "sources": [2], "confidence": "explicit"}
WAIT_S = 30.0


def facts_answer(*facts: dict[str, object]) -> str:
    return json.dumps({"facts": list(facts)})


class GatedLLM:
    """Answers at once, except that the extraction call waits until ``release`` is set."""

    def __init__(self, extraction: str) -> None:
        self.extraction = extraction
        self.entered = threading.Event()
        self.release = threading.Event()
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if prompt.startswith("Extract"):
            self.entered.set()
            assert self.release.wait(WAIT_S), "the test never released the LLM"
            return self.extraction
        if prompt.startswith("Summarise"):
            return "Ana shared health news."
        return '{"action": "ADD"}'

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.complete, prompt)


class GatedEmbedder(HashEmbedder):
    """A hash embedder whose document embedding of ``slow_text`` waits until ``release`` is set."""

    def __init__(self, slow_text: str) -> None:
        super().__init__(32)
        self.slow_text = slow_text
        self.entered = threading.Event()
        self.release = threading.Event()

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.slow_text in texts:
            self.entered.set()
            assert await asyncio.to_thread(self.release.wait, WAIT_S), "the test never released the embedder"
        return self.embed_documents(texts)


def _count_all(store: MemoryStore, namespace: str) -> int:
    filt = {"include_superseded": True, "include_archived": True, "include_expired": True}
    return store.count(namespace, filter=filt)


# --- item 5: forget is a barrier ---------------------------------------------------------------


def test_item5_formation_in_flight_stores_nothing_after_forget(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    llm = GatedLLM(facts_answer(FACT))
    former = MemoryFormer(store, llm=llm, config={"summarize": True})
    running = former.form_later(TURNS, namespace=NS, session_id="s1")
    queued = former.form_later(["Ana: and my new address is 5 Rua Augusta."], namespace=NS)
    assert llm.entered.wait(WAIT_S)  # the first run's turns are stored; its LLM call is running
    store.add("Bo likes tea.", namespace="bo")
    forgotten = store.forget(NS)
    assert forgotten == len(TURNS)
    llm.release.set()
    former.flush(WAIT_S)
    store.flush()
    assert _count_all(store, NS) == 0
    for future in (running, queued):
        error = future.exception(WAIT_S)
        assert isinstance(error, NamespaceForgottenError)
        assert error.namespace == NS
    # Nothing of the forgotten user went to the LLM after the forget (no summary, no second run).
    assert len(llm.prompts) == 1 and llm.prompts[0].startswith("Extract")
    assert [m.text for m in store.list("bo")] == ["Bo likes tea."]  # other namespaces are untouched
    # A conversation handed over after the forget is formed as usual.
    report = former.form(["Ana: I like green tea."], namespace=NS)
    assert report.turns and report.facts
    assert report.summary is not None
    assert _count_all(store, NS) == 1 + len(report.facts) + 1
    former.close()


def test_item5_an_async_form_racing_forget_stores_nothing_after_it(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    llm = GatedLLM(facts_answer(FACT))
    former = MemoryFormer(store, llm=llm)
    with ThreadPoolExecutor(1) as pool:
        formed = pool.submit(former.form, TURNS, namespace=NS)
        assert llm.entered.wait(WAIT_S)
        store.forget(NS)
        llm.release.set()
        with pytest.raises(NamespaceForgottenError, match="forgotten"):
            formed.result(WAIT_S)
    assert _count_all(store, NS) == 0


def test_item5_add_later_queued_behind_a_slow_write_is_deleted_by_forget(
    make_store: Callable[..., MemoryStore],
) -> None:
    embedder = GatedEmbedder("Bo: a slow write.")
    store = make_store(embedder=embedder)
    slow = store.add_later("Bo: a slow write.", namespace="bo")
    assert embedder.entered.wait(WAIT_S)  # the queue's consumer is inside that write
    pending = [store.add_later(f"Ana: secret {i}", namespace=NS) for i in range(3)]
    with ThreadPoolExecutor(1) as pool:
        forget = pool.submit(store.forget, NS)
        time.sleep(0.3)  # forget is queued behind the slow write and the three pending ones
        assert not forget.done()
        embedder.release.set()
        deleted = forget.result(WAIT_S)
    store.flush()
    after = store.add_later("Ana: after the forget.", namespace=NS).result(WAIT_S)
    assert slow.result(WAIT_S).text == "Bo: a slow write."
    for write in pending:  # queued before the forget: committed before it, then deleted by it
        assert write.result(WAIT_S).namespace == NS
    assert deleted == len(pending)
    assert [m.id for m in store.list(NS)] == [after.id]  # a write queued after the forget stays


def test_item5_every_kind_of_write_from_before_a_forget_is_refused_after_it(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store()
    kept = store.add("Ana likes tea.", namespace=NS)
    early = store._forget_ticket(NS)  # work handed over before the forget
    store.forget(NS)
    late = store._forget_ticket(NS)  # and after it

    async def writes(ticket: Ticket) -> list[BaseException | None]:
        outcomes: list[BaseException | None] = []
        with holding(ticket):
            for write in (
                lambda: store.aadd("Ana has HIV.", namespace=NS),
                lambda: store.aupdate(kept.id, namespace=NS, text="Ana likes coffee."),
                lambda: store.asupersede(kept.id, {"text": "Ana likes juice."}, namespace=NS),
                lambda: store.adelete([kept.id], namespace=NS, missing_ok=True),
            ):
                try:
                    await write()
                    outcomes.append(None)
                except Exception as exc:
                    outcomes.append(exc)
        return outcomes

    refused = asyncio.run(writes(early))
    assert all(isinstance(e, NamespaceForgottenError) for e in refused), refused
    assert _count_all(store, NS) == 0
    allowed = asyncio.run(writes(late))
    assert not isinstance(allowed[0], NamespaceForgottenError) and allowed[0] is None
    assert [m.text for m in store.list(NS)] == ["Ana has HIV."]


# --- item 9: one bad LLM item never aborts formation ------------------------------------------


GOOD = {"text": "Ana lives in Lisbon.", "about": "Ana", "sources": [1], "confidence": "explicit"}


@pytest.mark.parametrize(
    ("bad", "kept_without_about"),
    [
        ({"text": "Ana likes \ud800 tea.", "sources": [1]}, False),  # a lone surrogate
        ({"text": "Ana likes jazz.", "about": "A" * 5000, "sources": [1]}, True),  # an over-long entity
        ({"text": "Ana likes cats.", "about": "Ana\x00", "sources": [1]}, True),
    ],
)
def test_item9_one_bad_llm_item_is_reported_and_the_good_ones_are_kept(
    make_store: Callable[..., MemoryStore], bad: dict[str, object], kept_without_about: bool
) -> None:
    store = make_store()
    llm = GatedLLM(facts_answer(GOOD, bad))
    llm.release.set()
    report = MemoryFormer(store, llm=llm).form(["Ana: I live in Lisbon.", "Ana: more"], namespace=NS)
    texts = {o.fact.text for o in report.facts}
    assert GOOD["text"] in texts
    if kept_without_about:
        assert bad["text"] in texts
        assert report.notes and "about" in report.notes[0]
    else:
        assert len(report.rejected_facts) == 1
        assert "surrogate" in report.rejected_facts[0].reason or "text" in report.rejected_facts[0].reason
    stored = {m.text for m in store.list(NS)}
    assert GOOD["text"] in stored


def test_item9_an_unstorable_summary_is_reported_and_the_facts_are_kept(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()

    class LongSummary(GatedLLM):
        def complete(self, prompt: str) -> str:
            if prompt.startswith("Summarise"):
                return "word " * 200_001  # over StoreConfig.max_text_chars (1,000,000)
            return super().complete(prompt)

    llm = LongSummary(facts_answer(GOOD))
    llm.release.set()
    report = MemoryFormer(store, llm=llm, config={"summarize": True}).form(["Ana: I live in Lisbon."], namespace=NS)
    assert report.summary is None
    assert report.rejected_summary is not None and "summary" in report.rejected_summary
    assert [o.fact.text for o in report.facts] == [GOOD["text"]]


def test_item9_facts_per_conversation_are_capped_and_the_excess_reported(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store()
    many = [{"text": f"Ana owns book number {i}.", "sources": [1]} for i in range(300)]
    llm = GatedLLM(facts_answer(*many))
    llm.release.set()
    cfg = FormationConfig()
    assert cfg.max_facts_per_turn * 1 < 300
    with warnings.catch_warnings():
        warnings.simplefilter("error", LLMOutputWarning)  # capping is reported, not warned per item
        report = MemoryFormer(store, llm=llm, config={"consolidate": False}).form(["Ana: I own books."], namespace=NS)
    assert len(report.facts) == cfg.max_facts_per_turn
    over = [r for r in report.rejected_facts if "cap" in r.reason]
    assert len(over) == 300 - cfg.max_facts_per_turn
    assert store.count(NS) == 1 + cfg.max_facts_per_turn
    capped = MemoryFormer(store, llm=llm, config={"consolidate": False, "max_facts": 3}).form(
        ["Ana: again."], namespace="bo"
    )
    assert len(capped.facts) == 3


def test_item9_a_retry_after_a_failure_does_not_store_the_turns_twice(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()

    llm = GatedLLM(facts_answer(GOOD))
    llm.release.set()
    former = MemoryFormer(store, llm=llm, config={"summarize": True})
    turns = ["Ana: I live in Lisbon.", "Bo: nice!"]
    original = store.aadd_many
    calls = 0

    async def fails_after_the_turns(*args: object, **kwargs: object) -> list[object]:
        nonlocal calls
        calls += 1
        if calls == 2:  # the facts' write, after the turns were stored
            from memory_retrievers import StorageError

            raise StorageError("disk full")
        return await original(*args, **kwargs)  # type: ignore[arg-type]

    store.aadd_many = fails_after_the_turns  # type: ignore[method-assign]
    with pytest.raises(Exception, match="disk full"):
        former.form(turns, namespace=NS, session_id="s1")
    del store.aadd_many
    assert sorted(m.text for m in store.list(NS)) == sorted(turns)
    report = former.form(turns, namespace=NS, session_id="s1")
    assert len(report.turns) == 2
    texts = sorted(m.text for m in store.list(NS, filter={"kinds": ["message"]}))
    assert texts == sorted(turns)  # each turn once
    assert any(m.text == GOOD["text"] for m in store.list(NS))


def test_item9_an_unstorable_merged_text_falls_back_to_adding_the_fact(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    store.add("Ana lives in Porto.", namespace=NS, kind="fact")

    class BadMerge(GatedLLM):
        def complete(self, prompt: str) -> str:
            if prompt.startswith("Extract") or prompt.startswith("Summarise"):
                return super().complete(prompt)
            return json.dumps({"action": "MERGE", "target": 1, "text": "Ana lives in \ud800 Lisbon."})

    llm = BadMerge(facts_answer(GOOD))
    llm.release.set()
    former = MemoryFormer(store, llm=llm, config={"similar_min": -1.0})
    with pytest.warns(LLMOutputWarning, match="surrogate"):
        report = former.form(["Ana: I live in Lisbon."], namespace=NS)
    assert [(o.fact.text, o.decision.value) for o in report.facts] == [(GOOD["text"], "ADD")]
    assert {m.text for m in store.list(NS)} >= {"Ana lives in Porto.", GOOD["text"]}


# --- bounded formation queue --------------------------------------------------------------------


def test_formation_queue_is_bounded_and_sheds_new_runs_when_full(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    llm = GatedLLM(facts_answer(GOOD))
    former = MemoryFormer(store, llm=llm, config={"max_queued_runs": 2})
    first = former.form_later(["Ana: one."], namespace=NS)
    second = former.form_later(["Ana: two."], namespace=NS)
    assert llm.entered.wait(WAIT_S)
    shed = former.form_later(["Ana: three."], namespace=NS)  # returns at once, never blocks
    assert isinstance(shed.exception(0), QueueFullError)
    assert "max_queued_runs" in str(shed.exception(0))
    llm.release.set()
    former.flush(WAIT_S)
    assert first.result().turns and second.result().turns
    assert "Ana: three." not in {m.text for m in store.list(NS)}
    assert former.form_later(["Ana: four."], namespace=NS).result(WAIT_S).turns  # room again
    former.close()
