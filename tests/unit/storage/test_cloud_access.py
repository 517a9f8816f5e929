"""LanceDB Cloud / Enterprise: the store hands api_key, region, host_override and storage options to LanceDB.

LanceDB's ``connect_async`` is replaced by a recording connection: it records the keyword
arguments the store connects with, then opens a local database in their place, so the store
works end to end without a network.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lancedb
import pytest

from memory_retrievers import ConfigError, ForkedStoreError, HashEmbedder, MemoryStore, StorageError
from memory_retrievers.storage.connect import CloudAccess

EMBEDDER = HashEmbedder(32)
KEY = "sk_live_the-secret-key-1234"


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    real = lancedb.connect_async

    async def recording(uri: str, **kwargs: Any) -> Any:
        calls.append({"uri": uri, **kwargs})
        local = {k: v for k, v in kwargs.items() if k in ("read_consistency_interval", "session")}
        return await real(tmp_path / "local", **local)

    monkeypatch.setattr(lancedb, "connect_async", recording)
    yield calls


def test_the_cloud_settings_reach_lancedb_and_the_store_works(recorded: list[dict[str, Any]]) -> None:
    with MemoryStore(
        "db://my-database",
        embedder=EMBEDDER,
        api_key=KEY,
        region="eu-west-1",
        host_override="https://lancedb.example.com",
        storage_options={"timeout": "30s"},
    ) as store:
        added = store.add("Alice prefers green tea", namespace="alice")
        assert store.get(added.id, namespace="alice").text == "Alice prefers green tea"
        assert store.uri == "db://my-database"
        shown = repr(store)
    (call,) = recorded
    assert call["uri"] == "db://my-database"
    assert call["api_key"] == KEY and call["region"] == "eu-west-1"
    assert call["host_override"] == "https://lancedb.example.com"
    assert call["storage_options"] == {"timeout": "30s"}
    assert KEY not in shown


def test_settings_not_given_are_left_to_lancedbs_defaults(recorded: list[dict[str, Any]]) -> None:
    MemoryStore("db://my-database", embedder=EMBEDDER, api_key=KEY).close()
    (call,) = recorded
    assert call["api_key"] == KEY
    assert "region" not in call and "host_override" not in call  # LanceDB's us-east-1 and Cloud host


async def test_the_async_constructor_passes_them_too(recorded: list[dict[str, Any]]) -> None:
    store = await MemoryStore.aopen("db://my-database", embedder=EMBEDDER, api_key=KEY, region="ap-south-1")
    await store.aclose()
    assert recorded[0]["api_key"] == KEY and recorded[0]["region"] == "ap-south-1"


def test_the_key_is_in_no_repr_and_no_pickle(recorded: list[dict[str, Any]]) -> None:
    access = CloudAccess(api_key=KEY, region="eu-west-1")
    assert KEY not in repr(access) and "***" in repr(access)
    with MemoryStore("db://my-database", embedder=EMBEDDER, api_key=KEY) as store:
        with pytest.raises(ForkedStoreError) as refused:
            pickle.dumps(store)
        assert KEY not in str(refused.value)
        assert KEY not in repr(store) and KEY not in repr(store.config)
        assert KEY.encode() not in pickle.dumps(store.config)


def test_a_lancedb_error_quoting_the_key_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refusing(uri: str, **kwargs: Any) -> Any:
        raise ValueError(f"Unauthorized: the key {kwargs['api_key']} is not valid for {uri}")

    monkeypatch.setattr(lancedb, "connect_async", refusing)
    with pytest.raises(StorageError) as failed:
        MemoryStore("db://my-database", embedder=EMBEDDER, api_key=KEY)
    text = str(failed.value)
    assert "Unauthorized" in text and "***" in text and KEY not in text
    assert failed.value.__cause__ is None or KEY not in str(failed.value.__cause__)
    assert failed.value.__context__ is None or KEY not in str(failed.value.__context__)


def test_without_an_api_key_lancedb_still_refuses_with_a_typed_error() -> None:
    with pytest.raises(StorageError, match="api_key"):
        MemoryStore("db://my-database", embedder=EMBEDDER)


@pytest.mark.parametrize("where", ["local", "s3://bucket/memories", None])
def test_cloud_settings_without_a_db_uri_are_refused(tmp_path: Path, where: str | None) -> None:
    uri = str(tmp_path / "local") if where == "local" else where
    with pytest.raises(ConfigError, match="db://") as refused:
        MemoryStore(uri, embedder=EMBEDDER, api_key=KEY)
    assert KEY not in str(refused.value) and "api_key" in str(refused.value)


@pytest.mark.parametrize("bad", [{"api_key": ""}, {"api_key": 12345}, {"region": " "}, {"host_override": b"x"}])
def test_bad_cloud_settings_are_refused_by_name(bad: dict[str, Any]) -> None:
    (name,) = bad
    with pytest.raises(ConfigError, match=name):
        MemoryStore("db://my-database", embedder=EMBEDDER, **bad)


def test_a_connection_with_cloud_settings_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        MemoryStore(connection=lancedb.connect(tmp_path / "db"), embedder=EMBEDDER, api_key=KEY)


def test_the_command_line_reads_the_cloud_settings_from_the_environment_for_db_stores_only(tmp_path: Path) -> None:
    from memory_retrievers.cli.settings import resolve

    env = {"LANCEDB_API_KEY": KEY, "LANCEDB_REGION": "eu-west-1", "MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "none")}
    cloud = resolve(env, tmp_path, store="db://my-database")
    assert cloud.cloud == {"api_key": KEY, "region": "eu-west-1"} and KEY not in repr(cloud)
    assert resolve(env, tmp_path, store=str(tmp_path / "local")).cloud == {}


#: The recording connection inside the engine process (a fresh interpreter): a ``sitecustomize`` module.
ENGINE_RECORDER = """
import json, os
import lancedb

_real = lancedb.connect_async

async def _recording(uri, **kwargs):
    seen = {k: v for k, v in kwargs.items() if k in ("api_key", "region", "host_override")}
    with open(os.environ["CLOUD_RECORD"], "a") as out:
        out.write(json.dumps({"uri": str(uri), **seen}) + "\\n")
    local = {k: v for k, v in kwargs.items() if k in ("read_consistency_interval", "session")}
    return await _real(os.environ["CLOUD_LOCAL"], **local)

lancedb.connect_async = _recording
"""


@pytest.mark.long
def test_the_engine_process_of_a_forked_child_connects_with_them_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import memory_retrievers.runtime.fork as _fork
    from memory_retrievers.storage.remote import RemoteTable

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(ENGINE_RECORDER)
    monkeypatch.syspath_prepend(str(site))  # the engine's PYTHONPATH is this process's sys.path
    monkeypatch.setenv("CLOUD_RECORD", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("CLOUD_LOCAL", str(tmp_path / "local"))
    monkeypatch.setattr(_fork, "lancedb_inherited", lambda: True)  # as in a child forked after LanceDB ran
    with MemoryStore("db://my-database", embedder=EMBEDDER, api_key=KEY, region="eu-west-1") as store:
        assert isinstance(store._table.handle, RemoteTable)
        added = store.add("Alice prefers green tea", namespace="alice")
        assert store.get(added.id, namespace="alice").text == "Alice prefers green tea"
    (call,) = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert call == {"uri": "db://my-database", "api_key": KEY, "region": "eu-west-1"}


def test_an_engine_process_error_quoting_the_key_is_masked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Regression (issue 29 red team): in a child forked after LanceDB ran, the table opens in the
    # engine process, and an error quoting the key came back unmasked (message and __cause__).
    import memory_retrievers.runtime.fork as _fork
    from memory_retrievers.storage import opening

    async def refusing(uri: str, *args: Any) -> Any:
        cloud = args[-1]
        raise ValueError(f"Unauthorized: the key {cloud.api_key} is not valid for {uri} (in the engine process)")

    monkeypatch.setattr(_fork, "lancedb_inherited", lambda: True)
    monkeypatch.setattr(opening.RemoteTable, "open", refusing)
    with pytest.raises(StorageError) as failed:
        MemoryStore("db://my-database", embedder=EMBEDDER, api_key=KEY)
    text = str(failed.value)
    assert "Unauthorized" in text and "***" in text and KEY not in text
    chain = [failed.value.__cause__, failed.value.__context__]
    assert all(KEY not in str(link) for link in chain if link is not None)


def test_the_command_line_worker_of_a_db_store_serves_one_set_of_credentials(tmp_path: Path) -> None:
    # Regression (issue 29 red team): the worker was found by store and embedder only. A db://
    # database name is per LanceDB account, so a command with another account's key (or none)
    # reached the worker opened with the first key, and read or wrote that account's database.
    from memory_retrievers.cli.client import worker_address

    base = {"MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "none.toml"), "MEMORY_RETRIEVERS_RUNTIME_DIR": str(tmp_path)}
    argv = ["recall", "tea", "-n", "alice", "--store", "db://memories"]

    def socket_for(**env: str) -> Path:
        address = worker_address(argv, {**base, **env}, tmp_path)
        assert address is not None
        return address.path

    mine = socket_for(LANCEDB_API_KEY=KEY)
    assert socket_for(LANCEDB_API_KEY=KEY) == mine and KEY not in str(mine)
    assert len({mine, socket_for(LANCEDB_API_KEY="sk_live_another-account"), socket_for()}) == 3
    assert socket_for(LANCEDB_API_KEY=KEY, LANCEDB_REGION="eu-west-1") != mine


def test_a_deserialised_adapter_gets_back_the_store_of_its_own_account(recorded: list[dict[str, Any]]) -> None:
    # Regression (issue 29 red team): the live stores adapters reuse were found by URI and table
    # only. A db:// name is per LanceDB account, so with two accounts' "db://memories" open in one
    # process, an adapter of the first deserialised onto the second account's store.
    import json

    from memory_retrievers.integration.handles import open_store, register, store_spec

    with (
        MemoryStore("db://memories", embedder=EMBEDDER, api_key=KEY) as mine,
        MemoryStore("db://memories", embedder=EMBEDDER, api_key="sk_live_another-account") as theirs,
    ):
        register(mine)
        spec = json.loads(json.dumps(store_spec(mine, "RecallRetriever")))
        register(theirs)
        assert open_store(spec) is mine
        assert KEY not in json.dumps(spec)
