"""``table_locations()``: where each table of a store lives, without private reads nor a key in sight."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore, ShardedMemoryStore
from memory_retrievers.bulk.tables import table_openers
from memory_retrievers.storage.connect import CloudAccess
from memory_retrievers.storage.location import TableLocation
from testing.paths import ROOT

EMBEDDER = HashEmbedder(32)
SECRET = "sk_live_secret"
OPTIONS = {"aws_access_key_id": "AKIA-SECRET", "aws_secret_access_key": "very-secret"}


def _hides_secrets(text: str) -> None:
    for secret in (SECRET, *OPTIONS.values()):
        assert secret not in text


def test_a_plain_store_has_one_location(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", table_name="notes", embedder=EMBEDDER, storage_options=OPTIONS) as store:
        (where,) = store.table_locations()
    assert (where.uri, where.table_name, where.cloud, where.is_cloud) == (str(tmp_path / "db"), "notes", None, False)
    assert where.storage_options == OPTIONS
    _hides_secrets(repr(where) + str(where))
    assert "aws_access_key_id" in repr(where)  # the names are shown, the values masked
    assert pickle.loads(pickle.dumps(where)) == where  # it travels to another process


def test_each_shard_has_its_location_and_cloud_settings_reach_the_db_shards_only(tmp_path: Path) -> None:
    store = ShardedMemoryStore(
        ["db://tenants", tmp_path / "local"], embedder=EMBEDDER, api_key=SECRET, region="eu-west-1"
    )
    cloud, local = store.table_locations()
    assert store.open_shards == [] and not (tmp_path / "local").exists()  # no shard opened to say so
    assert (cloud.uri, cloud.table_name, cloud.is_cloud) == ("db://tenants", "memories", True)
    assert cloud.cloud == CloudAccess(api_key=SECRET, region="eu-west-1")
    assert (local.uri, local.cloud, local.is_cloud) == (str(tmp_path / "local"), None, False)
    _hides_secrets(repr(store.table_locations()) + str(cloud) + repr(cloud.cloud))
    store.close()


def test_an_open_store_given_as_a_shard_reports_its_own_table(tmp_path: Path) -> None:
    own = MemoryStore(tmp_path / "a", table_name="notes", embedder=EMBEDDER, storage_options=OPTIONS)
    with ShardedMemoryStore([own, tmp_path / "b"], embedder=EMBEDDER) as store:
        first, second = store.table_locations()
        assert (first.table_name, first.storage_options) == ("notes", OPTIONS)
        assert (second.table_name, second.storage_options) == ("notes", None)


def test_the_bulk_jobs_reopen_the_tables_the_locations_name(tmp_path: Path) -> None:
    own = MemoryStore(tmp_path / "a", table_name="notes", embedder=EMBEDDER)
    with ShardedMemoryStore([own, "db://tenants"], embedder=EMBEDDER, api_key=SECRET) as store:
        openers = table_openers(store, None)
        assert [(o["uri"], o["table_name"]) for o in openers] == [
            (str((tmp_path / "a").resolve()), "notes"),
            ("db://tenants", "notes"),
        ]
        assert [o["cloud"] for o in openers] == [None, CloudAccess(api_key=SECRET)]
        _hides_secrets(repr(openers))


def test_the_bulk_jobs_read_no_private_attribute_of_a_store() -> None:
    source = ROOT.joinpath("memory_retrievers", "bulk", "tables.py").read_text()
    for private in ("._tables", "._cloud", "._table", "._locations", "._storage_options"):
        assert private not in source


def test_a_location_is_frozen(tmp_path: Path) -> None:
    where = TableLocation(str(tmp_path), "memories", OPTIONS)
    with pytest.raises(AttributeError):
        where.uri = "elsewhere"  # type: ignore[misc]
    copied = dict(OPTIONS)
    assert where.storage_options == copied and where.storage_options is not OPTIONS
