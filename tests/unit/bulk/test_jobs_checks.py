"""Red-team findings on the Ray bulk jobs (issue 29), each pinned without Ray.

Every bad argument must be refused with a typed error naming it before Ray starts: a stand-in
``require_ray`` fails the test if a job reaches it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.bulk import backfill, clustering, jobs
from memory_retrievers.errors import InvalidInputError
from memory_retrievers.storage.location import TableLocation


def _no_ray(*_: Any, **__: Any) -> Any:
    raise AssertionError("Ray was started before the arguments were checked")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    for module in (jobs, backfill, clustering):
        monkeypatch.setattr(module, "require_ray", _no_ray)
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as opened:
        opened.add("alice likes tea", namespace="alice")
        yield opened


def test_import_refuses_bad_workers_and_factory_before_ray(store: MemoryStore) -> None:
    records = [{"text": "hello", "namespace": "bob"}]
    with pytest.raises(InvalidInputError, match="workers must be an int >= 1, got 0"):
        jobs.import_records(store, records, workers=0)
    with pytest.raises(InvalidInputError, match="embedder_factory"):
        jobs.import_records(store, records, embedder_factory="sentence-transformers")  # type: ignore[arg-type]
    assert store.count(namespace="bob") == 0


def test_reembed_refuses_bad_workers_and_factory_before_ray(store: MemoryStore, tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "new", embedder=HashEmbedder(8)) as target:
        with pytest.raises(InvalidInputError, match="workers must be an int >= 1, got -1"):
            jobs.reembed(store, target, workers=-1)
        with pytest.raises(InvalidInputError, match="embedder_factory"):
            jobs.reembed(store, target, embedder_factory=HashEmbedder(8))  # type: ignore[arg-type]
        assert target.count(namespace="alice") == 0


def test_backfill_refuses_bad_arguments_before_ray(store: MemoryStore) -> None:
    def llm() -> None:
        return None

    with pytest.raises(InvalidInputError, match="workers must be an int >= 1, got 0"):
        backfill.backfill_formation(store, llm, workers=0)
    with pytest.raises(InvalidInputError, match="namespace"):
        backfill.backfill_formation(store, llm, namespaces=[""])
    with pytest.raises(InvalidInputError, match="namespaces is empty"):
        backfill.backfill_formation(store, llm, namespaces=[])
    with pytest.raises(InvalidInputError, match="formation_config"):
        backfill.backfill_formation(store, llm, formation_config={"no_such_field": 1})
    with pytest.raises(InvalidInputError, match="embedder_factory"):
        backfill.backfill_formation(store, llm, embedder_factory=42)  # type: ignore[arg-type]


def test_cluster_refuses_a_factory_that_is_not_callable_before_ray(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="embedder_factory"):
        clustering.cluster_tables(store, embedder_factory="hash")  # type: ignore[arg-type]


def _at(uri: str) -> Any:
    where = TableLocation(uri, "memories")
    return SimpleNamespace(
        uri=uri, table_name="memories", config=SimpleNamespace(model_dump=dict), table_locations=lambda: [where]
    )


@pytest.mark.parametrize(
    ("one", "other"),
    [("s3://bucket/mem", "s3://bucket/mem/"), ("gs://bucket/mem//", "gs://bucket/mem")],
)
def test_reembed_sees_one_object_store_table_spelled_two_ways(one: str, other: str) -> None:
    assert jobs._tables(_at(one)) & jobs._tables(_at(other))  # type: ignore[arg-type]


def test_a_worker_factory_building_another_model_of_the_same_width_is_refused(tmp_path: Path) -> None:
    import numpy as np

    from memory_retrievers.bulk.engine import EmbedBatch, model_of
    from memory_retrievers.errors import EmbedderMismatchError

    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as target:
        model = model_of(target.embedder)
    # Same width, another model: its vectors would be stored in a table of hash-16 vectors unnoticed.
    with pytest.raises(EmbedderMismatchError, match=r"'other-16'.*'hash-16'"):
        EmbedBatch(lambda: HashEmbedder(16, name="other-16"), model)
    with pytest.raises(EmbedderMismatchError, match="dimension 8"):
        jobs._WithVectors(lambda: HashEmbedder(8, name="hash-16"), model)
    same = EmbedBatch(lambda: HashEmbedder(16), model)
    assert same({"i": np.array([0]), "text": np.array(["x"], dtype=object)})["vector"].shape == (1, 16)


def test_the_jobs_refuse_a_factory_of_another_model_before_ray(store: MemoryStore, tmp_path: Path) -> None:
    from memory_retrievers.errors import EmbedderMismatchError

    other = functools.partial(HashEmbedder, 16, name="other-16")
    with pytest.raises(EmbedderMismatchError, match="'other-16'"):
        jobs.import_records(store, [{"text": "hello", "namespace": "bob"}], embedder_factory=other)
    assert store.count(namespace="bob") == 0
    with MemoryStore(tmp_path / "new", embedder=HashEmbedder(16, name="next")) as target:
        with pytest.raises(EmbedderMismatchError, match=r"'other-16'.*'next'"):
            jobs.reembed(store, target, embedder_factory=other)
        assert target.count(namespace="alice") == 0


def test_a_failure_after_committed_batches_says_which_records_were_stored(tmp_path: Path) -> None:
    import numpy as np

    from memory_retrievers.errors import DimensionMismatchError, EmbeddingError

    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        items = [{"text": f"note {i}", "namespace": "bob"} for i in range(4)]
        vectors = np.asarray(store.embedder.embed_documents([r["text"] for r in items]), dtype=np.float32)

        def dies_after_one_batch() -> Any:
            yield 0, vectors[:2]
            raise EmbeddingError("the embedding worker died")

        # The second batch fails in Ray: the first is stored, and the error must say so (a re-run
        # of all four would store records 0-1 twice).
        with pytest.raises(EmbeddingError, match="records 0-1 were stored") as failed:
            jobs._write_in_order(store, items, dies_after_one_batch(), 2, None, False)
        assert [w.id for w in failed.value.written] == [m.id for m in store.list("bob", newest_first=False)]
        assert len(failed.value.written) == 2

        # The second batch's commit fails (a vector of the wrong width): the same.
        bad = [*items[:2], {"text": "note 9", "namespace": "carol"}, {**items[3], "vector": [0.5] * 3}]
        with pytest.raises(DimensionMismatchError, match="records 0-1 were stored") as refused:
            jobs._write_in_order(store, bad, iter([(0, vectors)]), 2, None, False)
        assert len(refused.value.written) == 2 and store.count(namespace="carol") == 0


KEY = "sk_live_the-secret-key-1234"


@pytest.fixture
def cloud_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """LanceDB's ``connect_async`` recording what it is given and opening a local database instead."""
    import lancedb

    calls: list[dict[str, Any]] = []
    real = lancedb.connect_async

    async def recording(uri: str, **kwargs: Any) -> Any:
        calls.append({"uri": uri, **kwargs})
        local = {k: v for k, v in kwargs.items() if k in ("read_consistency_interval", "session")}
        return await real(tmp_path / "cloud", **local)

    monkeypatch.setattr(lancedb, "connect_async", recording)
    return calls


def test_a_task_reopens_a_cloud_store_with_its_key_and_shows_it_nowhere(
    cloud_calls: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_retrievers.bulk.tables import open_table, table_openers
    from memory_retrievers.errors import ConfigError

    with MemoryStore("db://prod", embedder=HashEmbedder(16), api_key=KEY, region="eu-west-1") as store:
        store.add("alice likes tea", namespace="alice")
        (opener,) = table_openers(store, None)
        assert KEY not in repr(opener)  # a Ray error or a log quoting a task's arguments
        with open_table(opener, HashEmbedder(16)) as reopened:  # as a cluster or backfill task does
            assert reopened.count(namespace="alice") == 1
        assert cloud_calls[-1]["api_key"] == KEY and cloud_calls[-1]["region"] == "eu-west-1"
        # reembed reads the source with Lance itself, which cannot read LanceDB Cloud: refused before Ray.
        monkeypatch.setattr(jobs, "require_ray", _no_ray)
        # (The recording connection opens every store in one local database: the target's own table.)
        target = MemoryStore(tmp_path / "new", table_name="other", embedder=HashEmbedder(8))
        with target, pytest.raises(ConfigError, match="db://") as refused:
            jobs.reembed(store, target)
        assert KEY not in str(refused.value)
    from memory_retrievers import ShardedMemoryStore

    sharded = ShardedMemoryStore(["db://one", str(tmp_path / "local")], embedder=HashEmbedder(16), api_key=KEY)
    on_cloud, local = table_openers(sharded, None)
    assert on_cloud["cloud"].api_key == KEY and local["cloud"] is None and KEY not in repr([on_cloud, local])
    sharded.close()


def test_a_cluster_task_failing_on_a_cloud_table_does_not_quote_its_key() -> None:
    from memory_retrievers.bulk.clustering import _cluster_one, _run_tasks
    from memory_retrievers.storage.connect import CloudAccess

    opener = {"uri": "db://prod", "table_name": "memories", "cloud": CloudAccess(api_key=KEY)}

    def leaky() -> Any:  # a client error quoting the request it sent, key included
        raise RuntimeError(f"401 Unauthorized: x-api-key={KEY}")

    failed = _cluster_one(0, opener, leaky, False)
    assert failed.error is not None and "401 Unauthorized" in str(failed.error)
    assert KEY not in str(failed.error) and KEY not in str(failed.to_dict())

    class _DeadRay:
        def get(self, ref: Any) -> Any:
            raise RuntimeError(f"worker died holding x-api-key={KEY}")

    (dead,) = _run_tasks(_DeadRay(), SimpleNamespace(remote=lambda *a: "ref"), [(0,)], [opener], None)
    assert dead.error is not None and "worker died" in str(dead.error) and KEY not in str(dead.error)


def test_import_and_reembed_check_namespace_dedup_and_storage_options_before_ray(
    store: MemoryStore, tmp_path: Path
) -> None:
    records = [{"text": "hello", "namespace": "bob"}]  # names its own: the argument was never looked at
    with pytest.raises(InvalidInputError, match="namespace"):
        jobs.import_records(store, records, namespace="")
    with pytest.raises(InvalidInputError, match="namespace"):
        jobs.import_records(store, records, namespace=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="dedup must be True, False or None, got 'yes'"):
        jobs.import_records(store, records, dedup="yes")  # type: ignore[arg-type]
    assert store.count(namespace="bob") == 0
    with MemoryStore(tmp_path / "new", embedder=HashEmbedder(8)) as target:
        with pytest.raises(InvalidInputError, match="storage_options must be a dict of str to str"):
            jobs.reembed(store, target, storage_options="aws_region=eu-west-1")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="storage_options must be a dict of str to str"):
            jobs.reembed(store, target, storage_options={"timeout": 30})  # type: ignore[dict-item]


def test_backfill_and_cluster_check_storage_options_before_ray(store: MemoryStore) -> None:
    secret = {"aws_secret_access_key": "wJalr-secret", "timeout": 30}
    with pytest.raises(InvalidInputError, match="storage_options must be a dict of str to str") as refused:
        clustering.cluster_tables(store, storage_options=secret)  # type: ignore[arg-type]
    assert "wJalr-secret" not in str(refused.value)
    with pytest.raises(InvalidInputError, match="storage_options must be a dict of str to str"):
        backfill.backfill_formation(store, lambda: None, storage_options=secret)  # type: ignore[arg-type]


def _snapshot_read(location: Path) -> Any:
    """What the Ray dataset of a re-embedding yields: the rows as read now, each with a new 8-d vector."""
    import lancedb
    import pyarrow as pa

    from memory_retrievers.storage.fields import SCALAR_COLUMNS

    # Read with LanceDB, not pylance: importing pylance installs its at-fork warning in this process.
    read = lancedb.connect(location).open_table("memories").to_arrow().select(list(SCALAR_COLUMNS))

    class _Read:
        def iter_batches(self, **_: Any) -> Any:
            vectors = pa.FixedSizeListArray.from_arrays(pa.array([0.25] * 8 * read.num_rows, pa.float32()), 8)
            yield read.append_column("vector", vectors)

    return _Read()


def _contents(store: MemoryStore) -> dict[str, list[dict[str, Any]]]:
    usage = ("vector", "access_count", "last_accessed_at")
    return {
        ns: [{k: v for k, v in r.items() if k not in usage} for r in store.admin.export(ns)]
        for ns in store.namespaces()
    }


def test_a_reembedding_catches_up_on_every_write_made_while_it_ran(tmp_path: Path) -> None:
    """Issue 40 item 2: an add and a supersede made during the job never reached the copy, and the
    replaced fact ("Paris") was live again there; only deletions were reconciled."""
    with MemoryStore(tmp_path / "old", embedder=HashEmbedder(16)) as source:
        paris = source.add("alice lives in Paris", namespace="alice")
        tea = source.add("alice drinks tea", namespace="alice")
        chess = source.add("bob plays chess", namespace="bob")
        gone = source.add("alice's address is 1 Main St", namespace="alice")
        source.add("carol is a nurse", namespace="carol")
        snapshot = _snapshot_read(tmp_path / "old")  # the Ray read sees these five
        # ...and the application goes on writing while the job embeds them.
        berlin = source.supersede(paris.id, "alice lives in Berlin", namespace="alice")
        source.update(tea.id, namespace="alice", text="alice drinks green tea", tags=["drinks"])
        source.delete(gone.id, namespace="alice")
        source.forget("carol")
        later = source.add("bob moved to Oslo", namespace="bob")
        source.add("dan joined today", namespace="dan")  # a namespace the snapshot never saw
        with MemoryStore(tmp_path / "new", embedder=HashEmbedder(8)) as target:
            report = jobs._restore_all(target, snapshot, 100, 0.0, source=source)
            assert _contents(target) == _contents(source)
            live = [m.text for m in target.list("alice")]
            assert "alice lives in Paris" not in live and "alice lives in Berlin" in live
            assert target.get(paris.id, namespace="alice").superseded_by == berlin.id
            assert target.count(namespace="carol") == 0, "a forgotten namespace was resurrected in the new table"
            assert target.get([chess.id, later.id], namespace="bob")[1].text == "bob moved to Oslo"
            # A changed text is embedded again by the target's own embedder, not left with the old vector.
            (green,) = [r for r in target.admin.export("alice") if r["id"] == tea.id]
            assert np.allclose(green["vector"], HashEmbedder(8).embed_documents(["alice drinks green tea"])[0])
            # The report says what the catch-up did: 5 copied after the snapshot (Berlin, Paris now
            # superseded, the changed tea, Oslo, Dan), 2 deleted again (the address, Carol's memory).
            assert report.records == 5 and report.caught_up == 5 and report.skipped == 2
            assert report.to_dict()["caught_up"] == 5


def test_a_reembedding_leaves_the_targets_own_memories_alone(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "old", embedder=HashEmbedder(16)) as source:
        source.add("bob plays chess", namespace="bob")
        snapshot = _snapshot_read(tmp_path / "old")
        with MemoryStore(tmp_path / "new", embedder=HashEmbedder(8)) as target:
            own = target.add("bob's note kept only in the new table", namespace="bob")
            jobs._restore_all(target, snapshot, 100, 0.0, source=source)
            assert target.get(own.id, namespace="bob").text == "bob's note kept only in the new table"


def test_a_reembedding_beside_writers_that_never_pause_says_so(tmp_path: Path, monkeypatch: Any) -> None:
    from memory_retrievers.bulk import catch_up as catching
    from memory_retrievers.errors import SourceChangingError

    with MemoryStore(tmp_path / "old", embedder=HashEmbedder(16)) as source:
        source.add("bob plays chess", namespace="bob")
        snapshot = _snapshot_read(tmp_path / "old")
        real = catching._difference
        writes = iter(range(100))

        def busy(*args: Any) -> Any:  # a writer adds one more memory before every comparison
            source.add(f"bob note {next(writes)}", namespace="bob")
            return real(*args)

        monkeypatch.setattr(catching, "_difference", busy)
        with MemoryStore(tmp_path / "new", embedder=HashEmbedder(8)) as target:
            with pytest.raises(SourceChangingError, match="Pause the writers") as behind:
                jobs._restore_all(target, snapshot, 100, 0.0, source=source)
            assert behind.value.behind == 1
            # Everything copied so far stays: the snapshot and the notes of the rounds run.
            assert target.count(namespace="bob") == 1 + catching.ROUNDS


def test_a_namespace_forgotten_while_its_backfill_runs_is_not_refilled_with_facts(tmp_path: Path) -> None:
    import json

    from memory_retrievers.bulk.engine import factory_for
    from memory_retrievers.bulk.tables import table_openers

    fact = {"text": "Ana moved to Lisbon.", "about": "Ana", "sources": [1], "confidence": "explicit"}
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(64)) as user_side:
        user_side.add_many(
            [{"text": f"Ana: I moved to Lisbon ({i})", "kind": "message", "session_id": f"s{i}"} for i in range(2)],
            namespace="ana",
            dedup=False,
        )
        (opener,) = table_openers(user_side, None)

        class ForgetsMidway:  # the user's "forget me" lands while the LLM extracts the first session
            def complete(self, prompt: str) -> str:
                if prompt.startswith("Extract"):
                    user_side.forget("ana")
                    return "```json\n" + json.dumps({"facts": [fact]}) + "\n```"
                return '{"action": "ADD"}'

            async def acomplete(self, prompt: str) -> str:
                return self.complete(prompt)

        done = backfill._form_namespace(opener, factory_for(user_side.embedder), ForgetsMidway, {}, "ana")
        assert user_side.count(namespace="ana") == 0, "facts about a forgotten user were stored after the forget"
        assert done.forgotten and done.added == 0 and done.turns == 2


def test_reembed_refuses_a_sharded_target_sharing_the_sources_table_however_spelled(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_retrievers import ShardedMemoryStore

    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "db")
    for spelled in ["db", "./db/", str(tmp_path / "db") + "/", "link"]:
        target = ShardedMemoryStore([str(tmp_path / "other"), spelled], embedder=HashEmbedder(16))
        with target:
            with pytest.raises(InvalidInputError, match="same table"):
                jobs.reembed(store, target)
            with pytest.raises(InvalidInputError, match="same table"):
                jobs.reembed(target, store)
    assert store.count(namespace="alice") == 1
