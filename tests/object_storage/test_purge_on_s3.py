"""Issue 27 item 2 on ``s3://``: after ``purge()`` no object in the bucket holds a forgotten value.

Every object under the store is listed and read through the S3 API (SeaweedFS on loopback) and
audited as in ``tests/unit/storage/test_purge_leaves_nothing.py`` (whose helpers this loads):
raw bytes, then what LanceDB decodes from every remaining version, every data object and index
folder referenced by a version, no index from before the purge.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import MemoryStore
from testing.local_s3 import LocalS3Server

_HELPERS = Path(__file__).resolve().parents[1] / "unit" / "storage" / "test_purge_leaves_nothing.py"
_spec = importlib.util.spec_from_file_location("purge_audit_helpers", _HELPERS)
assert _spec is not None and _spec.loader is not None
helpers: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)

FORGOTTEN, DELETED = 7, 12


def bucket_files(s3: LocalS3Server, uri: str) -> dict[str, bytes]:
    """Every object of the store's table, read through the S3 API, by path inside the table."""
    fs = s3.filesystem()
    files = {}
    for key in s3.list_objects(uri):
        with fs.open_input_stream(key) as f:
            files[key.split("/memories.lance/", 1)[1]] = f.read()
    return files


@pytest.mark.long
def test_item2_purge_erases_forgotten_and_deleted_users_from_every_object(
    s3_server: LocalS3Server, s3_uri: str, make_s3_store: Callable[..., MemoryStore]
) -> None:
    """20 users x 5 memories in one fragment; one user forgotten, another's memories deleted by id."""
    store = make_s3_store(config={"optimize_after_commits": 10_000, "optimize_after_rows": 10_000_000})
    records = [r for user in range(20) for r in helpers.user_records(user)]
    store.add_many(records, batch_size=len(records), dedup=False, progress=False)  # one commit, one fragment
    store.admin.optimize()
    before = bucket_files(s3_server, s3_uri)
    old = helpers.index_folders(before)
    table = helpers.open_table(store, **s3_server.storage_options)
    gone = helpers.user_values(FORGOTTEN) + helpers.user_values(DELETED)
    assert helpers.byte_hits(before, gone)

    assert store.forget(f"person{FORGOTTEN:02d}@example.com") == 5
    deleted = store.delete([f"mem-{DELETED}-{j}" for j in range(5)], namespace=f"person{DELETED}@example.com")
    assert deleted == 5
    assert helpers.audit(table, bucket_files(s3_server, s3_uri), gone, set())  # hidden, yet stored

    def audit() -> list[str]:
        return list(helpers.audit(table, bucket_files(s3_server, s3_uri), gone, old))

    store.admin.purge()
    assert audit() == []
    store.add("written after the purge", namespace="person08@example.com")
    assert audit() == []
    store.admin.optimize()
    assert audit() == []
    store.admin.purge()  # the purge, optimize, purge
    assert audit() == []
    assert store.admin.stats().rows == 91 and len(store.namespaces()) == 18
    assert all(i.unindexed_rows == 0 for i in store.admin.stats().indexes)
    assert store.fts_search("quokka08", namespace="person08@example.com")
