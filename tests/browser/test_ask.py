"""Asking as the agent would: the block on the page is the block an agent gets, explained."""

from __future__ import annotations

from typing import Any

import pytest
from _steps import ask, config_of, expected_block, open_ask, selected
from _ui_browser import locomo_path, questions

from memory_retrievers import MemoryRetriever, MemoryStore
from memory_retrievers.recall.config import Preset

pytestmark = pytest.mark.long

CONVERSATION = "conv-30"
BUDGET = 120  # small enough that the budget cuts memories


@pytest.fixture(scope="module")
def question() -> str:
    return questions(locomo_path(), CONVERSATION)[0]


def test_the_block_shown_is_the_block_recall_returns(
    page: Any, app_url: str, locomo_store: MemoryStore, question: str
) -> None:
    open_ask(page, app_url, CONVERSATION)
    config = selected(page, "config")
    want = expected_block(locomo_store, CONVERSATION, question, budget=BUDGET, config=config)
    ask(page, question, budget=BUDGET)
    assert page.locator("[data-testid=ask-error]").count() == 0
    assert page.locator("pre[data-testid=block]").inner_text() == want
    used, budget = (int(x) for x in page.locator("[data-testid=block-tokens]").inner_text().split("/"))
    assert budget == BUDGET and 0 < used <= BUDGET


def test_each_memory_is_explained_with_a_picture_and_the_losers_are_listed(
    page: Any, app_url: str, locomo_store: MemoryStore, question: str
) -> None:
    open_ask(page, app_url, CONVERSATION)
    config = config_of(selected(page, "config")).model_copy(update={"record_access": False})
    result = MemoryRetriever(locomo_store).recall(
        question, namespace=CONVERSATION, token_budget=BUDGET, config=config, explain=True
    )
    ask(page, question, budget=BUDGET)
    explained = page.locator("[data-testid=explained-memory]")
    shown = explained.evaluate_all("els => els.map(e => e.dataset.id)")
    assert shown == [m.memory.id for m in result.memories]
    for i in range(explained.count()):
        assert explained.nth(i).locator("svg[data-testid=explanation-picture]").count() == 1
    first = explained.first.text_content()
    for contribution in result.memories[0].explanation.channels:  # each channel that found it is named
        assert contribution.channel in first
    cut = page.locator("[data-testid=cut], [data-testid=loser]").evaluate_all("els => els.map(e => e.dataset.id)")
    assert cut, "a budget this small must cut something, and the page must say what"
    assert {c.id for c in result.cut} <= set(cut)
    assert not set(cut) & set(shown)  # a loser is not also in the block


def test_two_configs_side_by_side(page: Any, app_url: str, locomo_store: MemoryStore, question: str) -> None:
    open_ask(page, app_url, CONVERSATION)
    options = page.locator("form[data-testid=ask-form] select[name=compare] option").evaluate_all(
        "os => os.map(o => o.value)"
    )
    right = Preset.KNOWLEDGE_BASE.value
    assert right in options
    left = selected(page, "config")
    ask(page, question, budget=BUDGET, compare=right)
    assert page.locator("[data-testid=ask-error]").count() == 0
    sides = {"compare-left": left, "compare-right": right}
    for testid, config in sides.items():
        side = page.locator(f"[data-testid={testid}]")
        want = expected_block(locomo_store, CONVERSATION, question, budget=BUDGET, config=config)
        assert side.locator("[data-testid=block]").inner_text() == want, testid
    assert page.locator("[data-testid=compare-diff]").count() == 1


def test_a_bad_budget_is_an_error_on_the_page_not_a_crash(page: Any, app_url: str, question: str) -> None:
    open_ask(page, app_url, CONVERSATION)
    form = page.locator("form[data-testid=ask-form]")
    form.locator("[name=q]").fill(question)
    # the browser's own number validation would refuse a negative budget before sending it
    form.locator("[name=budget]").evaluate("el => { el.removeAttribute('min'); el.type = 'text'; el.value = '-5'; }")
    with page.expect_navigation() as navigation:
        form.locator("button[type=submit], input[type=submit], button:not([type])").first.click()
    assert navigation.value.status in (200, 400)
    assert "budget" in page.locator("[data-testid=ask-error]").inner_text()
