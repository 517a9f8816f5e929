"""The adapter toolkit's checks and store handling (``memory_retrievers.integration``)."""

from __future__ import annotations

import copy
import gc
import json
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import (
    DEFAULT_MODEL,
    ConfigError,
    EmbedderMismatchError,
    HashEmbedder,
    InvalidInputError,
    MemoryStore,
    SentenceTransformerEmbedder,
)
from memory_retrievers.integration import (
    SPEC_KEY,
    WrappedEmbedder,
    check_arguments,
    check_store_key,
    deepcopy_memo,
    is_store_spec,
    open_store,
    register,
    store_spec,
)

# ---------------------------------------------------------------------- check_arguments


def test_known_arguments_pass() -> None:
    check_arguments("Thing", ["k", "namespace"], ["namespace", "k", "store"])
    check_arguments("Thing", [], ["namespace"])


def test_an_unknown_argument_names_the_closest_valid_one_and_all_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        check_arguments("RecallRetriever", ["namespace", "namspace"], ["store", "namespace", "k"])
    message = str(caught.value)
    assert "RecallRetriever" in message
    assert "'namspace' (did you mean 'namespace'?)" in message
    assert message.endswith("valid arguments are: k, namespace, store")


def test_each_unknown_argument_is_named_and_a_far_one_gets_no_guess() -> None:
    with pytest.raises(ConfigError) as caught:
        check_arguments("X", ["zzzzzz", "topp_k"], ["top_k"])
    message = str(caught.value)
    assert "'topp_k' (did you mean 'top_k'?)" in message
    assert "'zzzzzz'" in message and "'zzzzzz' (did you mean" not in message


# ---------------------------------------------------------------------- check_store_key


def test_a_store_key_within_the_limit_is_returned(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(config={"max_key_chars": 8})
    assert check_store_key("12345678", field="namespace", store=store) == "12345678"


def test_an_over_long_store_key_names_the_field_and_max_key_chars(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(config={"max_key_chars": 8})
    with pytest.raises(InvalidInputError) as caught:
        check_store_key("123456789", field="session_id", store=store)
    message = str(caught.value)
    assert "session_id has 9 characters" in message
    assert "limit of 8" in message and "max_key_chars" in message


@pytest.mark.parametrize("value", ["", "   ", None, 7, "a\x00b"])
def test_a_bad_store_key_is_refused(store: MemoryStore, value: Any) -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        check_store_key(value, field="namespace", store=store)


# ---------------------------------------------------------------------- store specs


def test_a_spec_is_json_marked_and_free_of_credentials(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(config={"max_key_chars": 100}, storage_options={"secret": "hunter2"})
    spec = store_spec(store, "RecallRetriever")
    assert is_store_spec(spec) and spec[SPEC_KEY] == 1
    assert spec["uri"] == store.uri and spec["table_name"] == store.table_name
    assert spec["embedder"] == {"type": "hash", "name": "hash-32", "dimension": 32}
    assert spec["config"]["max_key_chars"] == 100
    text = json.dumps(spec)  # serialisable as it is
    assert "hunter2" not in text and "secret" not in text


@pytest.mark.parametrize(
    "value", [{}, {SPEC_KEY: 2}, {SPEC_KEY: "1"}, [SPEC_KEY], "memory_retrievers_store", None, {"uri": "x"}]
)
def test_only_a_version_1_spec_is_a_spec(value: Any) -> None:
    assert not is_store_spec(value)


def test_a_sentence_transformer_store_reopens_its_model_not_its_label(tmp_path: Path) -> None:
    # The name recorded in the table may be a label; the model is what has to be loaded.
    store = MemoryStore(tmp_path / "st", embedder=SentenceTransformerEmbedder(DEFAULT_MODEL, name="minilm"))
    spec = json.loads(json.dumps(store_spec(store, "X")))
    store.close()
    assert spec["embedder"] == {"type": "sentence-transformers", "name": "minilm", "model": DEFAULT_MODEL}
    reopened = open_store(spec)  # lazy: no model is loaded
    try:
        assert reopened.embedder.name == "minilm"
        assert repr(reopened.embedder) == f"SentenceTransformerEmbedder(model={DEFAULT_MODEL!r}, device='cpu')"
    finally:
        reopened.close()


def test_a_spec_without_a_model_reopens_the_model_named_by_its_name(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "st", embedder=SentenceTransformerEmbedder(DEFAULT_MODEL))
    spec = store_spec(store, "X")
    store.close()
    del spec["embedder"]["model"]
    reopened = open_store(spec)
    try:
        assert repr(reopened.embedder) == f"SentenceTransformerEmbedder(model={DEFAULT_MODEL!r}, device='cpu')"
    finally:
        reopened.close()


class _Wrapped(WrappedEmbedder):
    def _raw_documents(self, texts: list[str]) -> Any:
        return [[1.0, 0.0]] * len(texts)

    def _raw_query(self, text: str) -> Any:
        return [[1.0, 0.0]]

    async def _araw_documents(self, texts: list[str]) -> Any:
        return self._raw_documents(texts)

    async def _araw_query(self, text: str) -> Any:
        return self._raw_query(text)


def test_a_store_whose_embedder_cannot_be_rebuilt_refuses_to_serialise(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store(embedder=_Wrapped(name="openai-small", dimension=2))
    with pytest.raises(ConfigError, match=r"MemoryChatStore cannot be serialised.*'openai-small'.*_Wrapped"):
        store_spec(store, "MemoryChatStore")


class _Subclass(HashEmbedder):
    pass


def test_a_subclassed_core_embedder_is_not_taken_for_the_core_one(make_store: Callable[..., MemoryStore]) -> None:
    # A subclass may embed differently; rebuilding it as a plain HashEmbedder would be silently wrong.
    with pytest.raises(ConfigError, match="cannot be serialised"):
        store_spec(make_store(embedder=_Subclass(32)), "X")


def test_open_store_hands_back_the_registered_live_store(store: MemoryStore) -> None:
    assert register(store) is store
    assert open_store(store_spec(store, "X")) is store
    # Also after a round trip through JSON, as a deserialised adapter gets it.
    assert open_store(json.loads(json.dumps(store_spec(store, "X")))) is store


def test_the_latest_registered_handle_wins(make_store: Callable[..., MemoryStore]) -> None:
    first, second = make_store(), make_store()
    register(first)
    register(second)
    assert open_store(store_spec(first, "X")) is second


def test_a_closed_store_is_reopened_with_its_data_and_config(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(config={"max_key_chars": 100})
    added = store.add("Alice prefers the dark theme", namespace="alice")
    register(store)
    spec = store_spec(store, "X")
    store.close()
    reopened = open_store(spec)
    try:
        assert reopened is not store
        assert reopened.uri == store.uri and reopened.table_name == store.table_name
        assert reopened.config.max_key_chars == 100
        assert reopened.embedder.name == "hash-32" and reopened.embedder.dimension == 32
        assert reopened.get(added.id, namespace="alice").text == "Alice prefers the dark theme"
        # The reopened store is now the live one.
        assert open_store(spec) is reopened
    finally:
        reopened.close()


def test_the_registry_does_not_keep_a_store_alive(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "other", embedder=HashEmbedder(32))
    spec = store_spec(register(store), "X")
    alive = weakref.ref(store)
    store.close()
    del store
    gc.collect()
    assert alive() is None
    reopened = open_store(spec)
    try:
        assert reopened.count("anyone") == 0  # a fresh, open handle
    finally:
        reopened.close()


def test_a_live_store_with_another_embedder_is_not_reused(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    register(store)
    spec = store_spec(store, "X")
    spec["embedder"] = {"type": "hash", "name": "hash-32-renamed", "dimension": 32}
    # Not the live store: a new handle, which the table (recorded with hash-32) refuses.
    with pytest.raises(EmbedderMismatchError):
        open_store(spec).close()


@pytest.mark.parametrize("missing", ["uri", "table_name", "embedder", "config"])
def test_a_malformed_spec_is_a_config_error(store: MemoryStore, missing: str) -> None:
    spec = store_spec(store, "X")
    del spec[missing]
    with pytest.raises(ConfigError, match=f"malformed serialised store.*{missing}"):
        open_store(spec)


def test_an_unknown_embedder_type_is_a_config_error(store: MemoryStore) -> None:
    spec = store_spec(store, "X")
    spec["embedder"] = {"type": "openai", "name": "text-embedding-3-small"}
    with pytest.raises(ConfigError, match="embedder type 'openai'"):
        open_store(spec)


# ---------------------------------------------------------------------- deepcopy_memo


def test_deepcopy_memo_shares_what_it_names_and_copies_the_rest(store: MemoryStore) -> None:
    handle = object()
    value = {"store": store, "handle": handle, "items": [1, 2]}
    copied = copy.deepcopy(value, deepcopy_memo(None, store, handle, None))
    assert copied["store"] is store and copied["handle"] is handle
    assert copied["items"] == [1, 2] and copied["items"] is not value["items"]


def test_deepcopy_memo_extends_the_memo_it_is_given() -> None:
    memo: dict[int, Any] = {1: "kept"}
    shared = object()
    assert deepcopy_memo(memo, shared) is memo
    assert memo == {1: "kept", id(shared): shared}


# ---------------------------------------------------------------------- no framework in the core


@pytest.mark.long
def test_the_toolkit_imports_no_framework() -> None:
    code = (
        "import sys, memory_retrievers.integration;"
        "bad=[m for m in sys.modules if m.split('.')[0] in "
        "('langchain','langchain_core','langgraph','llama_index','torch','sentence_transformers')];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------- paging helpers


def test_the_paging_helpers_stay_importable_from_the_toolkit() -> None:
    # They moved to memory_retrievers.paging (formation imports them from there, not from this
    # module, which imports formation); the toolkit's names are the same objects.
    from memory_retrievers import integration, paging

    for name in paging.__all__:
        assert getattr(integration, name) is getattr(paging, name), name
        assert name in integration.__all__, name


async def test_the_paging_helpers_read_and_delete_past_one_page(store: MemoryStore) -> None:
    from memory_retrievers.paging import PAGE_SIZE, aall_memories, adelete_ids, aiter_memories

    total = PAGE_SIZE + 3
    added = store.add_many([{"text": f"fact number {i}"} for i in range(total)], namespace="alice", dedup=False)
    pages = [len(page) async for page in aiter_memories(store, "alice")]
    assert pages == [PAGE_SIZE, 3]
    assert {m.id for m in await aall_memories(store, "alice")} == {m.id for m in added}
    assert await adelete_ids(store, "alice", [m.id for m in added] + ["gone-already"]) == total
    assert store.count("alice") == 0
