"""The block recall hands an agent: copies folded, the window left out, long memories excerpted,
abstention (with the hash embedder: the calibration is the embedder-agnostic one)."""

from __future__ import annotations

import pytest

from memory_retrievers import InvalidInputError, MemoryRetriever, MemoryStore
from memory_retrievers.recall.calibration import Calibration
from memory_retrievers.testing import ManualClock
from memory_retrievers.text.lines import line_key

QUIET = {"record_access": False}


def test_copies_take_one_line_noted_with_how_often_and_when(store: MemoryStore, clock: ManualClock) -> None:
    for _ in range(5):
        store.add_many(
            [
                {"text": "user: thanks, that's helpful!", "kind": "message"},
                {"text": "user: Thanks!", "kind": "message"},
            ],
            namespace="u",
        )
        clock.advance(days=1)
    store.add("user: my daughter Mia starts school in September", namespace="u", kind="message")
    result = MemoryRetriever(store, namespace="u", config=QUIET).recall("thanks Mia school", k=10, explain=True)
    lines = [m.text for m in result.memories]
    assert len({line_key(t) for t in lines}) == len(lines) == 3
    (thanks,) = [m for m in result.memories if m.text == "user: thanks, that's helpful!"]
    assert len(thanks.explanation.copies) == 4 and thanks.note is not None
    assert thanks.note.startswith("said 5 times, 2024-05-01 to 2024-05-05")
    assert thanks.line in result.to_context() and thanks.note in result.to_context()
    assert sum(1 for c in result.cut if c.reason.value == "copy") == 8
    assert store.count("u") == 11  # nothing stored was touched


def test_copy_folding_can_be_turned_off(store: MemoryStore) -> None:
    store.add_many([{"text": "user: ok", "kind": "message"}] * 3, namespace="u", dedup=False)
    config = {**QUIET, "selection": {"collapse_copies": False}}
    assert len(MemoryRetriever(store, namespace="u", config=config).recall("ok").memories) == 3


def test_exclude_texts_leaves_out_what_the_window_says(store: MemoryStore) -> None:
    store.add_many(
        [{"text": "user: I moved to Berlin", "kind": "message"}, {"text": "user: Berlin is rainy", "kind": "message"}],
        namespace="u",
    )
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    assert len(r.recall("Berlin").memories) == 2
    kept = r.recall("Berlin", exclude_texts=["user: i moved to berlin!"])  # case and punctuation aside
    assert [m.text for m in kept.memories] == ["user: Berlin is rainy"]
    with pytest.raises(InvalidInputError, match="exclude_texts must be a list"):
        r.recall("Berlin", exclude_texts="user: I moved to Berlin")  # type: ignore[arg-type]


def test_a_long_memory_is_shown_by_its_passage_that_answers(store: MemoryStore) -> None:
    reply = (
        "assistant: " + "The build ran its checks. " * 200 + "The nightly export runs on worker-3. " + "Done. " * 200
    )
    stored = store.add(reply, namespace="u", kind="message")
    result = MemoryRetriever(store, namespace="u", config=QUIET).recall("which worker runs the nightly export?")
    (m,) = result.memories
    assert m.memory.text == reply == store.get(stored.id, namespace="u").text  # stored whole
    assert m.excerpt is not None and "The nightly export runs on worker-3." in m.excerpt
    assert len(m.excerpt) <= 1_202 and m.excerpt.startswith("…") and m.excerpt.endswith("…")
    assert m.excerpt in result.to_context() and reply not in result.to_context()
    assert result.tokens_used < 400 and m.explanation.tokens < 400


def test_a_configured_calibration_abstains_and_floors(store: MemoryStore) -> None:
    store.add_many([{"text": "Alice likes green tea"}, {"text": "Alice moved to Berlin"}], namespace="u")
    strict = Calibration(name="strict", embedder=None, intercept=-20.0, weights={}, floor=0.0, abstain=0.5)
    result = MemoryRetriever(store, namespace="u", config={**QUIET, "relevance": {"calibration": strict}}).recall("tea")
    assert result.memories == () and any("abstained" in n for n in result.plan["notes"])
    # A pinned memory is kept whatever its score.
    store.add("Always answer in British English", namespace="u", pinned=True)
    pinned = MemoryRetriever(store, namespace="u", config={**QUIET, "relevance": {"calibration": strict}}).recall("tea")
    assert [m.text for m in pinned.memories] == ["Always answer in British English"]


def test_a_calibration_for_another_embedder_is_refused(store: MemoryStore) -> None:
    from memory_retrievers import ConfigError

    other = Calibration(name="openai", embedder="openai:text-embedding-3-small", intercept=0.0, weights={})
    with pytest.raises(ConfigError, match="fitted for the embedder 'openai:text-embedding-3-small'"):
        MemoryRetriever(store, namespace="u", config={"relevance": {"calibration": other}})


def test_every_adapter_query_path_recalls_a_query_of_any_length_under_the_cap(store: MemoryStore) -> None:
    store.add("green tea every morning", namespace="u")
    r = MemoryRetriever(store, namespace="u", config=QUIET)
    pasted = "Here is my log:\n" + "worker timeout\n" * 3_000 + "Do I drink green tea?"
    result = r.recall(pasted)
    assert [m.text for m in result.memories] == ["green tea every morning"]
    assert any("first and last lines" in note for note in result.plan["notes"])


def test_the_default_floor_cuts_nothing_for_an_embedder_without_its_own_calibration(store: MemoryStore) -> None:
    # The hash embedder gets the embedder-agnostic calibration: it orders, never abstains.
    store.add_many([{"text": f"note {i} about nothing in particular"} for i in range(12)], namespace="u")
    assert len(MemoryRetriever(store, namespace="u", config=QUIET).recall("quantum chromodynamics").memories) == 10
