"""The pure parts of the Ray bulk jobs, without Ray: batches, the rows Ray embeds, records back from rows."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import lancedb
import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryStore, SentenceTransformerEmbedder
from memory_retrievers.bulk import ImportReport, factory_for
from memory_retrievers.bulk.batching import (
    attach_vectors,
    check_positive,
    export_records,
    sessions_in_order,
    spans,
    text_blocks,
)
from memory_retrievers.bulk.engine import EmbedBatch, require_ray
from memory_retrievers.errors import ConfigError, EmbeddingError, InvalidInputError


def test_spans_cover_every_item_once_in_order() -> None:
    assert list(spans(5, 2)) == [(0, 2), (2, 4), (4, 5)]
    assert list(spans(4, 4)) == [(0, 4)]
    assert list(spans(0, 3)) == []
    covered = [i for a, b in spans(1001, 256) for i in range(a, b)]
    assert covered == list(range(1001))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", None])
def test_sizes_must_be_positive_ints_and_the_error_names_the_argument(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"^workers must be an int >= 1"):
        check_positive(bad, "workers")


def test_text_blocks_carry_positions_and_texts_only() -> None:
    records = [{"text": f"t{i}", "metadata": {"k": i}, "namespace": "a"} for i in range(5)]
    blocks = text_blocks(records, 2)
    assert blocks == [
        {"i": [0, 1], "text": ["t0", "t1"]},
        {"i": [2, 3], "text": ["t2", "t3"]},
        {"i": [4], "text": ["t4"]},
    ]


def test_text_blocks_name_the_record_without_text() -> None:
    with pytest.raises(InvalidInputError, match=r"record 1: .*'text' string"):
        text_blocks([{"text": "ok"}, {"txt": "no"}], 8)


def test_attach_vectors_keeps_a_callers_vector_and_refuses_a_short_batch() -> None:
    mine = [9.0, 9.0]
    records = [{"text": "a"}, {"text": "b", "vector": mine}]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    out = attach_vectors(records, vectors)
    assert out[0]["vector"].tolist() == [1.0, 0.0] and out[1]["vector"] is mine
    assert "vector" not in records[0]  # copies: the caller's records are not changed
    with pytest.raises(InvalidInputError, match=r"records 10-11: 1 vectors for 2 records"):
        attach_vectors(records, vectors[:1], start=10)


def test_sessions_keep_first_appearance_order_and_turn_order() -> None:
    turns = [SimpleNamespace(session_id=s, n=i) for i, s in enumerate(["b", "a", "b", None, "a"])]
    grouped = sessions_in_order(turns)
    assert [s for s, _ in grouped] == ["b", "a", None]
    assert [[t.n for t in ts] for _, ts in grouped] == [[0, 2], [1, 4], [3]]


def test_export_records_from_raw_rows_equal_the_stores_export(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    added = store.add_many(
        [
            {"text": f"turn {i}", "kind": "message", "session_id": "s", "created_at": when + timedelta(seconds=i)}
            for i in range(4)
        ],
        namespace="alice",
    )
    store.supersede(added[0].id, "turn 0, corrected", namespace="alice")
    rows = lancedb.connect(store.uri).open_table(store.table_name).to_arrow().to_pylist()
    mine = sorted(export_records(rows), key=lambda r: r["id"])
    theirs = sorted(store.admin.export("alice"), key=lambda r: r["id"])
    assert mine == theirs and len(mine) == 5


def test_the_builtin_embedders_are_rebuilt_from_their_settings() -> None:
    hashed = factory_for(HashEmbedder(48, name="h48"))()
    assert isinstance(hashed, HashEmbedder) and (hashed.dimension, hashed.name) == (48, "h48")
    st = factory_for(SentenceTransformerEmbedder("some/model", batch_size=7, name="mine"))()
    assert isinstance(st, SentenceTransformerEmbedder)
    assert (st._model_name, st._batch_size, st.name) == ("some/model", 7, "mine")


def test_an_embedder_that_cannot_be_pickled_asks_for_a_factory() -> None:
    pytest.importorskip("ray")

    class Unpicklable(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(8)
            self.lock = threading.Lock()  # what a model client holds

    with pytest.raises(ConfigError, match=r"embedder_factory=<a function"):
        factory_for(Unpicklable())
    # A subclass that pickles is shipped as itself, not rebuilt as the base class.
    copied = factory_for(type("Tuned", (HashEmbedder,), {})(8))()
    assert type(copied).__name__ == "Tuned"


def test_the_embedding_actor_returns_unit_vectors_by_position() -> None:
    embed = EmbedBatch(lambda: HashEmbedder(16))
    out = embed({"i": np.array([4, 5]), "text": np.array(["red apple", "blue sky"], dtype=object)})
    assert out["i"].tolist() == [4, 5]
    assert out["vector"].dtype == np.float32 and out["vector"].shape == (2, 16)
    assert np.allclose(np.linalg.norm(out["vector"], axis=1), 1.0)
    assert np.array_equal(out["vector"], HashEmbedder(16).embed_documents(["red apple", "blue sky"]))


def test_the_embedding_actor_refuses_a_wrong_width() -> None:
    class Liar(HashEmbedder):
        @property
        def dimension(self) -> int:
            return 8

    with pytest.raises(EmbeddingError, match="8"):
        EmbedBatch(lambda: Liar(16))({"i": np.array([0]), "text": np.array(["x"], dtype=object)})


def test_without_ray_a_job_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r'pip install "\./memory-retrievers\[ray\]"'):
        require_ray()


def test_importing_the_bulk_package_loads_no_ray() -> None:
    code = "import sys, memory_retrievers, memory_retrievers.bulk; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "memory_retrievers.bulk" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("ray", "lance_ray", "torch")}


def test_the_report_counts_per_second() -> None:
    report = ImportReport(records=600, added=590, updated=4, skipped=6, batches=3, seconds=2.0)
    assert report.per_second == 300.0
    assert report.to_dict()["per_second"] == 300.0
    assert ImportReport(0, 0, 0, 0, 0, 0.0).per_second == 0.0
