"""Acting on memories through the pages: forget (with its confirmation), pin, edit; then check the store."""

from __future__ import annotations

from typing import Any

import pytest
from _steps import ask, confirm, follow, memory_row_ids, open_ask, open_memory_row, open_namespace
from _ui_browser import FACTS

from memory_retrievers import MemoryStore
from memory_retrievers.errors import NotFoundError

pytestmark = pytest.mark.long

CONVERSATION = "conv-26"
QUESTION = "When did Caroline go to the LGBTQ support group?"


def every_row_id(page: Any, base: str, namespace: str) -> list[str]:
    """The ids on every page of a namespace, following its next links to the end."""
    open_namespace(page, base, namespace)
    ids = memory_row_ids(page)
    while page.locator("a[data-testid=next-page]").count():
        follow(page, page.locator("a[data-testid=next-page]"))
        ids += memory_row_ids(page)
    return ids


def explained_ids(page: Any) -> list[str]:
    ids: list[str] = page.locator("[data-testid=explained-memory]").evaluate_all("els => els.map(e => e.dataset.id)")
    return ids


def test_forgetting_a_recalled_memory_removes_it_from_pages_recall_and_store(
    page: Any, app_url: str, locomo_store: MemoryStore
) -> None:
    open_ask(page, app_url, CONVERSATION)
    ask(page, QUESTION, budget=400)
    victim_id = explained_ids(page)[0]
    victim = locomo_store.get(victim_id, namespace=CONVERSATION)
    follow(page, page.locator(f'[data-testid=explained-memory][data-id="{victim_id}"] a').first)
    assert page.locator("[data-testid=memory-text]").inner_text().strip() == victim.text

    follow(page, page.locator("a[data-testid=action-forget]"))
    summary = page.locator("[data-testid=confirm-summary]").inner_text()
    assert victim.text in summary and victim_id in summary  # says exactly which memory
    assert "purge" in summary.lower()  # and that the bytes stay on disk until a purge

    button = page.locator("button[data-testid=confirm-button]")
    page.locator("input[name=confirm]").fill("nope")
    assert button.is_disabled()  # the page's script holds the button until the word is right
    button.evaluate("b => { b.disabled = false; }")  # and the server, if the script is bypassed:
    with page.expect_navigation() as refused:
        button.click()
    assert refused.value.status == 400
    assert "nothing was changed" in page.locator("body").inner_text()
    assert locomo_store.get(victim_id, namespace=CONVERSATION).text == victim.text

    page.go_back()  # to the confirmation page, and this time the right word
    confirm(page, victim_id[:8])
    assert "forg" in page.locator("[data-testid=flash]").inner_text().lower()

    with pytest.raises(NotFoundError):
        locomo_store.get(victim_id, namespace=CONVERSATION)
    assert victim_id not in {m.id for m in locomo_store.list(CONVERSATION, limit=1000)}
    rows = every_row_id(page, app_url, CONVERSATION)
    assert victim_id not in rows and len(rows) == locomo_store.count(CONVERSATION)
    open_ask(page, app_url, CONVERSATION)
    ask(page, QUESTION, budget=400)
    assert victim_id not in explained_ids(page)
    assert victim.text not in page.locator("pre[data-testid=block]").inner_text()


def fact_id(store: MemoryStore, text: str) -> str:
    return next(m.id for m in store.list(CONVERSATION, limit=100) if m.text == text)


def test_pin_and_unpin_through_the_page(page: Any, app_url: str, locomo_store: MemoryStore) -> None:
    memory_id = fact_id(locomo_store, FACTS[1]["text"])
    assert not locomo_store.get(memory_id, namespace=CONVERSATION).pinned
    open_namespace(page, app_url, CONVERSATION)
    open_memory_row(page, memory_id)

    follow(page, page.locator("button[data-testid=action-pin]"))
    page.locator("[data-testid=flash]").wait_for()
    assert locomo_store.get(memory_id, namespace=CONVERSATION).pinned
    assert page.locator("button[data-testid=action-pin]").count() == 0

    follow(page, page.locator("button[data-testid=action-unpin]"))
    page.locator("[data-testid=flash]").wait_for()
    assert not locomo_store.get(memory_id, namespace=CONVERSATION).pinned


def test_editing_a_fact_supersedes_it(page: Any, app_url: str, locomo_store: MemoryStore) -> None:
    old_id = fact_id(locomo_store, FACTS[0]["text"])
    new_text = "Caroline chose an adoption agency that welcomes single parents"
    open_namespace(page, app_url, CONVERSATION)
    open_memory_row(page, old_id)

    form = page.locator("form[data-testid=edit-form]")
    form.locator("textarea[name=text]").fill(new_text)
    follow(page, form.locator("button[data-testid=action-edit]"))
    page.locator("[data-testid=flash]").wait_for()

    old = locomo_store.get(old_id, namespace=CONVERSATION)  # kept, linked, out of reads
    assert old.superseded_by is not None
    new = locomo_store.get(old.superseded_by, namespace=CONVERSATION)
    assert new.text == new_text and new.supersedes == old_id and new.kind == old.kind
    live = {m.text for m in locomo_store.list(CONVERSATION, limit=100)}
    assert new_text in live and FACTS[0]["text"] not in live
