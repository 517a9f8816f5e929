"""The inspector's actions on a real store: pin, edit, forget, forget a namespace, purge, merge duplicates."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from memory_retrievers import MemoryStore, NotFoundError

from .conftest import csrf_of, run_scan


def _dog(store: MemoryStore) -> str:
    return next(m.id for m in store.list("alice") if "dog" in m.text)


def _follow(client: TestClient, response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 303, response.text
    return client.get(response.headers["location"]).text


def test_pin_and_unpin(ui_store: MemoryStore, client: TestClient) -> None:
    memory_id = _dog(ui_store)
    page = client.get(f"/ns/alice/m/{memory_id}").text
    assert 'data-testid="action-pin"' in page and f'value="{csrf_of(client)}"' in page
    after = _follow(client, client.post(f"/ns/alice/m/{memory_id}/pin", data={"csrf_token": csrf_of(client)}))
    assert ui_store.get(memory_id, namespace="alice").pinned is True
    assert 'data-testid="flash"' in after and "pinned" in after and 'data-testid="action-unpin"' in after
    client.post(f"/ns/alice/m/{memory_id}/unpin", data={"csrf_token": csrf_of(client)})
    assert ui_store.get(memory_id, namespace="alice").pinned is False


def test_edit_supersedes_and_lands_on_the_new_memory(ui_store: MemoryStore, client: TestClient) -> None:
    memory_id = _dog(ui_store)
    data = {"csrf_token": csrf_of(client), "text": "Alice's dog is called Rex and he is nine"}
    response = client.post(f"/ns/alice/m/{memory_id}/edit", data=data)
    assert response.status_code == 303
    old = ui_store.get(memory_id, namespace="alice")
    assert old.superseded_by is not None and response.headers["location"].startswith(f"/ns/alice/m/{old.superseded_by}")
    page = client.get(response.headers["location"]).text
    assert "he is nine" in page and memory_id in page.split('data-testid="supersession-chain"')[1]
    empty = client.post(f"/ns/alice/m/{old.superseded_by}/edit", data={"csrf_token": csrf_of(client), "text": " "})
    assert empty.status_code == 400 and "text" in empty.text


def test_forget_needs_the_typed_word_and_says_what_goes(ui_store: MemoryStore, client: TestClient) -> None:
    original = _dog(ui_store)
    newer = ui_store.supersede(original, "Alice's dog is called Rex, a beagle", namespace="alice")
    confirm = client.get(f"/ns/alice/m/{newer.id}/confirm/forget").text
    summary = confirm.split('data-testid="confirm-summary"')[1].split("</section>")[0]
    assert newer.id in summary and "a beagle" in summary
    assert original in summary and "becomes live again" in summary  # what it superseded comes back
    assert "until the store is purged" in summary
    assert f'data-testid="confirm-word">{newer.id[:8]}<' in confirm
    wrong = client.post(f"/ns/alice/m/{newer.id}/forget", data={"csrf_token": csrf_of(client), "confirm": "yes"})
    assert wrong.status_code == 400 and "confirm" in wrong.text
    assert ui_store.get(newer.id, namespace="alice").text.endswith("a beagle")
    data = {"csrf_token": csrf_of(client), "confirm": newer.id[:8]}
    after = _follow(client, client.post(f"/ns/alice/m/{newer.id}/forget", data=data))
    with pytest.raises(NotFoundError):
        ui_store.get(newer.id, namespace="alice")
    assert ui_store.get(original, namespace="alice").superseded_by is None
    assert newer.id not in re.findall(r'data-id="([^"]*)"', after) and "forgot 1 memory" in after
    assert client.get(f"/ns/alice/m/{newer.id}").status_code == 404


def test_forget_a_namespace_shows_the_count_then_forgets_it(ui_store: MemoryStore, client: TestClient) -> None:
    confirm = client.get("/ns/alice/confirm/forget-namespace").text
    assert "2 stored row(s)" in confirm and 'data-testid="confirm-word">alice<' in confirm
    client.post("/ns/alice/forget-namespace", data={"csrf_token": csrf_of(client), "confirm": "ali"})
    assert ui_store.count("alice") == 2
    data = {"csrf_token": csrf_of(client), "confirm": "alice"}
    after = _follow(client, client.post("/ns/alice/forget-namespace", data=data))
    assert ui_store.count("alice") == 0 and ui_store.count("bob") == 1
    assert 'data-namespace="alice"' not in after and "forgot namespace" in after


def test_purge_is_store_wide_and_says_so(ui_store: MemoryStore, client: TestClient) -> None:
    ui_store.delete([_dog(ui_store)], namespace="alice")
    confirm = client.get("/ns/bob/confirm/purge").text
    assert "whole store" in confirm and 'data-testid="confirm-word">purge<' in confirm
    before = ui_store.admin.stats().versions
    after = _follow(client, client.post("/ns/bob/purge", data={"csrf_token": csrf_of(client), "confirm": "purge"}))
    assert "purged" in after
    assert ui_store.admin.stats().versions < before
    assert ui_store.count("alice") == 1 and ui_store.count("bob") == 1


def test_merging_a_duplicate_group_archives_the_others(store: MemoryStore, client: TestClient) -> None:
    keep = store.add("Dan lives in Lisbon with his family", namespace="dan", kind="fact", tags=["home"])
    copy = store.add("Dan lives in Lisbon with his family", namespace="dan", kind="fact", dedup=False, tags=["city"])
    review = run_scan(client, "dan")
    group = review.split('data-testid="duplicate-group"')[1].split("</div>")[0]
    assert keep.id in group and copy.id in group and 'data-testid="action-merge"' in group
    kept_id = re.search(r'name="keep" value="([^"]*)"', group).group(1)  # type: ignore[union-attr]
    dropped = [d for d in (keep.id, copy.id) if d != kept_id]
    data = {"csrf_token": csrf_of(client), "keep": kept_id, "drop": dropped}
    after = _follow(client, client.post("/ns/dan/merge-duplicates", data=data))
    assert "merged 1 duplicate" in after
    kept = store.get(kept_id, namespace="dan")
    assert set(kept.tags) == {"home", "city"}
    archived = store.get(dropped[0], namespace="dan")
    assert archived.lifecycle == "archived" and archived.metadata["duplicate_of"] == kept_id
    assert [m.id for m in store.list("dan")] == [kept_id]  # the archived one left every read, and is kept
    bad = client.post("/ns/dan/merge-duplicates", data={"csrf_token": csrf_of(client), "keep": kept_id})
    assert bad.status_code == 400 and "drop" in bad.text


def test_an_unknown_action_is_a_400_naming_the_choices(ui_store: MemoryStore, client: TestClient) -> None:
    response = client.post(f"/ns/alice/m/{_dog(ui_store)}/explode", data={"csrf_token": csrf_of(client)})
    assert response.status_code == 400 and "pin, unpin, edit, forget, delete" in response.text


def test_every_action_works_over_a_sharded_store(sharded_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    """Issue 40 item 6: each action on each shard's namespace, through the store's public API only."""
    client = make_client(sharded_store)
    token = csrf_of(client)
    fact = next(m for m in sharded_store.list("alice") if m.kind.value == "fact")
    _follow(client, client.post(f"/ns/alice/m/{fact.id}/pin", data={"csrf_token": token}))
    assert sharded_store.get(fact.id, namespace="alice").pinned is True
    edited = client.post(f"/ns/alice/m/{fact.id}/edit", data={"csrf_token": token, "text": "Alice's dog Rex is nine"})
    new_id = sharded_store.get(fact.id, namespace="alice").superseded_by
    assert new_id is not None and "Rex is nine" in _follow(client, edited)
    forget = {"csrf_token": token, "confirm": new_id[:8]}
    assert "forgot 1 memory" in _follow(client, client.post(f"/ns/alice/m/{new_id}/forget", data=forget))
    assert sharded_store.get(fact.id, namespace="alice").superseded_by is None  # live again
    copy = sharded_store.add("Dave likes jazz music a lot", namespace="dave", kind="preference", dedup=False)
    keep = next(m.id for m in sharded_store.list("dave") if m.text == copy.text and m.id != copy.id)
    merge = {"csrf_token": token, "keep": keep, "drop": [copy.id]}
    assert "merged 1 duplicate" in _follow(client, client.post("/ns/dave/merge-duplicates", data=merge))
    assert sharded_store.get(copy.id, namespace="dave").lifecycle == "archived"
    gone = _follow(client, client.post("/ns/dave/forget-namespace", data={"csrf_token": token, "confirm": "dave"}))
    assert "forgot namespace" in gone and sharded_store.count("dave") == 0 and sharded_store.count("alice") == 2
    assert "purged" in _follow(client, client.post("/ns/alice/purge", data={"csrf_token": token, "confirm": "purge"}))
    assert [s.versions for s in sharded_store.admin.stats().shards] == [1, 1]  # every shard purged


def test_a_forget_asks_for_8_characters_of_any_id_and_more_only_to_tell_it_apart(
    store: MemoryStore, client: TestClient
) -> None:
    """Issue 40 item 8: formation's 36-character ids were asked for whole, where the docs say the first 8."""
    formed = store.add("a fact formation wrote", namespace="alice", id="6f1f3a52-7d0e-4d8e-9a39-2f0c7c1b5e11")
    store.add("another namespace's memory", namespace="bob", id="6f1f3a52-7d0e-ffff")  # not alice's: no matter
    assert 'data-testid="confirm-word">6f1f3a52<' in client.get(f"/ns/alice/m/{formed.id}/confirm/forget").text
    store.add("a memory whose id starts alike", namespace="alice", id="6f1f3a52-7d0e-0000")
    word = client.get(f"/ns/alice/m/{formed.id}/confirm/forget").text.split('data-testid="confirm-word">')[1]
    assert word.split("<")[0] == "6f1f3a52-7d0e-4"  # one character past what the two share
    refused = client.post(
        f"/ns/alice/m/{formed.id}/forget", data={"csrf_token": csrf_of(client), "confirm": "6f1f3a52"}
    )
    assert refused.status_code == 400 and store.count("alice") == 4
    data = {"csrf_token": csrf_of(client), "confirm": "6f1f3a52-7d0e-4"}
    assert "forgot 1 memory" in _follow(client, client.post(f"/ns/alice/m/{formed.id}/forget", data=data))
    assert store.get("6f1f3a52-7d0e-0000", namespace="alice").text == "a memory whose id starts alike"
