"""The inspector over an ``s3://`` store (the loopback S3 server of tests/object_storage): long tier."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from memory_retrievers import MemoryStore
from memory_retrievers.ui import create_app

# The loopback S3 server's fixtures, imported (a second `pytest_plugins` registration of that conftest
# would clash with pytest's own when tests/object_storage runs in the same session).
from tests.object_storage.conftest import make_s3_store, s3_server, s3_uri  # noqa: F401

from .conftest import run_scan

pytestmark = [pytest.mark.long, pytest.mark.object_storage]


def test_the_pages_load_over_an_s3_store(make_s3_store: Callable[..., MemoryStore], clock: Any) -> None:  # noqa: F811
    store = make_s3_store()
    assert store.uri.startswith("s3://")
    first = store.add("Alice's dog is called Rex", namespace="team/a", kind="fact")
    clock.advance(days=1)
    store.add("Alice prefers the dark theme", namespace="team/a", kind="preference")
    with TestClient(create_app(store), base_url="http://127.0.0.1") as client:
        home = client.get("/")
        assert home.status_code == 200 and 'data-namespace="team/a"' in home.text
        assert "n/a" not in home.text.split('data-namespace="team/a"')[1].split("</tr>")[0]
        page = client.get("/ns/team~2Fa")
        assert page.status_code == 200 and f'data-id="{first.id}"' in page.text
        assert page.text.count("<rect") == 2
        memory = client.get(f"/ns/team~2Fa/m/{first.id}")
        assert memory.status_code == 200 and "called Rex" in memory.text
        assert "Scanned 2 knowledge memories" in run_scan(client, "team~2Fa")  # a POST, as the page's button
