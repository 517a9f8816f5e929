"""MemoryChatMessageHistory on a real store: persistence, order, clear, async, bad input."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_memory_retrievers import MemoryChatMessageHistory, RecallRetriever
from memory_retrievers import InvalidInputError, MemoryStore


def conversation() -> list:
    return [
        SystemMessage("You are helpful."),
        HumanMessage("I adopted a cat named Miso", id="h1"),
        AIMessage("", tool_calls=[{"name": "save_pet", "args": {"name": "Miso"}, "id": "call-1"}]),
        ToolMessage("saved", tool_call_id="call-1"),
        AIMessage("Congratulations on Miso!", response_metadata={"model": "fake"}),
    ]


def test_messages_round_trip_exactly_in_order_across_reopen(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    history.add_messages(conversation())
    history.add_messages([HumanMessage("ok")])
    history.add_messages([HumanMessage("ok")])  # repeated chat turns are kept, not deduplicated
    store.close()

    reopened = MemoryChatMessageHistory(make_store(), namespace="alice", session_id="s1")
    assert reopened.messages == [*conversation(), HumanMessage("ok"), HumanMessage("ok")]


def test_order_holds_with_a_frozen_clock(store: MemoryStore) -> None:
    # The store's clock never moves here, so created_at alone cannot order separate calls.
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    for i in range(12):
        history.add_message(HumanMessage(f"turn {i}"))
    assert [m.content for m in history.messages] == [f"turn {i}" for i in range(12)]


def test_sessions_and_namespaces_are_separate_and_clear_is_scoped(store: MemoryStore) -> None:
    a = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    b = MemoryChatMessageHistory(store, namespace="alice", session_id="s2")
    bob = MemoryChatMessageHistory(store, namespace="bob", session_id="s1")
    a.add_messages([HumanMessage("a1")])
    b.add_messages([HumanMessage("b1")])
    bob.add_messages([HumanMessage("bob1")])
    store.add("Alice likes tea", namespace="alice")
    a.clear()
    assert a.messages == []
    assert [m.content for m in b.messages] == ["b1"]
    assert [m.content for m in bob.messages] == ["bob1"]
    assert store.count("alice") == 2  # s2's message and the fact survive


async def test_async_methods_match_sync(store: MemoryStore) -> None:
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    await history.aadd_messages(conversation())
    assert await history.aget_messages() == conversation()
    await history.aclear()
    assert await history.aget_messages() == []


def test_turns_become_recallable_memories(store: MemoryStore) -> None:
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    history.add_messages(conversation())
    docs = RecallRetriever(store=store, namespace="alice", k=3).invoke("what is the cat called?")
    assert docs[0].page_content == "user: I adopted a cat named Miso"
    assert docs[0].metadata["session_id"] == "s1" and docs[0].metadata["kind"] == "message"


def test_text_that_cannot_be_indexed_is_still_returned_exactly(store: MemoryStore) -> None:
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    odd = [HumanMessage("nul\x00byte"), AIMessage("x" * 80_000), HumanMessage("")]
    history.add_messages(odd)
    assert history.messages == odd
    assert {len(m.text) for m in store.list("alice")} == {
        len("user: nul\ufffdbyte"),
        len("assistant: ") + 80_000,
        len("user: [human message without text]"),
    }


def test_only_a_pathological_message_is_refused_naming_the_limit(store: MemoryStore) -> None:
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    with pytest.raises(InvalidInputError, match="max_text_chars"):
        history.add_messages([HumanMessage("fine"), AIMessage("x" * store.config.max_text_chars)])
    assert history.messages == []  # nothing of the batch was written


def test_bad_input_raises_and_writes_nothing(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        MemoryChatMessageHistory(store, namespace="alice", session_id="")
    with pytest.raises(InvalidInputError, match="namespace"):
        MemoryChatMessageHistory(store, namespace=None, session_id="s")  # type: ignore[arg-type]
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    with pytest.raises(InvalidInputError, match="BaseMessage"):
        history.add_messages([HumanMessage("fine"), {"role": "user", "content": "a dict"}])  # type: ignore[list-item]
    assert history.messages == [] and store.count("alice") == 0


def test_no_deprecation_warning_reaches_the_user(store: MemoryStore) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
        history.add_user_message("hello")
        history.add_ai_message("hi")
        assert len(history.messages) == 2
        history.clear()


def test_a_longmemeval_length_reply_is_stored_whole_and_recalled_by_its_passage(store: MemoryStore) -> None:
    # One LongMemEval assistant turn is 77k characters: stored whole, as its memory's text too.
    reply = "The build ran its checks. " * 800 + "The nightly export runs on worker-3. " + "Done. " * 9_400
    assert len(reply) > 77_000
    history = MemoryChatMessageHistory(store, namespace="alice", session_id="s1")
    turn = [HumanMessage("How did last night's build go?", id="h1"), AIMessage(reply, id="a1")]
    history.add_messages(turn)
    assert history.messages == turn  # the exact reply comes back from the chat
    assert f"assistant: {reply}" in {m.text for m in store.list("alice")}

    docs = RecallRetriever(store=store, namespace="alice", k=3).invoke("which worker runs the nightly export?")
    assert docs and docs[0].metadata["session_id"] == "s1" and docs[0].page_content.startswith("assistant: The build")
    excerpt = docs[0].metadata["excerpt"]
    assert "The nightly export runs on worker-3." in excerpt and len(excerpt) <= 1_202


# At c4d7fc4 MemoryChatMessageHistory and MemoryStoreLangGraph refused a non-store with
# InvalidInputError (their docstrings' Raises); the adapter base now raises ConfigError, which is
# not an InvalidInputError (both are ValueErrors): an `except InvalidInputError` written against
# the release before no longer catches it, and nothing warned.
def test_chat_history_still_refuses_a_non_store_with_invalid_input_error() -> None:
    from langchain_memory_retrievers import MemoryChatMessageHistory
    from memory_retrievers import InvalidInputError

    with pytest.raises(InvalidInputError, match="MemoryStore"):
        MemoryChatMessageHistory("./not-a-store", namespace="alice", session_id="s1")  # type: ignore[arg-type]
