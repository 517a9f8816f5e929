"""What concurrent writers need from an object store: a conditional PUT (``If-None-Match: *``).

Each LanceDB commit writes the next ``_versions/<n>.manifest``. Two writers that read the same
version both ask for ``n + 1``; the store must let exactly one create it, so that the other
rebases and commits ``n + 2``. These tests force that race (a proxy holds the first manifest PUT
until the second arrives) on SeaweedFS, which honours the header, and on the same server with the
header removed, which is what a store without conditional PUTs does.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from memory_retrievers import HashEmbedder, MemoryStore
from testing.local_s3 import LocalS3Server
from testing.race_proxy import OutageProxy

TIMEOUT_S = 120


def _race(uri: str, options: dict[str, str], proxy: Any) -> tuple[list[str], list[str]]:
    """Two stores add one memory each, their commits forced to race; returns (acknowledged, found)."""
    emb = HashEmbedder(32)
    first = MemoryStore(uri, storage_options=options, embedder=emb)
    first.add("seed memory", namespace="n")  # creates the table and its indexes
    second = MemoryStore(uri, storage_options=options, embedder=emb)
    acked: list[str] = []
    errors: list[BaseException] = []

    def write(store: MemoryStore, text: str) -> None:
        try:
            store.add(text, namespace="n", id=text.replace(" ", "-"))
            acked.append(text)
        except BaseException as exc:  # reported below
            errors.append(exc)

    proxy.armed = True
    threads = [
        threading.Thread(target=write, args=(store, text))
        for store, text in ((first, "written by first"), (second, "written by second"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a racing write hung"
    assert not errors, errors
    first.close()
    second.close()
    with MemoryStore(uri, storage_options=options, embedder=emb) as fresh:
        found = sorted(m.text for m in fresh.list("n") if m.text != "seed memory")
    return sorted(acked), found


def test_racing_commits_both_land_on_a_store_with_conditional_put(
    anonymous_s3: LocalS3Server, race_proxy: Callable[..., Any]
) -> None:
    proxy = race_proxy(drop_if_none_match=False)
    acked, found = _race(anonymous_s3.uri(f"race-safe-{uuid.uuid4().hex[:8]}"), proxy.storage_options, proxy)
    assert proxy.raced == 2, "the two commits did not race"
    assert 412 in proxy.outcomes  # SeaweedFS refused the second creation of the same version...
    assert acked == found == ["written by first", "written by second"]  # ...and that writer rebased


def test_a_store_that_ignores_conditional_put_loses_a_racing_commit(
    anonymous_s3: LocalS3Server, race_proxy: Callable[..., Any]
) -> None:
    """The failure mode docs/how-to/object-storage.md warns about, shown rather than assumed."""
    proxy = race_proxy(drop_if_none_match=True)
    acked, found = _race(anonymous_s3.uri(f"race-unsafe-{uuid.uuid4().hex[:8]}"), proxy.storage_options, proxy)
    assert proxy.raced == 2, "the two commits did not race"
    assert 412 not in proxy.outcomes
    assert acked == ["written by first", "written by second"]  # both writers were told it worked
    assert len(found) == 1 and found[0] in acked  # the later manifest replaced the earlier one


# ---------------------------------------------------------------- issue 27 item 17
def _outage_store(anonymous_s3: LocalS3Server, proxy: OutageProxy, name: str) -> MemoryStore:
    # 1 s requests, no client retries of note: LanceDB's own call fails inside the outage.
    options = {**proxy.storage_options, "timeout": "1s", "connect_timeout": "1s"}
    return MemoryStore(
        anonymous_s3.uri(f"{name}-{uuid.uuid4().hex[:8]}"),
        storage_options=options,
        embedder=HashEmbedder(32),
        config={"write_linger": timedelta(milliseconds=300)},
    )


def test_item17_a_short_outage_right_after_a_commit_neither_fails_nor_doubles_the_write(
    anonymous_s3: LocalS3Server,
) -> None:
    proxy = OutageProxy(anonymous_s3.port, outage_s=6.0)
    try:
        store = _outage_store(anonymous_s3, proxy, "outage-add")
        try:
            store.add("seed memory", namespace="n")
            proxy.armed = True
            got = store.add("Ana moved to Porto", namespace="n")  # its commit lands, then the network drops
            assert got.action.value == "added"
            assert proxy.dropped > 0, "the outage did not hit the write"
            proxy.armed = True
            turns = [f"turn {i} of the chat" for i in range(4)]
            pending = [store.add_later(t, namespace="n", kind="message", session_id="s") for t in turns]
            store.flush()
            assert [p.result(TIMEOUT_S).action.value for p in pending] == ["added"] * 4
            stored = sorted(m.text for m in store.list("n", limit=100))
            assert stored == sorted(["seed memory", "Ana moved to Porto", *turns])  # each exactly once
        finally:
            store.close()
    finally:
        proxy.close()


def test_item17_a_short_outage_after_a_supersede_or_delete_commit_reports_what_landed(
    anonymous_s3: LocalS3Server,
) -> None:
    proxy = OutageProxy(anonymous_s3.port, outage_s=6.0)
    try:
        store = _outage_store(anonymous_s3, proxy, "outage-edit")
        try:
            store.add("Ana lives in Lisbon", namespace="n", id="addr")
            store.add("to delete", namespace="n", id="del")
            proxy.armed = True
            new = store.supersede("addr", "Ana lives in Porto", namespace="n")  # not StorageError
            assert proxy.dropped > 0, "the outage did not hit the supersede"
            assert new.action.value == "added"
            assert store.get("addr", namespace="n").superseded_by == new.id  # the link landed too
            assert sorted(m.text for m in store.list("n")) == ["Ana lives in Porto", "to delete"]
            dropped = proxy.dropped
            proxy.armed = True
            assert store.delete(["del"], namespace="n") == 1  # not StorageError, then NotFoundError on a retry
            assert proxy.dropped > dropped, "the outage did not hit the delete"
            assert [m.text for m in store.list("n")] == ["Ana lives in Porto"]
        finally:
            store.close()
    finally:
        proxy.close()
