"""The adapter toolkit's checks and store handling (``memory_retrievers.integration``)."""

from __future__ import annotations

import copy
import gc
import json
import pickle
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memory_retrievers import (
    DEFAULT_MODEL,
    ConfigError,
    EmbedderMismatchError,
    HashEmbedder,
    InvalidInputError,
    MemoryFilter,
    MemoryStore,
    RecallConfig,
    SentenceTransformerEmbedder,
)
from memory_retrievers.integration import (
    DEFAULT_K,
    DEFAULT_TOKEN_BUDGET,
    SPEC_KEY,
    AdapterModel,
    RecallBinding,
    StoreBinding,
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
    # They moved to memory_retrievers.store.paging (formation imports them from there, not from this
    # module, which imports formation); the toolkit's names are the same objects.
    import memory_retrievers.integration as integration
    import memory_retrievers.store.paging as paging

    for name in paging.__all__:
        assert getattr(integration, name) is getattr(paging, name), name
        assert name in integration.__all__, name


async def test_the_paging_helpers_read_and_delete_past_one_page(store: MemoryStore) -> None:
    from memory_retrievers.store.paging import PAGE_SIZE, aall_memories, adelete_ids, aiter_memories

    total = PAGE_SIZE + 3
    added = store.add_many([{"text": f"fact number {i}"} for i in range(total)], namespace="alice", dedup=False)
    pages = [len(page) async for page in aiter_memories(store, "alice")]
    assert pages == [PAGE_SIZE, 3]
    assert {m.id for m in await aall_memories(store, "alice")} == {m.id for m in added}
    assert await adelete_ids(store, "alice", [m.id for m in added] + ["gone-already"]) == total
    assert store.count("alice") == 0


# ---------------------------------------------------------------------- the adapter base

QUIET = {"record_access": False}


@pytest.fixture
def two_tenants(store: MemoryStore) -> MemoryStore:
    store.add("alice's secret: the vault code is 1234", namespace="alice")
    store.add("bob's secret: the vault code is 9876", namespace="bob")
    return store


class Toy(AdapterModel):
    """An adapter as a framework package would write one: its fields, nothing of the wiring."""

    namespace: str | None = None
    session_id: str = "default"
    recall_config: RecallConfig | None = None
    filters: MemoryFilter | None = None
    llm: Any = None
    former: Any = None

    def texts(self) -> list[str]:
        assert self.namespace is not None
        result = self.recall_binding().recall("vault code secret", namespace=self.namespace)
        return [m.text for m in result.memories]


def test_the_shared_defaults_are_the_recall_configs() -> None:
    assert (RecallConfig().k, RecallConfig().token_budget) == (DEFAULT_K, DEFAULT_TOKEN_BUDGET)


def test_a_recall_binding_holds_one_namespace_free_retriever_for_every_namespace(two_tenants: MemoryStore) -> None:
    binding = RecallBinding(two_tenants, config=QUIET)
    shared = binding.retriever
    assert shared.namespace is None
    got = {ns: [m.text for m in binding.recall("vault code", namespace=ns).memories] for ns in ("bob", "alice")}
    assert got == {"alice": ["alice's secret: the vault code is 1234"], "bob": ["bob's secret: the vault code is 9876"]}
    assert binding.retriever is shared  # nothing built per namespace
    assert copy.copy(binding) is binding and copy.deepcopy(binding) is binding


async def test_a_recall_binding_recalls_asynchronously_per_namespace(two_tenants: MemoryStore) -> None:
    binding = RecallBinding(two_tenants, config=QUIET)
    result = await binding.arecall("vault code", namespace="bob")
    assert [m.text for m in result.memories] == ["bob's secret: the vault code is 9876"]


def test_a_bound_retriever_defaults_to_its_namespace_with_the_bindings_settings(two_tenants: MemoryStore) -> None:
    binding = RecallBinding(two_tenants, config={"k": 1, "record_access": False})
    bound = binding.bound("bob")
    assert (bound.namespace, bound.config) == ("bob", binding.config)
    assert [m.text for m in bound.recall("vault code").memories] == ["bob's secret: the vault code is 9876"]
    assert binding.retriever.namespace is None


def test_a_binding_checks_its_store_keys_and_former(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(config={"max_key_chars": 8})
    binding = RecallBinding(store)
    with pytest.raises(InvalidInputError, match="max_key_chars"):
        binding.recall("anything", namespace="123456789")
    with pytest.raises(InvalidInputError, match=r"session_id has 9 characters"):
        binding.key("123456789", field="session_id")
    with pytest.raises(ConfigError, match="MemoryFormer"):
        binding.former(object())
    assert binding.former(None) is None


@pytest.mark.parametrize("build", [StoreBinding, RecallBinding])
def test_a_binding_refuses_what_is_not_a_store(build: Callable[[Any], StoreBinding]) -> None:
    with pytest.raises(ConfigError, match="store must be a MemoryStore, got str"):
        build("./memories")


def test_a_recall_binding_refuses_a_bad_config_or_llm_when_built(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="kk"):
        RecallBinding(store, config={"kk": 3})
    with pytest.raises(ConfigError, match="llm"):
        RecallBinding(store, llm=42)
    converted: list[Any] = []
    RecallBinding(store, llm="framework model", to_llm=lambda llm: converted.append(llm))
    assert converted == ["framework model"]  # the framework's conversion is the one applied


def test_a_binding_registers_its_store_as_the_live_one(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    StoreBinding(store)
    assert open_store(store_spec(store, "test")) is store


def test_an_adapter_model_refuses_unknown_arguments_by_name(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match=r"unknown argument\(s\) for Toy: 'namspace' \(did you mean 'namespace'\?\)"):
        Toy(store=store, namspace="alice")


def test_an_adapter_model_checks_its_fields_on_construction_and_assignment(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store(config={"max_key_chars": 8})
    with pytest.raises(ValidationError, match="max_key_chars"):
        Toy(store=store, namespace="123456789")
    toy = Toy(store=store, namespace="alice", recall_config={"k": 2}, filters={"kinds": ["fact"]})
    assert isinstance(toy.recall_config, RecallConfig) and toy.recall_config.k == 2
    assert isinstance(toy.filters, MemoryFilter)
    with pytest.raises(ValidationError, match="session_id"):
        toy.session_id = "123456789"
    with pytest.raises(ValidationError, match="llm"):
        toy.llm = 42
    with pytest.raises(ValidationError, match="MemoryFormer"):
        toy.former = object()
    assert (toy.namespace, toy.session_id, toy.llm, toy.former) == ("alice", "default", None, None)


def _model_copy(toy: Toy) -> Toy:
    return toy.model_copy(update={"namespace": "bob"})


def _assign(toy: Toy) -> Toy:
    toy.namespace = "bob"
    return toy


def _copy(toy: Toy) -> Toy:
    return _assign(copy.copy(toy))


def _deepcopy(toy: Toy) -> Toy:
    return _assign(copy.deepcopy(toy))


@pytest.mark.parametrize("switch", [_model_copy, _assign, _copy, _deepcopy])
def test_an_adapter_copied_and_repointed_reads_only_its_new_namespace(
    two_tenants: MemoryStore, switch: Callable[[Toy], Toy]
) -> None:
    alice = Toy(store=two_tenants, namespace="alice", recall_config=QUIET)
    assert alice.texts() == ["alice's secret: the vault code is 1234"]  # the binding is built now
    binding = alice.recall_binding()
    bob = switch(alice)
    assert bob.texts() == ["bob's secret: the vault code is 9876"]
    assert bob.store is two_tenants
    # The binding holds no namespace, so the copies share it instead of each building one.
    assert bob.recall_binding() is binding


def test_an_adapter_model_rebuilds_its_binding_only_when_a_recall_setting_changes(two_tenants: MemoryStore) -> None:
    toy = Toy(store=two_tenants, namespace="alice", recall_config=QUIET)
    first = toy.recall_binding()
    toy.namespace = "bob"
    toy.session_id = "s2"
    assert toy.recall_binding() is first
    toy.recall_config = {"k": 1, "record_access": False}
    assert toy.recall_binding() is not first and toy.recall_binding().config.k == 1


def test_an_adapter_model_pickles_and_dumps_its_store_as_a_spec(two_tenants: MemoryStore) -> None:
    toy = Toy(store=two_tenants, namespace="alice", recall_config=QUIET)
    again = pickle.loads(pickle.dumps(toy))
    assert again.store is two_tenants and (again.namespace, again.recall_config) == ("alice", toy.recall_config)
    dumped = toy.model_dump(mode="json")
    assert is_store_spec(dumped["store"])
    assert Toy.model_validate(dumped).store is two_tenants
    assert Toy(**dumped).texts() == ["alice's secret: the vault code is 1234"]


def test_an_adapter_model_holding_a_model_refuses_to_serialise(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match=r"a Toy with llm set cannot be serialised"):
        pickle.dumps(Toy(store=store, llm=lambda prompt: prompt))


def test_an_adapter_model_deepcopy_shares_the_store_and_former(store: MemoryStore) -> None:
    from memory_retrievers.formation import MemoryFormer

    former = MemoryFormer(store, llm=lambda prompt: "[]")
    toy = Toy(store=store, namespace="alice", former=former)
    twin = copy.deepcopy(toy)
    assert twin.store is store and twin.former is former
