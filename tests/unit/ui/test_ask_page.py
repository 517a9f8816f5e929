"""The ask page through the inspector's app (``create_app``): the form, the block, the pictures, compare."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memory_retrievers import MemoryRetriever, MemoryStore
from memory_retrievers.recall.sections import ContextSection, section_of
from memory_retrievers.testing import ManualClock
from memory_retrievers.ui import create_app
from memory_retrievers.ui.links import encode_namespace

NS = "alice/work"
QUERY = "which theme does Alice like?"
HOSTILE = "user: <script>alert('pwned')</script> I \"love\" the dark theme & <b>bold</b> fonts"
VOID = {"input", "br", "meta", "link", "img", "hr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        out = []
        for child in self.children:
            if (tag is None or child.tag == tag) and all(
                child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()
            ):
                out.append(child)
            out += child.find_all(tag, **attrs)
        return out

    def testid(self, name: str) -> list[Node]:
        return self.find_all(data_testid=name)


class Tree(HTMLParser):
    """A small DOM: enough to find elements by attribute and read their text (as a browser shows it)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for node in self.stack:
            node.parts.append(data)


@pytest.fixture
def alice(store: MemoryStore, clock: ManualClock) -> MemoryStore:
    texts = [
        ("Alice prefers the dark theme in every editor", "preference", {}),
        ("Always answer Alice in British English", "fact", {"pinned": True}),
        (HOSTILE, "message", {}),
        ("user: the light theme hurts my eyes", "message", {"context": "editor theme"}),
        ("Alice's dog is called Rex", "fact", {}),
        ("Alice moved to Berlin in March", "event", {}),
        ("user: my theme song is Bohemian Rhapsody", "message", {"context": "music theme"}),
        ("Alice keeps her dotfiles on GitHub", "fact", {}),
    ]
    for i, (text, kind, extra) in enumerate(texts):
        store.add(text, namespace=NS, kind=kind, **extra)
        clock.advance(days=20 if i % 2 else 2)
    return store


@pytest.fixture
def client(alice: MemoryStore, tmp_path: Path) -> Iterator[TestClient]:
    # The inspector's own app (read-only, as a viewer would run it): its base.html, links and guard.
    with TestClient(create_app(alice, read_only=True), base_url="http://127.0.0.1", raise_server_exceptions=True) as c:
        yield c


URL = f"/ns/{encode_namespace(NS)}/ask"


def test_an_empty_query_shows_the_form_alone(client: TestClient) -> None:
    page = client.get(URL)
    assert page.status_code == 200
    tree = Tree(page.text).root
    (form,) = tree.find_all("form", data_testid="ask-form")
    assert form.attrs["method"] == "get" and form.attrs["action"].endswith(URL)
    assert {i.attrs["name"] for i in form.find_all("input")} == {"q", "budget"}
    assert {s.attrs["name"] for s in form.find_all("select")} == {"config", "compare"}
    assert {t.attrs["name"] for t in form.find_all("textarea")} == {"overrides", "compare_overrides"}
    options = [o.attrs["value"] for o in form.find_all("select", name="config")[0].find_all("option")]
    assert options == ["default", "assistant", "support", "knowledge_base"]
    assert not tree.testid("block") and not tree.testid("ask-error") and not tree.testid("explained-memory")


def test_the_page_shows_the_exact_block_and_why(client: TestClient, alice: MemoryStore) -> None:
    page = client.get(URL, params={"q": QUERY, "budget": "90"})
    assert page.status_code == 200
    tree = Tree(page.text).root
    expected = MemoryRetriever(alice, config={"record_access": False}).recall(QUERY, namespace=NS, token_budget=90)
    (block,) = tree.testid("block")
    assert block.tag == "pre" and block.text == expected.to_context()
    assert tree.testid("block-tokens")[0].text == f"{expected.tokens_used} / 90"
    sections = tree.testid("section")
    present = {section_of(m.memory) for m in expected.memories}
    assert [s.attrs["data-section"] for s in sections] == [c.value for c in ContextSection if c in present]
    assert len(sections) == 3  # pinned, facts, conversation: each under its title in the block
    for s in sections:
        ids = [a.attrs["href"].rsplit("-", 1)[1] for a in s.find_all("a")]
        assert ids == [m.id for m in expected.memories if section_of(m.memory).value == s.attrs["data-section"]]
    explained = tree.testid("explained-memory")
    assert [e.attrs["data-id"] for e in explained] == [m.id for m in expected.memories]
    for e in explained:
        (svg,) = e.find_all("svg", data_testid="explanation-picture")
        assert svg.attrs["role"] == "img" and svg.attrs["aria-label"].startswith("Why ")
        (a,) = [x for x in e.find_all("a") if x.attrs.get("class") == "memory-link"]
        assert a.attrs["href"].endswith(f"/ns/{encode_namespace(NS)}/m/{e.attrs['data-id']}")
    cut = {c.attrs["data-id"]: c for c in tree.testid("cut")}
    assert expected.trimmed and any(c.attrs["data-reason"] == "over_budget" for c in cut.values())
    assert all("did not fit" in c.text for c in cut.values() if c.attrs["data-reason"] == "over_budget")
    losers = tree.testid("loser")
    assert losers and all(loser.attrs["data-id"] in cut for loser in losers)
    assert all(loser.find_all("svg", data_testid="explanation-picture") for loser in losers)
    assert tree.find_all("svg", data_testid="strip-picture")


def test_hostile_memory_text_is_escaped_everywhere(client: TestClient) -> None:
    page = client.get(URL, params={"q": "dark theme fonts", "budget": "5000"})
    assert page.status_code == 200
    assert "<script>" not in page.text and "<b>bold" not in page.text
    tree = Tree(page.text).root
    assert HOSTILE in tree.testid("block")[0].text  # shown as the agent reads it
    # CSP: no inline script or style; the one script is the app's own file.
    assert [n.attrs.get("src") for n in tree.find_all("script")] == ["/static/app.js"]
    assert page.text.lower().count("<script") == 1 and 'style="' not in page.text


def test_compare_shows_both_sides_and_their_diff(client: TestClient) -> None:
    page = client.get(URL, params={"q": QUERY, "compare": "knowledge_base", "budget": "5000"})
    assert page.status_code == 200
    tree = Tree(page.text).root
    (left,), (right,), (diff,) = tree.testid("compare-left"), tree.testid("compare-right"), tree.testid("compare-diff")
    left_ids = [e.attrs["data-id"] for e in left.testid("explained-memory")]
    right_ids = [e.attrs["data-id"] for e in right.testid("explained-memory")]
    assert left_ids and right_ids and left.testid("block") and right.testid("block")
    rows = {r.attrs["data-id"]: r.attrs["data-diff"] for r in diff.find_all("li")}
    assert rows == {
        **{i: "only-left" for i in left_ids if i not in right_ids},
        **{i: "only-right" for i in right_ids if i not in left_ids},
        **{i: "both" for i in left_ids if i in right_ids},
    }
    for r in diff.find_all("li", data_diff="both"):
        i = r.attrs["data-id"]
        assert int(r.attrs["data-move"]) == left_ids.index(i) - right_ids.index(i)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"budget": "lots"}, "budget"),
        ({"config": "fastest"}, "config"),
        ({"overrides": "{not json"}, "overrides"),
        ({"overrides": '{"k": 0}'}, "overrides"),
        ({"compare": "support", "compare_overrides": '{"nope": 1}'}, "compare_overrides"),
    ],
)
def test_a_bad_field_gives_400_naming_it_and_keeps_what_was_typed(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    page = client.get(URL, params={"q": QUERY, **params})
    assert page.status_code == 400
    tree = Tree(page.text).root
    (error,) = tree.testid("ask-error")
    assert error.text.startswith(f"{field}: ")
    assert tree.find_all("input", name="q")[0].attrs["value"] == QUERY
    assert not tree.testid("block")


def test_only_get(client: TestClient, alice: MemoryStore) -> None:
    # A read-only inspector refuses every POST before routing; in a writable one the path is a
    # namespace action's, and "ask" is none (400), with or without the form's CSRF token.
    assert client.post(URL, data={"q": QUERY}).status_code == 403
    app = create_app(alice)
    with TestClient(app, base_url="http://127.0.0.1") as writable:
        for form in ({"q": QUERY}, {"q": QUERY, "csrf_token": app.state.csrf_token}):
            answer = writable.post(URL, data=form)
            assert answer.status_code == 400 and "ask" in answer.text
    assert alice.count(namespace=NS) == 8


def test_the_page_records_no_access(client: TestClient, alice: MemoryStore) -> None:
    before = {m.id: m.access_count for m in alice.list(NS, limit=100)}
    assert client.get(URL, params={"q": QUERY}).status_code == 200
    assert client.get(URL, params={"q": QUERY, "compare": "support"}).status_code == 200
    assert {m.id: m.access_count for m in alice.list(NS, limit=100)} == before


def test_an_odd_namespace_round_trips(client: TestClient, alice: MemoryStore) -> None:
    alice.add("Zoë likes the dark theme", namespace="team 5/zoë")
    page = client.get(f"/ns/{encode_namespace('team 5/zoë')}/ask", params={"q": "dark theme"})
    assert page.status_code == 200
    assert "Zoë likes the dark theme" in Tree(page.text).root.testid("block")[0].text


def all_nodes(node: Node) -> Iterator[Node]:
    for child in node.children:
        yield child
        yield from all_nodes(child)


def test_one_config_against_itself_with_overrides_keeps_the_page_ids_unique(client: TestClient) -> None:
    params = {"q": QUERY, "compare": "default", "compare_overrides": '{"k": 2}', "budget": "5000"}
    page = client.get(URL, params=params)
    assert page.status_code == 200
    tree = Tree(page.text).root
    ids = [n.attrs["id"] for n in all_nodes(tree) if "id" in n.attrs]
    assert len(ids) == len(set(ids))
    assert len(tree.testid("compare-right")[0].testid("explained-memory")) == 2
    anchors = {a.attrs["href"][1:] for a in tree.find_all("a") if a.attrs.get("href", "").startswith("#")}
    assert anchors and anchors <= set(ids)  # every section link lands on its memory
