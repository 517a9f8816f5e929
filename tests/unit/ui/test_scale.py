"""The inspector stays bounded: the namespaces page never reads memories row by row, big namespaces are paged."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from memory_retrievers import MemoryStore
from memory_retrievers.ui.inventory import PAGE_SIZE

#: Reads that return memories one page or one id at a time: the namespaces page must not need them.
PER_ROW_READS = ("aget", "alist", "acount", "afts_search", "avector_search", "anamespaces")


def spy(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name in PER_ROW_READS:
        original = getattr(store, name)

        def counted(*args: Any, __name: str = name, __original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            calls[__name] += 1
            return __original(*args, **kwargs)

        monkeypatch.setattr(store, name, counted)
    original_export = store.admin.aexport

    async def export(*args: Any, **kwargs: Any) -> Any:
        calls["aexport"] += 1
        return await original_export(*args, **kwargs)

    monkeypatch.setattr(store.admin, "aexport", export)
    return calls


def test_the_namespaces_page_of_1000_namespaces_reads_no_memory_row_by_row(
    store: MemoryStore, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_many([{"text": f"memory {i} of tenant {i}", "namespace": f"tenant-{i:04d}"} for i in range(1000)])
    client = make_client(store)
    calls = spy(store, monkeypatch)
    for page in (1, 7, 20):
        response = client.get(f"/?page={page}")
        assert response.status_code == 200
        assert response.text.count('data-testid="namespace-row"') == PAGE_SIZE
        first = (page - 1) * PAGE_SIZE
        assert f'data-namespace="tenant-{first:04d}"' in response.text
    assert client.get("/?prefix=tenant-099").text.count('data-testid="namespace-row"') == 10
    assert calls == Counter(), f"per-row reads on the namespaces page: {dict(calls)}"


def test_page_loads_on_a_5000_memory_namespace(
    store: MemoryStore, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = ["fact", "preference", "event", "message"]
    records = [
        {"text": f"memory {i} about topic {i % 97}", "namespace": "big", "kind": kinds[i % 4]} for i in range(5000)
    ]
    store.add_many(records, dedup=False)
    client = make_client(store)
    some_id = store.list("big", limit=1, offset=2500)[0].id
    calls = spy(store, monkeypatch)
    timings: dict[str, tuple[int, int]] = {}
    for name, url in (("namespaces", "/"), ("namespace", "/ns/big"), ("namespace p50", "/ns/big?page=50"),
                      ("namespace q", "/ns/big?q=topic"), ("memory", f"/ns/big/m/{some_id}")):  # fmt: skip
        loads = []
        for _ in range(2):  # the first load of a namespace page fills its per-version summary cache
            started = time.perf_counter()
            response = client.get(url)
            loads.append(round((time.perf_counter() - started) * 1000))
            assert response.status_code == 200, url
        timings[name] = (loads[0], loads[1])
    print("\npage loads on a 5,000-memory namespace (ms, first, second):", timings)
    assert calls["alist"] <= 4 and calls["aexport"] == 0  # one page per load, never the whole namespace
    assert all(v < 5000 for pair in timings.values() for v in pair), timings
