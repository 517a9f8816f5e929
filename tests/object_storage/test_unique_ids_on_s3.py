"""Item 3 of issue 27 on object storage: four processes adding one new id store one row of it.

Same race as tests/reliability/test_unique_ids.py (its worker script and checks), on SeaweedFS.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from testing.local_s3 import LocalS3Server

RELIABILITY = Path(__file__).resolve().parents[1] / "reliability"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, RELIABILITY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.long
def test_item3_one_id_one_row_across_processes_on_s3(s3_server: LocalS3Server, s3_uri: str, tmp_path: Path) -> None:
    options = s3_server.storage_options
    with MemoryStore(s3_uri, storage_options=options, embedder=HashEmbedder(32)) as store:
        store.add("seed", namespace="other")
    writers, rounds = 4, 4
    acks = _load("_same_id_worker").race(s3_uri, options, tmp_path, writers, rounds)
    with MemoryStore(s3_uri, storage_options=options, embedder=HashEmbedder(32)) as store:
        _load("test_unique_ids").check_unique(store, acks, writers, rounds)
