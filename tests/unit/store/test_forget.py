"""Issue 27 item 1: a forgotten memory never comes back through a long-lived reader.

Two stores on one folder stand for two processes. Process B forgets a namespace and restores an
edited (redacted) export of it; restore writes the exported ids and timestamps, so before the fix
the reader's view (A) found every row's revision, ``updated_at`` and access statistics unchanged
and kept serving the old text from recall while ``list()`` showed the redacted one.
"""

from __future__ import annotations

from pathlib import Path

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from memory_retrievers.testing import ManualClock

SECRET = "Ana has HIV and sees doctor Weber on Mondays"
CONFIG = {"record_access": False}


def _pair(tmp_path: Path, clock: ManualClock) -> tuple[MemoryStore, MemoryStore]:
    embedder = HashEmbedder(32)
    return (
        MemoryStore(tmp_path / "db", embedder=embedder, clock=clock),
        MemoryStore(tmp_path / "db", embedder=embedder, clock=clock),
    )


def test_item1_a_reader_does_not_keep_text_forgotten_and_restored_redacted(tmp_path: Path) -> None:
    clock = ManualClock()
    reader, admin = _pair(tmp_path, clock)
    try:
        admin.add_many([{"text": SECRET}, {"text": "Ana likes hiking in the Alps"}], namespace="ana")
        retriever = MemoryRetriever(reader, namespace="ana", config=CONFIG)
        assert SECRET in [m.text for m in retriever.recall("doctor Weber Mondays").memories]  # the view is built
        backup = admin.admin.export("ana")
        redacted = [{**r, "text": "Ana sees a doctor on Mondays"} if r["text"] == SECRET else r for r in backup]
        admin.forget("ana")
        admin.admin.restore(redacted)
        texts = [m.text for m in retriever.recall("doctor Weber Mondays").memories]
        assert SECRET not in texts
        assert "Ana sees a doctor on Mondays" in texts
        listed = sorted(m.text for m in reader.list("ana"))
        assert listed == ["Ana likes hiking in the Alps", "Ana sees a doctor on Mondays"]
    finally:
        reader.close()
        admin.close()


def test_item1_a_delete_and_re_add_of_one_id_at_the_same_instant_is_seen(tmp_path: Path) -> None:
    # With an injected clock a delete and a re-add of the same id can share every timestamp: the
    # staleness check must still see the new content.
    clock = ManualClock()
    reader, writer = _pair(tmp_path, clock)
    try:
        writer.add("the door code is 4711", namespace="u", id="code")
        retriever = MemoryRetriever(reader, namespace="u", config=CONFIG)
        assert [m.text for m in retriever.recall("door code").memories] == ["the door code is 4711"]
        writer.delete("code", namespace="u")
        writer.add("the door code was changed", namespace="u", id="code")
        assert [m.text for m in retriever.recall("door code").memories] == ["the door code was changed"]
    finally:
        reader.close()
        writer.close()
