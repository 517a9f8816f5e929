"""Red-team tests of the issue 28 refactor, LangChain adapter side."""

from __future__ import annotations

import pytest

from langchain_memory_retrievers import RecallRetriever
from memory_retrievers import ConfigError, MemoryStore


def test_a_misspelled_channel_weight_is_refused_when_the_retriever_is_built(store: MemoryStore) -> None:
    # At c4d7fc4, RecallRetriever(recall_config={"weights": {"vectr": 2}}) raised at construction
    # (ChannelWeights refused unknown names). Now ChannelWeights takes any name (plug-in weights)
    # and the AdapterModel builds its RecallBinding lazily, so the typo passes construction and the
    # first invoke in production raises instead.
    with pytest.raises((ConfigError, ValueError), match="vectr"):
        RecallRetriever(store=store, namespace="alice", recall_config={"weights": {"vectr": 2.0}})


# A RecallRetriever pickled by c4d7fc4 with a recall_config: its state holds a RecallConfig with
# flat fields (pydantic unpickles it without validation), and _restore(cls, state) is cls(**state).
# Observed: the restored retriever's invoke raises AttributeError 'RecallConfig' object has no
# attribute 'selection' (end to end: a real c4d7fc4 pickle of RecallRetriever(recall_config=
# {"k": 3, "decay": "none"}) loaded on this tree fails the same way).

#: pickle.dumps(RecallConfig(k=3, decay="none"), protocol=4) made by c4d7fc4 (flat fields), base64.
OLD_CONFIG_PICKLE = (
    "gASVuwcAAAAAAACMH21lbW9yeV9yZXRyaWV2ZXJzLnJlY2FsbF9jb25maWeUjAxSZWNhbGxDb25maWeUk5QpgZR9lCiMCF9f"
    "ZGljdF9flH2UKIwEbW9kZZRoAIwLUm91dGluZ01vZGWUk5SMBGF1dG+UhZRSlIwHd2VpZ2h0c5RoAIwOQ2hhbm5lbFdlaWdo"
    "dHOUk5QpgZR9lChoBX2UKIwGdmVjdG9ylEc/8AAAAAAAAIwEYm0yNZRHP+AAAAAAAACMB2NvbnRleHSUR0AAAAAAAAAAjAVk"
    "YXRlZJRHQAAAAAAAAACMBmVudGl0eZRHP/AAAAAAAACMB3JlY2VuY3mURz/gAAAAAAAAjAVsaW5rc5RHP+AAAAAAAACMBGh5"
    "ZGWURz/wAAAAAAAAdYwSX19weWRhbnRpY19leHRyYV9flE6MF19fcHlkYW50aWNfZmllbGRzX3NldF9flI+UjBRfX3B5ZGFu"
    "dGljX3ByaXZhdGVfX5ROdWKMD2NhbmRpZGF0ZV9kZXB0aJRLHowFcnJmX2uUR0BOAAAAAAAAjAtyYW5rMV9ib251c5RHP6mZ"
    "mZmZmZqMCnRvcDNfYm9udXOURz+UeuFHrhR7jBVvcmlnaW5hbF9xdWVyeV93ZWlnaHSUR0AAAAAAAAAAjA5zZW1hbnRpY19i"
    "bGVuZJRHAAAAAAAAAACMCWV4cGFuc2lvbpSIjAxsbG1fcmV3cml0ZXOUSwOMDWZlZWRiYWNrX2RvY3OUSwOMDmZlZWRiYWNr"
    "X3Rlcm1zlEsDaBqIjA1yb2NjaGlvX2FscGhhlEc/8AAAAAAAAIwMcm9jY2hpb19iZXRhlEc/4AAAAAAAAIwNbGxtX3RpbWVv"
    "dXRfc5RHQCQAAAAAAACMCWxpbmtfaG9wc5RLAYwKbGlua19kZWNheZRHP+AAAAAAAACMCmxpbmtfc2VlZHOUSwWMEmZhY3Rf"
    "c291cmNlX3dlaWdodJRHP+AAAAAAAACMBWRlY2F5lIwZbWVtb3J5X3JldHJpZXZlcnMuc2NvcmluZ5SMCURlY2F5S2luZJST"
    "lIwEbm9uZZSFlFKUjBBkZWNheV9zY2FsZV9kYXlzlEdATgAAAAAAAIwOaGFsZl9saWZlX2RheXOUR0BOAAAAAAAAjAxkZWNh"
    "eV93ZWlnaHSURz/JmZmZmZmajAxwaW5uZWRfYm9vc3SURz/xmZmZmZmajAtraW5kX2Jvb3N0c5R9lCiMGG1lbW9yeV9yZXRy"
    "aWV2ZXJzLm1vZGVsc5SMCk1lbW9yeUtpbmSUk5SMB2luc2lnaHSUhZRSlEc/+AAAAAAAAGg/jAVldmVudJSFlFKURz/wAAAA"
    "AAAAaD+MBGZhY3SUhZRSlEc/8AAAAAAAAGg/jApwcmVmZXJlbmNllIWUUpRHP/AAAAAAAABoP4wHbWVzc2FnZZSFlFKURz/w"
    "AAAAAAAAaD+MA3Jhd5SFlFKURz/gAAAAAAAAdYwNc3BlYWtlcl9ib29zdJRHQAAAAAAAAACME3NwZWFrZXJfZnJlZV92ZWN0"
    "b3KUiIwSYXNrZWRfdmVjdG9yX3NoYXJllEcAAAAAAAAAAIwKZGF0ZV9ib29zdJRHQAAAAAAAAACMEnNhbWVfcHJvamVjdF9i"
    "b29zdJRHP/TMzMzMzM2MFW90aGVyX3Byb2plY3RfcGVuYWx0eZRHP+mZmZmZmZqMEm5vX3Byb2plY3RfcGVuYWx0eZRHP+zM"
    "zMzMzM2ME2Nyb3NzX3RvcGljX3BlbmFsdHmURz/ZmZmZmZmajApzdXBlcnNlZGVklGgAjBBTdXBlcnNlZGVkUG9saWN5lJOU"
    "jARkcm9wlIWUUpSMD3JlbGV2YW5jZV9mbG9vcpRHAAAAAAAAAACMDW1pbl9yZWxldmFuY2WURwAAAAAAAAAAjA1hYnN0YWlu"
    "X2JlbG93lE6MEWFic3RhaW5fcmVsZXZhbmNllE6MCW1pbl9zY29yZZROjAtjYWxpYnJhdGlvbpROjA9jb2xsYXBzZV9jb3Bp"
    "ZXOUiIwNZXhjZXJwdF9jaGFyc5RNsASMD21heF9xdWVyeV9jaGFyc5RKQA0DAIwUc2VhcmNoZWRfcXVlcnlfY2hhcnOUTegD"
    "jAxyZXJhbmtfZGVwdGiUSx6MDXJlcmFua193ZWlnaHSURz/gAAAAAAAAjBByZXJhbmtfdGltZW91dF9zlEdAJAAAAAAAAIwB"
    "a5RLA4wMdG9rZW5fYnVkZ2V0lE3QB4wOdG9rZW5fZW5jb2RpbmeUjAtjbDEwMGtfYmFzZZSMA21tcpSIjAptbXJfbGFtYmRh"
    "lEc/4zMzMzMzM4wUbW1yX3NpbWlsYXJpdHlfZmxvb3KURz/szMzMzMzNjA9zZXNzaW9uX2RpdmVyc2WUiYwMcGlubmVkX2Zp"
    "cnN0lIiMDnNlY3Rpb25fc2hhcmVzlH2UKIwabWVtb3J5X3JldHJpZXZlcnMuc2VjdGlvbnOUjA5Db250ZXh0U2VjdGlvbpST"
    "lIwGcGlubmVklIWUUpRHP8mZmZmZmZpoeowJa25vd2xlZGdllIWUUpRHP9mZmZmZmZpoeowMY29udmVyc2F0aW9ulIWUUpRH"
    "P9MzMzMzMzN1jA1yZWNvcmRfYWNjZXNzlIh1aBtOaByPlChobWgwkGgeTnViLg=="
)


def test_a_retriever_pickled_with_a_recall_config_by_the_release_before_sections_still_recalls(
    store: MemoryStore,
) -> None:
    import base64
    import pickle

    from langchain_memory_retrievers.retrievers import _restore

    store.add("alice likes green tea", namespace="alice")
    store.flush()
    old_config = pickle.loads(base64.b64decode(OLD_CONFIG_PICKLE))
    restored = _restore(RecallRetriever, {"store": store, "namespace": "alice", "recall_config": old_config})
    docs = restored.invoke("what does alice drink?")
    assert [d.page_content for d in docs] == ["alice likes green tea"]


# At c4d7fc4 MemoryChatMessageHistory and MemoryStoreLangGraph refused a non-store with
# InvalidInputError (their docstrings' Raises); the adapter base now raises ConfigError, which is
# not an InvalidInputError (both are ValueErrors): an `except InvalidInputError` written against
# the release before no longer catches it, and nothing warned.


def test_chat_history_still_refuses_a_non_store_with_invalid_input_error() -> None:
    from langchain_memory_retrievers import MemoryChatMessageHistory
    from memory_retrievers import InvalidInputError

    with pytest.raises(InvalidInputError, match="MemoryStore"):
        MemoryChatMessageHistory("./not-a-store", namespace="alice", session_id="s1")  # type: ignore[arg-type]


def test_langgraph_store_still_refuses_a_non_store_with_invalid_input_error() -> None:
    from langchain_memory_retrievers import MemoryStoreLangGraph
    from memory_retrievers import InvalidInputError

    with pytest.raises(InvalidInputError, match="MemoryStore"):
        MemoryStoreLangGraph("./not-a-store")  # type: ignore[arg-type]


# The same for the adapter's entry points: the flat-name DeprecationWarning is attributed to
# langchain_core/load/serializable.py (constructor) or asyncio/events.py (per call), both hidden by
# Python's default warning filters, so an adapter user never sees it.


def test_a_flat_name_in_recall_config_warns_at_the_callers_line(store: MemoryStore) -> None:
    with pytest.warns(DeprecationWarning, match="mmr") as caught:
        RecallRetriever(store=store, namespace="alice", recall_config={"mmr": False})
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]


def test_a_flat_name_in_a_per_call_recall_config_warns_at_the_callers_line(store: MemoryStore) -> None:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = RecallRetriever(store=store, namespace="alice")
    with pytest.warns(DeprecationWarning, match="hyde") as caught:
        retriever.invoke("what does alice drink?", recall_config={"hyde": False})
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]
