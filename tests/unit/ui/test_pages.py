"""The inspector's read pages on a real store: what each shows, paging, filters, the error pages."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from memory_retrievers import MemoryStore, StorageError
from memory_retrievers.testing import ManualClock
from memory_retrievers.ui.links import encode_namespace

from .conftest import ODD, run_scan


def rows(html: str, testid: str, attr: str) -> list[str]:
    return re.findall(rf'data-testid="{testid}" {attr}="([^"]*)"', html)


def test_the_namespaces_page_lists_every_namespace_with_its_figures(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert 'data-testid="namespaces"' in page.text
    assert rows(page.text, "namespace-row", "data-namespace") == ["alice", "bob", ODD]
    alice = page.text.split('data-namespace="alice"')[1].split("</tr>")[0]
    assert ">2<" in alice  # two live memories
    assert "fact 1" in alice and "preference 1" in alice
    size = len(b"Alice prefers the dark theme in every editor") + len(b"Alice's dog is called Rex")
    assert f"{size} B" in alice  # text bytes, as the page says
    assert "not scanned" in alice
    assert "UTF-8 bytes" in page.text
    assert 'data-testid="maintenance"' in page.text and "fragments" in page.text


def test_the_prefix_filter_and_paging_of_namespaces(store: MemoryStore, client: TestClient) -> None:
    store.add_many([{"text": f"memory {i}", "namespace": f"user-{i:03d}"} for i in range(120)])
    first = client.get("/?prefix=user-")
    assert rows(first.text, "namespace-row", "data-namespace") == [f"user-{i:03d}" for i in range(50)]
    assert 'data-testid="next-page"' in first.text and 'data-testid="prev-page"' not in first.text
    third = client.get("/?prefix=user-&page=3")
    assert rows(third.text, "namespace-row", "data-namespace") == [f"user-{i:03d}" for i in range(100, 120)]
    assert 'data-testid="next-page"' not in third.text and 'data-testid="prev-page"' in third.text
    assert client.get("/?prefix=user-&page=4").status_code == 400
    assert rows(client.get("/?prefix=nobody").text, "namespace-row", "data-namespace") == []


def test_the_namespace_page_shows_summary_timeline_and_links(client: TestClient) -> None:
    page = client.get("/ns/alice")
    assert page.status_code == 200
    summary = page.text.split('data-testid="namespace-summary"')[1].split("</section>")[0]
    assert "2 live, 0 superseded" in summary
    svg = re.search(r'<svg data-testid="timeline".*?</svg>', page.text, re.S)
    assert svg is not None and svg.group(0).count("<rect") == 2  # one memory on each of two days
    assert "k-preference" in svg.group(0) and "k-fact" in svg.group(0)
    assert 'data-testid="ask-link" href="/ns/alice/ask"' in page.text
    assert 'data-testid="review-link" href="/ns/alice/review"' in page.text
    assert len(rows(page.text, "memory-row", "data-id")) == 2


def test_the_memory_list_pages_by_50_and_filters_by_kind_and_text(store: MemoryStore, client: TestClient) -> None:
    store.add_many([{"text": f"note {i} about gardening", "namespace": "big", "kind": "event"} for i in range(120)])
    store.add("the single fact about sailing boats", namespace="big", kind="fact")
    first = client.get("/ns/big")
    assert len(rows(first.text, "memory-row", "data-id")) == 50
    last = client.get("/ns/big?page=3")
    assert len(rows(last.text, "memory-row", "data-id")) == 21
    seen = set()
    for n in (1, 2, 3):
        seen |= set(rows(client.get(f"/ns/big?page={n}").text, "memory-row", "data-id"))
    assert len(seen) == 121  # every memory once, none twice
    facts = client.get("/ns/big?kind=fact")
    assert len(rows(facts.text, "memory-row", "data-id")) == 1 and "sailing" in facts.text
    found = client.get("/ns/big?q=sailing")
    assert len(rows(found.text, "memory-row", "data-id")) == 1 and "sailing boats" in found.text
    assert 'name="q" value="sailing"' in found.text
    nxt = re.search(r'data-testid="next-page" href="([^"]*)"', client.get("/ns/big?kind=event").text)
    assert nxt is not None and "kind=event" in nxt.group(1) and "page=2" in nxt.group(1)


def test_a_memory_page_shows_its_life(store: MemoryStore, client: TestClient, clock: ManualClock) -> None:
    turn = store.add("Carol: I adopted a cat named Miso", namespace="carol", kind="message")
    fact = store.add(
        "Carol has a cat named Miso",
        namespace="carol",
        links=[turn.id],
        metadata={"formed_by": "extraction", "confidence": "stated"},
        lifecycle="candidate",
        expires_at=clock() + timedelta(days=30),
    )
    clock.advance(days=1)
    newer = store.supersede(fact.id, "Carol has two cats, Miso and Tofu", namespace="carol")
    store.record_access([fact.id], namespace="carol")
    store.admin.flush_access()

    page = client.get(f"/ns/carol/m/{fact.id}")
    assert page.status_code == 200
    html = page.text
    assert 'data-testid="memory-text"' in html and "Carol has a cat named Miso" in html
    chain = html.split('data-testid="supersession-chain"')[1].split("</section>")[0]
    assert newer.id in chain and "(superseded)" in chain
    provenance = html.split('data-testid="provenance"')[1].split("</section>")[0]
    assert "Formed by extraction" in provenance and turn.id in provenance and "source-turn" in provenance
    access = html.split('data-testid="access"')[1].split("</section>")[0]
    assert "<dd>1</dd>" in access
    lifecycle = html.split('data-testid="lifecycle"')[1].split("</section>")[0]
    assert "candidate" in lifecycle and "expires" in lifecycle
    assert "Not scanned" in html.split('data-testid="contradictions"')[1]

    newer_page = client.get(f"/ns/carol/m/{newer.id}").text
    assert fact.id in newer_page.split('data-testid="supersession-chain"')[1].split("</section>")[0]
    turn_page = client.get(f"/ns/carol/m/{turn.id}").text
    provenance = turn_page.split('data-testid="provenance"')[1].split("</section>")[0]
    assert fact.id in provenance and "facts formed from this turn" in provenance


def test_the_review_page_scans_on_demand_and_the_memory_page_shows_contradictions(
    store: MemoryStore, client: TestClient
) -> None:
    before = client.get(f"/ns/{encode_namespace(ODD)}/review")
    assert "Not scanned yet" in before.text and 'data-testid="contradiction"' not in before.text
    scanned = run_scan(client, encode_namespace(ODD))
    assert scanned.count('data-testid="contradiction"') == 1
    assert "No LLM is used" in scanned
    likes = next(m for m in store.list(ODD) if "does not" not in m.text)
    memory = client.get(f"/ns/{encode_namespace(ODD)}/m/{likes.id}").text
    assert "does not like jazz" in memory.split('data-testid="contradictions"')[1].split("</section>")[0]
    home = client.get("/").text
    row = home.split(f'data-namespace="{ODD}"')[1].split("</tr>")[0]
    assert 'data-testid="contradictions-flag">1<' in row
    assert "not scanned" in home.split('data-namespace="alice"')[1].split("</tr>")[0]


def test_the_review_page_finds_duplicate_groups(store: MemoryStore, client: TestClient) -> None:
    store.add("Dan lives in Lisbon with his family", namespace="dan", kind="fact")
    store.add("Dan lives in Lisbon with his family", namespace="dan", kind="fact", dedup=False)
    store.add("Dan really lives in Lisbon with his whole family", namespace="dan", kind="fact", dedup=False)
    page = run_scan(client, "dan")
    assert page.count('data-testid="duplicate-group"') >= 2  # the exact copy, and the paraphrase


@pytest.mark.parametrize(
    ("url", "status", "names"),
    [
        ("/?page=-1", 400, "page"),
        ("/?page=two", 400, "page"),
        ("/ns/alice?page=0", 400, "page"),
        ("/ns/alice?kind=opinion", 400, "kind"),
        ("/ns/alice/review?scan=yes", 400, "scan"),
        ("/ns/nobody", 404, "nobody"),
        ("/ns/alice/m/no-such-id", 404, "no-such-id"),
        ("/ns/alice/m/x/confirm/explode", 400, "action"),
        ("/no/such/page", 404, "Not found"),
    ],
)
def test_bad_requests_get_error_pages_naming_the_problem(client: TestClient, url: str, status: int, names: str) -> None:
    response = client.get(url)
    assert response.status_code == status
    assert names in response.text and 'data-testid="error"' in response.text
    assert "Traceback" not in response.text


def test_a_store_error_is_a_500_page_with_the_typed_message(
    ui_store: MemoryStore, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: object, **kwargs: object) -> object:
        raise StorageError("could not read the table: disk on fire")

    monkeypatch.setattr(ui_store, "aget", broken)
    response = client.get("/ns/alice/m/whatever")
    assert response.status_code == 500
    assert "StorageError: could not read the table: disk on fire" in response.text
    assert "Traceback" not in response.text and 'data-testid="error"' in response.text


def test_importing_the_core_does_not_import_the_inspector_or_starlette() -> None:
    code = "import sys, memory_retrievers; print(' '.join(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(run.stdout.split())
    assert "memory_retrievers" in loaded
    assert loaded & {"starlette", "uvicorn", "jinja2", "memory_retrievers.ui"} == set()


def test_expired_archived_and_pinned_memories_are_counted(
    store: MemoryStore, client: TestClient, clock: ManualClock
) -> None:
    store.add("a note that expires tomorrow", namespace="eve", expires_at=clock() + timedelta(days=1))
    store.add("an archived fact about boats", namespace="eve", lifecycle="archived")
    store.add("a pinned fact about sails", namespace="eve", pinned=True)
    clock.advance(days=2)
    row = client.get("/?prefix=eve").text.split('data-namespace="eve"')[1].split("</tr>")[0]
    assert re.findall(r'<td class="num">(\d+)</td>', row)[:2] == ["3", "0"]  # live (expired included), superseded
    assert row.rstrip().count('<td class="num">1</td>') == 1  # one expired, not yet removed
    summary = client.get("/ns/eve").text.split('data-testid="namespace-summary"')[1].split("</section>")[0]
    assert "<dt>pinned</dt><dd>1</dd>" in summary
    assert "<dt>archived</dt><dd>1 " in summary
    assert "<dt>expired, not removed</dt><dd>1 " in summary


def test_an_unexpected_error_is_a_500_page_without_a_traceback(
    ui_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_retrievers.ui import create_app

    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(ui_store, "aget", broken)
    with TestClient(create_app(ui_store), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        response = client.get("/ns/alice/m/whatever")
    assert response.status_code == 500
    assert "RuntimeError: a bug" in response.text and "Traceback" not in response.text


def test_hidden_memories_are_listed_on_request(store: MemoryStore, client: TestClient) -> None:
    old = store.add("Finn lives in Oslo", namespace="finn")
    new = store.supersede(old.id, "Finn lives in Bergen", namespace="finn")
    live = client.get("/ns/finn").text
    assert rows(live, "memory-row", "data-id") == [new.id]
    everything = client.get("/ns/finn?hidden=1").text
    assert set(rows(everything, "memory-row", "data-id")) == {old.id, new.id}
    assert "<td>superseded</td>" in everything and 'name="hidden" value="1" checked' in everything
    assert client.get("/ns/finn?hidden=yes").status_code == 400


def test_every_page_works_over_a_sharded_store(sharded_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    """Issue 40 item 6: five pages of six answered 500 (the inspector read the store's private table)."""
    client = make_client(sharded_store)
    home = client.get("/")
    assert home.status_code == 200 and rows(home.text, "namespace-row", "data-namespace") == ["alice", "dave"]
    dave = home.text.split('data-namespace="dave"')[1].split("</tr>")[0]
    assert f"{len(b'Dave likes jazz music a lot') + len(b'Dave does not like jazz music a lot')} B" in dave
    summary = client.get("/ns/alice").text.split('data-testid="namespace-summary"')[1].split("</section>")[0]
    assert "2 live, 0 superseded" in summary
    turn = next(m for m in sharded_store.list("alice") if m.kind.value == "message")
    provenance = client.get(f"/ns/alice/m/{turn.id}").text.split('data-testid="provenance"')[1].split("</section>")[0]
    assert "facts formed from this turn" in provenance and "Alice&#39;s dog is called Rex" in provenance
    assert "Not scanned yet" in client.get("/ns/dave/review").text
    assert run_scan(client, "dave").count('data-testid="contradiction"') == 1
    flagged = client.get("/").text.split('data-namespace="dave"')[1].split("</tr>")[0]
    assert 'data-testid="contradictions-flag">1<' in flagged and "older scan" not in flagged
    sharded_store.add("Dave plays the piano", namespace="dave", kind="fact")  # his shard changes, alice's not
    assert "older scan" in client.get("/").text.split('data-namespace="dave"')[1].split("</tr>")[0]
    asked = client.get("/ns/alice/ask", params={"q": "what is the dog called?"})
    assert asked.status_code == 200 and "called Rex" in asked.text.split('data-testid="block"')[1]
    assert "2 stored row(s)" in client.get("/ns/alice/confirm/forget-namespace").text
    confirm = client.get(f"/ns/alice/m/{turn.id}/confirm/forget").text
    assert f'data-testid="confirm-word">{turn.id[:8]}<' in confirm
    assert f"{sharded_store.admin.stats().rows} rows" in client.get("/ns/alice/confirm/purge").text
