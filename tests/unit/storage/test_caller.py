"""A store opened on the caller's own LanceDB: their connection or their table handle (issue 28)."""

from __future__ import annotations

import os
import time
import types
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest

from memory_retrievers import (
    ConfigError,
    ForkedStoreError,
    HashEmbedder,
    MemoryRetriever,
    MemoryStore,
)

EMBEDDER = HashEmbedder(32)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[lancedb.DBConnection]:
    # The caller's options: every commit of another handle is seen at once.
    yield lancedb.connect(tmp_path / "db", read_consistency_interval=timedelta(0))


def _caller_row_like(table: lancedb.table.Table, id_: str, text: str) -> pa.Table:
    """A row written by the caller through their own handle: a stored row with a new id and text."""
    row = table.to_arrow().slice(0, 1).to_pylist()[0]
    row.update(id=id_, text=text, search_text=text, revision=0)
    return pa.Table.from_pylist([row], schema=table.schema)


def test_a_store_on_a_callers_connection_shares_the_table_both_ways(db: lancedb.DBConnection) -> None:
    with MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER) as store:
        added = store.add("Alice prefers the dark theme", namespace="alice")
        theirs = db.open_table("mem")  # the caller's handle reads what the store wrote
        assert theirs.search().where(f"id = '{added.id}'").to_list()[0]["text"] == "Alice prefers the dark theme"
        theirs.add(_caller_row_like(theirs, "from-caller", "Alice owns a red bicycle"))
        assert store.get("from-caller", namespace="alice").text == "Alice owns a red bicycle"
        assert [h.id for h in store.fts_search("bicycle", namespace="alice")] == ["from-caller"]
        assert store.uri == db.uri and store.table_name == "mem"


async def test_a_store_on_a_callers_async_connection(tmp_path: Path) -> None:
    adb = await lancedb.connect_async(tmp_path / "db", read_consistency_interval=timedelta(0))
    store = await MemoryStore.aopen(connection=adb, table_name="mem", embedder=EMBEDDER)
    try:
        added = await store.aadd("Bob drinks green tea", namespace="bob")
        theirs = await adb.open_table("mem")
        assert (await theirs.query().where(f"id = '{added.id}'").to_arrow()).column("text").to_pylist() == [
            "Bob drinks green tea"
        ]
    finally:
        await store.aclose()
    assert adb.is_open() and await theirs.count_rows() == 1  # closing the store left the caller's connection open


def test_from_table_uses_the_callers_table_handle(db: lancedb.DBConnection) -> None:
    MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER).close()  # the store creates its table
    handle = db.open_table("mem")
    with MemoryStore.from_table(handle, embedder=EMBEDDER) as store:
        store.add("Carol lives in Lisbon", namespace="carol")
        assert store.table_name == "mem" and store.count(namespace="carol") == 1
    assert handle.count_rows() == 1  # the handle still works after close


async def test_afrom_table_on_an_async_handle(tmp_path: Path) -> None:
    adb = await lancedb.connect_async(tmp_path / "db")
    first = await MemoryStore.aopen(connection=adb, table_name="mem", embedder=EMBEDDER)
    await first.aclose()
    store = await MemoryStore.afrom_table(await adb.open_table("mem"), embedder=EMBEDDER)
    try:
        await store.aadd("Dan plays chess", namespace="dan")
        assert await store.acount(namespace="dan") == 1
    finally:
        await store.aclose()


def test_two_stores_on_one_connection(db: lancedb.DBConnection) -> None:
    with (
        MemoryStore(connection=db, table_name="a", embedder=EMBEDDER) as a,
        MemoryStore(connection=db, table_name="b", embedder=EMBEDDER) as b,
        MemoryStore(connection=db, table_name="a", embedder=EMBEDDER) as a2,
    ):
        a.add("only in a", namespace="n")
        b.add("only in b", namespace="n")
        assert [m.text for m in a2.list("n")] == ["only in a"]  # same table, another store: sees the write
        assert [m.text for m in b.list("n")] == ["only in b"]
    assert db.open_table("a").count_rows() == 1 and db.open_table("b").count_rows() == 1


def test_close_leaves_the_callers_connection_usable(db: lancedb.DBConnection) -> None:
    store = MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER)
    store.add("kept", namespace="n")
    store.close()
    assert db.open_table("mem").count_rows() == 1
    db.create_table("mine", data=[{"x": 1}])  # the caller goes on using it
    assert db.open_table("mine").count_rows() == 1


def test_a_callers_table_of_another_schema_is_refused_naming_the_columns(db: lancedb.DBConnection) -> None:
    foreign = db.create_table("docs", schema=pa.schema([("id", pa.string()), ("text", pa.large_string())]))
    with pytest.raises(ConfigError, match=r"namespace \(missing") as raised:
        MemoryStore(connection=db, table_name="docs", embedder=EMBEDDER)
    assert "MemoryStore(connection=db, table_name=" in str(raised.value)  # the fix
    with pytest.raises(ConfigError, match=r"vector \(missing"):
        MemoryStore.from_table(foreign, embedder=EMBEDDER)
    assert foreign.count_rows() == 0  # refused before anything was written


def test_wrong_connection_arguments_are_config_errors(db: lancedb.DBConnection, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="either uri or connection"):
        MemoryStore(tmp_path / "x", connection=db, embedder=EMBEDDER)
    with pytest.raises(ConfigError, match="storage_options cannot be combined"):
        MemoryStore(connection=db, storage_options={"timeout": "5s"}, embedder=EMBEDDER)
    with pytest.raises(ConfigError, match="connection must be a LanceDB connection"):
        MemoryStore(connection=str(tmp_path), embedder=EMBEDDER)
    with pytest.raises(ConfigError, match="table must be a LanceDB table"):
        MemoryStore.from_table("memories", embedder=EMBEDDER)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_cannot_use_the_callers_connection_and_gets_a_typed_error(db: lancedb.DBConnection) -> None:
    store = MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER)
    store.add("parent's", namespace="n")
    pid = os.fork()
    if pid == 0:  # the child: no LanceDB call may run here (its runtime is the parent's)
        code = 0
        try:
            MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER)
            code = 10
        except ForkedStoreError:
            pass
        except BaseException:
            code = 11
        try:
            store.count(namespace="n")
            code = code or 12
        except ForkedStoreError:
            pass
        except BaseException:
            code = code or 13
        os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung instead of raising ForkedStoreError")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.count(namespace="n") == 1  # the parent's store is untouched
    store.close()


def test_a_table_the_store_created_is_migrated_as_on_a_uri(tmp_path: Path) -> None:
    MemoryStore(tmp_path / "db", embedder=EMBEDDER).close()  # created by URI, our schema recorded
    db = lancedb.connect(tmp_path / "db")
    db.open_table("memories").drop_columns(["expires_at"])  # as written by an older release
    with MemoryStore(connection=db, embedder=EMBEDDER) as store:
        store.add("Erin moved to Oslo", namespace="erin")
        assert store.count(namespace="erin") == 1
    assert "expires_at" in db.open_table("memories").schema.names  # the additive migration ran


# ---------------------------------------------------------------------------------------------
# The database URI of a store on a caller's table, and the store's read consistency on a caller's
# connection (the red-team cases are further down).


async def test_afrom_table_on_an_async_handle_reports_the_database_uri(tmp_path: Path) -> None:
    # An async table knows only its own URI (<db>/mem.lance): the store reports the database's.
    adb = await lancedb.connect_async(tmp_path / "db")
    await (await MemoryStore.aopen(connection=adb, table_name="mem", embedder=EMBEDDER)).aclose()
    store = await MemoryStore.afrom_table(await adb.open_table("mem"), embedder=EMBEDDER)
    try:
        assert store.uri == adb.uri == str(tmp_path / "db")
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("table_uri", "expected"),
    [
        ("/data/app/memories.lance", "/data/app"),
        ("/data/app/memories.lance/", "/data/app"),
        ("s3://bucket/prefix/memories.lance", "s3://bucket/prefix"),
        ("s3://bucket/memories.lance", "s3://bucket"),
        ("gs://bucket/a/b/memories.lance", "gs://bucket/a/b"),
        ("/data/app/other.lance", "/data/app/other.lance"),  # not this table's layout: kept as it is
        ("/data/app/my_memories.lance", "/data/app/my_memories.lance"),  # a longer name is not a match
    ],
)
def test_database_uri_strips_the_tables_own_segment(table_uri: str, expected: str) -> None:
    from memory_retrievers.storage.caller import database_uri

    assert database_uri(table_uri, "memories") == expected


def _two_stores(tmp_path: Path, interval: timedelta | None) -> tuple[MemoryStore, MemoryStore]:
    db = lancedb.connect(tmp_path / "app")  # LanceDB's default: the connection never checks for new versions
    cfg = {"read_consistency_interval": interval}
    first = MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER, config=cfg)
    return first, MemoryStore(connection=db, table_name="mem", embedder=EMBEDDER, config=cfg)


def test_a_longer_read_consistency_interval_on_a_callers_connection_checks_once_per_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_retrievers.storage import table as table_layer

    clock = [1000.0]  # the table layer's monotonic clock, moved by hand: no sleeps, no timing flakes
    monkeypatch.setattr(table_layer, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    first, second = _two_stores(tmp_path, timedelta(minutes=1))
    try:
        assert second.count(namespace="alice") == 0
        first.add("alice likes green tea", namespace="alice")
        first.flush()
        clock[0] += 30
        assert second.count(namespace="alice") == 0  # within the interval: the version it had, as LanceDB's
        clock[0] += 31
        assert second.count(namespace="alice") == 1  # the interval passed: the latest version
    finally:
        first.close()
        second.close()


def test_no_read_consistency_interval_on_a_callers_connection_never_checks_on_reads(tmp_path: Path) -> None:
    first, second = _two_stores(tmp_path, None)
    try:
        first.add("alice likes green tea", namespace="alice")
        first.flush()
        assert second.count(namespace="alice") == 0  # None: reads stay on the version the store has
        second.add("alice owns a bicycle", namespace="alice")
        second.flush()
        assert second.count(namespace="alice") == 2  # every write still starts from the latest version
    finally:
        first.close()
        second.close()


# Found by the red team of the issue 28 refactor (behaviour users relied on at c4d7fc4):
# The store on a caller's LanceDB connection (storage/caller.py): two stores on one connection.
def test_two_stores_on_one_caller_connection_see_each_others_writes(tmp_path: Path, embedder: HashEmbedder) -> None:
    # Given one application connection (lancedb.connect defaults) and two stores on it, as a
    # service opening a store per worker/request on its shared connection would
    db = lancedb.connect(tmp_path / "app")
    first = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    second = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    try:
        # When one store writes and flushes
        first.add("alice likes green tea", namespace="alice")
        first.flush()
        # Then the other reads it: each store reports read_consistency_interval=0 ("every read
        # checks", docs/RELIABILITY.md), and a URI store does see another store's commits.
        # Observed: second.count() == 0 forever; the caller's connection never checks for updates
        # and the store's own setting is silently not applied.
        assert second.config.read_consistency_interval == timedelta(0)
        assert second.count(namespace="alice") == 1
        found = MemoryRetriever(second).recall("what does alice drink?", namespace="alice")
        assert [m.text for m in found.memories] == ["alice likes green tea"]
    finally:
        first.close()
        second.close()


def test_an_explicit_read_consistency_interval_on_a_caller_connection_is_not_silently_ignored(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    # storage_options + connection is refused with ConfigError ("set them on your connection");
    # read_consistency_interval given explicitly with connection= is accepted, reported by
    # store.config, and not applied. Either refuse it like storage_options or honour it.
    db = lancedb.connect(tmp_path / "app")
    cfg = {"read_consistency_interval": timedelta(0)}
    try:
        first = MemoryStore(connection=db, table_name="memories", embedder=embedder, config=cfg)
        second = MemoryStore(connection=db, table_name="memories", embedder=embedder, config=cfg)
    except ConfigError:
        return  # refused, like storage_options: fine
    try:
        first.add("alice likes green tea", namespace="alice")
        first.flush()
        assert second.count(namespace="alice") == 1, "read_consistency_interval=0 was accepted but not applied"
    finally:
        first.close()
        second.close()


# Found by the red team of the issue 28 refactor (behaviour users relied on at c4d7fc4):
# MemoryStore.from_table: store.uri is the *table's* URI (<db>/memories.lance; CallerTable.open
# returns str(await table.uri())), while every other store's uri is the database's. store_spec
# (what pickle / model_dump / LangChain dumps of an adapter write) records that uri with the
# table name, so another process reopens MemoryStore("<db>/memories.lance", table_name="memories"):
# a new, empty table nested inside the caller's table directory. Recall there finds nothing and
# writes land in the nested table. (End to end, a RecallRetriever on a from_table store pickled
# and loaded in a subprocess returned [] where the original returned the memory.)
def test_a_from_table_store_reopens_from_its_spec_on_the_same_table(tmp_path: Path, embedder: HashEmbedder) -> None:
    from memory_retrievers.integration.handles import store_spec

    db = lancedb.connect(tmp_path / "app")
    owner = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    owner.add("alice likes green tea", namespace="alice")
    owner.flush()
    mine = MemoryStore.from_table(db.open_table("memories"), embedder=embedder)
    spec = store_spec(mine, "RecallRetriever")
    # What another process does with the spec (handles.open_store, without this process's live store)
    reopened = MemoryStore(spec["uri"], table_name=spec["table_name"], embedder=embedder)
    try:
        # Observed: spec["uri"] == ".../app/memories.lance", reopened.count(...) == 0, and a
        # directory memories.lance/memories.lance now exists inside the caller's table.
        assert reopened.count(namespace="alice") == 1
        assert not (tmp_path / "app" / "memories.lance" / "memories.lance").exists()
    finally:
        reopened.close()
        mine.close()
        owner.close()


def test_a_from_table_store_reports_the_database_uri_like_any_store(tmp_path: Path, embedder: HashEmbedder) -> None:
    db = lancedb.connect(tmp_path / "app")
    owner = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    mine = MemoryStore.from_table(db.open_table("memories"), embedder=embedder)
    try:
        # Observed: owner.uri == ".../app", mine.uri == ".../app/memories.lance" for the same table
        assert mine.uri == owner.uri
    finally:
        mine.close()
        owner.close()
