"""Browsing as a person does: the namespaces, a conversation's memories page by page, a memory's life."""

from __future__ import annotations

from typing import Any

import pytest
from _steps import ODD, ODD_MEMORIES, PAGE_SIZE, ask, follow, memory_row_ids, open_ask, open_memory_row, open_namespace
from _ui_browser import NEW_FACT, OLD_FACT

from memory_retrievers import MemoryStore

pytestmark = pytest.mark.long

CONVERSATION = "conv-30"  # conv-26 is the one the action tests change


def test_the_namespaces_page_lists_every_conversation_with_its_count(
    page: Any, app_url: str, locomo_store: MemoryStore
) -> None:
    page.goto(app_url + "/")
    table = page.locator("table[data-testid=namespaces]")
    table.wait_for()
    shown = table.locator("tr[data-testid=namespace-row]").evaluate_all("rows => rows.map(r => r.dataset.namespace)")
    assert set(shown) == set(locomo_store.namespaces())
    row = table.locator(f'tr[data-testid=namespace-row][data-namespace="{CONVERSATION}"]')
    assert str(locomo_store.count(CONVERSATION)) in row.inner_text()


def test_paging_through_a_conversation_shows_each_memory_once_newest_first(
    page: Any, app_url: str, locomo_store: MemoryStore
) -> None:
    open_namespace(page, app_url, CONVERSATION)
    assert page.locator("svg[data-testid=timeline]").count() == 1
    summary = page.locator("[data-testid=namespace-summary]").inner_text()
    assert str(locomo_store.count(CONVERSATION)) in summary
    assert "message" in summary  # counts by kind
    assert page.locator("a[data-testid=prev-page]").count() == 0  # nothing before page 1

    seen = memory_row_ids(page)
    for _ in range(3):  # pages 2 to 4
        assert len(seen) % PAGE_SIZE == 0
        follow(page, page.locator("a[data-testid=next-page]"))
        seen += memory_row_ids(page)
    newest = [m.id for m in locomo_store.list(CONVERSATION, limit=len(seen))]
    assert seen == newest  # the store's order, with no page overlapping the next

    follow(page, page.locator("a[data-testid=prev-page]"))  # and back one page
    assert memory_row_ids(page) == newest[2 * PAGE_SIZE : 3 * PAGE_SIZE]


def test_a_memory_page_shows_its_text_provenance_and_life(page: Any, app_url: str, locomo_store: MemoryStore) -> None:
    open_namespace(page, app_url, CONVERSATION)
    first = memory_row_ids(page)[0]
    open_memory_row(page, first)
    memory = locomo_store.get(first, namespace=CONVERSATION)
    assert page.locator("[data-testid=memory-text]").inner_text().strip() == memory.text
    for part in ("supersession-chain", "links", "provenance", "access", "lifecycle", "contradictions"):
        assert page.locator(f"[data-testid={part}]").count() == 1, part
    shown = page.locator("main, body").first.inner_text()
    assert memory.session_id is not None and memory.session_id in shown  # where it was said
    assert memory.metadata["dia_id"] in shown


def test_an_edited_fact_shows_its_supersession_chain(page: Any, app_url: str, locomo_store: MemoryStore) -> None:
    new = next(m for m in locomo_store.list("conv-26", filter={"kinds": ["fact"]}, limit=50) if m.text == NEW_FACT)
    open_namespace(page, app_url, "conv-26")
    open_memory_row(page, new.id)
    chain = page.locator("[data-testid=supersession-chain]").inner_text()
    assert OLD_FACT["text"] in chain


def test_the_review_page_lists_the_duplicate_pair_and_the_contradiction(page: Any, app_url: str) -> None:
    open_namespace(page, app_url, "conv-26")
    follow(page, page.locator("a[data-testid=review-link]"))
    follow(page, page.locator("button[data-testid=run-scan]"))  # the scans read everything: on demand
    duplicates = page.locator("[data-testid=duplicate-group]").all_inner_texts()
    assert any("pottery class for kids" in group for group in duplicates), duplicates
    contradictions = page.locator("[data-testid=contradiction]").all_inner_texts()
    assert any("hiking in the mountains" in c for c in contradictions), contradictions


def test_a_namespace_with_a_slash_a_space_a_percent_and_unicode_round_trips(
    page: Any, app_url: str, locomo_store: MemoryStore
) -> None:
    """Real browsers normalise URLs (percent-escapes, unicode) in ways a test client does not."""
    open_namespace(page, app_url, ODD)
    assert ODD in page.locator("h1").inner_text()
    memory_id = next(m.id for m in locomo_store.list(ODD, limit=10) if m.text == ODD_MEMORIES[1])
    assert set(memory_row_ids(page)) == {m.id for m in locomo_store.list(ODD, limit=10)}
    open_memory_row(page, memory_id)
    assert page.locator("[data-testid=memory-text]").inner_text().strip() == ODD_MEMORIES[1]
    follow(page, page.locator("button[data-testid=action-pin]"))  # a POST to the encoded path
    page.locator("[data-testid=flash]").wait_for()
    assert locomo_store.get(memory_id, namespace=ODD).pinned
    open_ask(page, app_url, ODD)  # and the ask form's GET keeps the namespace
    ask(page, "how strong does Zoë like her tea?", budget=200)
    assert ODD_MEMORIES[1] in page.locator("pre[data-testid=block]").inner_text()
