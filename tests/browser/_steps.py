"""What a person does in the inspector, as Playwright steps shared by the browser tests.

Every step navigates by clicking what the page shows (or by typing into its forms), never by
building a URL: the tests hold whatever encoding the app gives namespaces and ids in links.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memory_retrievers import MemoryStore, RecallConfig

PAGE_SIZE = 50
TOKEN = "browser-test-token-7f3a"
#: A namespace a URL must escape (a slash, a space, a percent sign, unicode), and its memories.
ODD = "team/ä 50%"
ODD_MEMORIES = ["Zoë's team ships on Fridays", "Zoë prefers tea over coffee at 50% strength"]


@dataclass
class Recorded:
    """Everything a page asked the network for, and what its console complained about."""

    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def origins(self) -> set[str]:
        return {f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in self.requests}


def follow(page: Any, link: Any) -> None:
    """Click a link or button that loads a new page, and wait for that page."""
    with page.expect_navigation():
        link.click()


def open_namespace(page: Any, base: str, namespace: str) -> None:
    """From the namespaces page, click into ``namespace``."""
    page.goto(base + "/")
    row = page.locator(f'tr[data-testid=namespace-row][data-namespace="{namespace}"]')
    follow(page, row.locator("a").first)
    page.locator("[data-testid=namespace-summary]").wait_for()


def memory_row_ids(page: Any) -> list[str]:
    ids: list[str] = page.locator("tr[data-testid=memory-row]").evaluate_all("rows => rows.map(r => r.dataset.id)")
    return ids


def open_memory_row(page: Any, memory_id: str) -> None:
    """On a namespace page, click the memory's row link."""
    follow(page, page.locator(f'tr[data-testid=memory-row][data-id="{memory_id}"] a').first)
    page.locator("[data-testid=memory-text]").wait_for()


def open_ask(page: Any, base: str, namespace: str) -> None:
    open_namespace(page, base, namespace)
    follow(page, page.locator("a[data-testid=ask-link]"))
    page.locator("form[data-testid=ask-form]").wait_for()


def submit(form: Any) -> None:
    form.locator("button[type=submit], input[type=submit], button:not([type])").first.click()


def ask(page: Any, question: str, *, budget: int, config: str | None = None, compare: str | None = None) -> None:
    """Type a question (and budget, configs) into the ask form and send it."""
    form = page.locator("form[data-testid=ask-form]")
    form.locator("[name=q]").fill(question)
    form.locator("[name=budget]").fill(str(budget))
    if config is not None:
        form.locator("select[name=config]").select_option(config)
    if compare is not None:
        form.locator("select[name=compare]").select_option(compare)
    with page.expect_navigation():
        submit(form)
    page.locator("[data-testid=block], [data-testid=compare-left], [data-testid=ask-error]").first.wait_for()


def selected(page: Any, name: str) -> str:
    value: str = page.locator(f"form[data-testid=ask-form] select[name={name}]").input_value()
    return value


def config_of(name: str) -> RecallConfig:
    """The recall config a choice of the ask form's ``config`` select names (a preset, or the defaults)."""
    if name in ("", "default"):
        return RecallConfig()
    return RecallConfig.preset(name)


def expected_block(store: MemoryStore, namespace: str, question: str, *, budget: int, config: str) -> str:
    """What an agent gets for the same question: the block the page must show, character for character."""
    from memory_retrievers import MemoryRetriever

    cfg = config_of(config).model_copy(update={"record_access": False})
    result = MemoryRetriever(store).recall(question, namespace=namespace, token_budget=budget, config=cfg)
    return result.to_context()


def confirm(page: Any, word: str) -> None:
    """On a confirmation page, type the word it asks for and press the button."""
    page.locator("[data-testid=confirm-summary]").wait_for()
    page.locator("input[name=confirm]").fill(word)
    follow(page, page.locator("button[data-testid=confirm-button]"))
    page.locator("[data-testid=flash]").wait_for()
