"""Namespaces and ids in URLs: one segment each, exact round trip, links inside any mount."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from memory_retrievers import MemoryStore
from memory_retrievers.ui import create_app
from memory_retrievers.ui.links import decode_namespace, encode_namespace

from .conftest import ODD

NAMES = ["alice", "team/a", "50% off", "a~b", "Zoë ü", "日本語", "x.y-z_", "/leading/", "m/x/m", "%2F", "a b+c&d=e?"]


@pytest.mark.parametrize("name", NAMES)
def test_a_namespace_round_trips_through_one_url_segment(name: str) -> None:
    segment = encode_namespace(name)
    assert "/" not in segment and "%" not in segment and " " not in segment
    assert decode_namespace(segment) == name


def test_plain_names_stay_readable_and_others_are_escaped_with_tilde() -> None:
    assert encode_namespace("alice") == "alice"
    assert encode_namespace("team/a") == "team~2Fa"
    assert encode_namespace("a~b") == "a~7Eb"  # the escape character itself is escaped: no ambiguity


@pytest.mark.parametrize("segment", ["a~", "a~zz", "~C3"])
def test_a_segment_that_is_not_an_encoding_is_refused(segment: str) -> None:
    with pytest.raises(ValueError):
        decode_namespace(segment)


def test_a_stray_tilde_in_the_url_is_a_404_page(client: TestClient) -> None:
    response = client.get("/ns/a~zz")
    assert response.status_code in (400, 404)
    assert "Traceback" not in response.text


@pytest.mark.parametrize("name", NAMES)
def test_pages_of_odd_namespaces_round_trip(store: MemoryStore, make_client, name: str) -> None:  # type: ignore[no-untyped-def]
    added = store.add(f"a memory of {name}", namespace=name)
    client = make_client(store)
    home = client.get("/")
    assert f'data-namespace="{name}"'.replace("&", "&amp;") in home.text or name in home.text
    page = client.get(f"/ns/{encode_namespace(name)}")
    assert page.status_code == 200, page.text
    assert f'data-id="{added.id}"' in page.text
    memory = client.get(f"/ns/{encode_namespace(name)}/m/{encode_namespace(added.id)}")
    assert memory.status_code == 200 and f"a memory of {name}".replace("&", "&amp;") in memory.text


def test_the_app_mounted_under_a_prefix_links_inside_its_mount(ui_store: MemoryStore) -> None:
    parent = Starlette(routes=[Mount("/inspector", app=create_app(ui_store))])
    with TestClient(parent, base_url="http://127.0.0.1") as client:
        home = client.get("/inspector/")
        assert home.status_code == 200
        assert 'href="/inspector/static/app.css"' in home.text
        link = f"/inspector/ns/{encode_namespace(ODD)}"
        assert f'href="{link}"' in home.text
        page = client.get(link)
        assert page.status_code == 200 and "Ana likes jazz" in page.text
        hrefs = [h for h in page.text.split('href="')[1:] if h.startswith("/")]
        assert hrefs and all(h.startswith("/inspector/") for h in hrefs), hrefs
        memory_link = next(h.split('"')[0] for h in hrefs if "/m/" in h)
        assert client.get(memory_link).status_code == 200
        assert client.get("/inspector/static/app.js").status_code == 200


def test_a_token_visit_under_a_mount_redirects_inside_the_mount(ui_store: MemoryStore) -> None:
    parent = Starlette(routes=[Mount("/inspector", app=create_app(ui_store, token="s3cret"))])
    with TestClient(parent, base_url="http://127.0.0.1", follow_redirects=False) as client:
        first = client.get("/inspector/ns/alice?token=s3cret")
        assert first.status_code == 303 and first.headers["location"] == "/inspector/ns/alice"
        assert client.get("/inspector/ns/alice").status_code == 200
