"""`memory-retrievers bulk ...` on a local Ray instance: the same store as `import`, a re-embedded copy, bad input."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.cli import exits
from memory_retrievers.cli.app import run
from memory_retrievers.cli.runtime import Invocation, StoreProvider


def _cli(tmp_path: Path, *args: str, store: str = "store") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {
        "MEMORY_RETRIEVERS_STORE": store if "://" in store else str(tmp_path / store),  # shards://... as given
        "MEMORY_RETRIEVERS_EMBEDDER": "hash:32",
        "MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "config.toml"),
        "MEMORY_RETRIEVERS_NO_WORKER": "1",
    }
    inv = Invocation(
        env=env,
        cwd=tmp_path,
        stdout=out,
        stderr=err,
        stdin=io.StringIO(""),
        stdout_tty=False,
        stderr_tty=False,
        stdin_tty=False,
        width=120,
        stores=StoreProvider(),
    )
    return run(list(args), inv), out.getvalue(), err.getvalue()


def _rows(path: Path, namespace: str, dimension: int = 32) -> list[dict[str, Any]]:
    with MemoryStore(path, embedder=HashEmbedder(dimension)) as store:
        return store.admin.export(namespace)


def test_bulk_import_stores_what_import_stores_and_reembed_copies_it(ray_instance: Any, tmp_path: Path) -> None:
    lines = [
        json.dumps({"text": f"note {i} on {['tea', 'trains'][i % 2]}", "created_at": f"2026-01-01T00:00:{i:02d}Z"})
        for i in range(40)
    ]
    (tmp_path / "notes.jsonl").write_text("\n".join(lines) + "\n")
    code, _, err = _cli(tmp_path, "import", "notes.jsonl", "-n", "alice", store="plain")
    assert code == exits.OK, err
    code, out, err = _cli(tmp_path, "bulk", "import", "notes.jsonl", "-n", "alice", "--workers", "2", "--json")
    assert code == exits.OK, err
    summary = json.loads(out)
    assert (summary["records"], summary["added"], summary["files"]) == (40, 40, ["notes.jsonl"])
    mine, theirs = _rows(tmp_path / "store", "alice"), _rows(tmp_path / "plain", "alice")
    assert [(r["text"], r["created_at"], r["kind"]) for r in mine] == [
        (r["text"], r["created_at"], r["kind"]) for r in theirs
    ]
    assert np.array_equal([r["vector"] for r in mine], [r["vector"] for r in theirs])

    code, out, err = _cli(tmp_path, "bulk", "reembed", "--to", "v2", "--to-embedder", "hash:16", "--json")
    assert code == exits.OK, err
    assert json.loads(out)["added"] == 40
    copied = _rows(tmp_path / "v2", "alice", 16)
    assert [r["id"] for r in copied] == [r["id"] for r in mine]
    assert len(copied[0]["vector"]) == 16


def test_bulk_import_rejects_a_bad_file_whole_and_backfill_a_bad_llm(ray_instance: Any, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"txt": "no text"}\n')
    code, _, err = _cli(tmp_path, "bulk", "import", "bad.jsonl", "-n", "alice")
    assert code == exits.INVALID_INPUT
    assert "1 record(s) rejected, nothing imported" in err and "line 2" in err
    assert not (tmp_path / "store").exists()
    code, _, _ = _cli(tmp_path, "add", "a memory", "-n", "alice")
    assert code == exits.OK
    code, _, err = _cli(tmp_path, "bulk", "backfill", "--llm", "no_such_module_here:make")
    assert code == exits.CONFIG and "--llm 'no_such_module_here:make'" in err


def test_bulk_cluster_lays_out_every_shard_and_reports_a_failing_one(ray_instance: Any, tmp_path: Path) -> None:
    shards = [tmp_path / f"s{i}" for i in range(3)]
    store = "shards://" + ",".join(str(s) for s in shards)
    # user05, user08 -> shard 0; user01, user02 -> shard 1 (shard_of over 3 shards); nothing on shard 2 yet.
    namespaces = ["user05", "user08", "user01", "user02"]
    lines = [json.dumps({"text": f"note {r} of {ns}", "namespace": ns}) for r in range(8) for ns in namespaces]
    for round_ in range(4):  # four commits, each interleaving every namespace
        (tmp_path / f"r{round_}.jsonl").write_text("\n".join(lines[round_ * 8 : round_ * 8 + 8]) + "\n")
        code, _, err = _cli(tmp_path, "import", f"r{round_}.jsonl", "--no-dedup", store=store)
        assert code == exits.OK, err
    code, out, err = _cli(tmp_path, "bulk", "cluster", "--optimize", "--workers", "2", "--json", store=store)
    assert code == exits.OK, err
    summary = json.loads(out)
    assert [t["shard"] for t in summary["tables"]] == [0, 1, 2]
    assert [t["result"]["moved"] for t in summary["tables"]] == [16, 16, 0]
    assert [t["result"]["runs_after"] for t in summary["tables"]] == [1, 1, 0]
    assert all(t["optimized"] and t["error"] is None for t in summary["tables"]) and summary["moved"] == 32

    shutil.rmtree(shards[2])  # the empty table the first job created, replaced by another model's
    with MemoryStore(shards[2], embedder=HashEmbedder(16)) as other:
        other.add("written with another model", namespace="user00")
    code, out, err = _cli(tmp_path, "bulk", "cluster", store=store)
    assert code == exits.STORAGE
    assert "shard 0 (" in out and "moved 0 rows, 1 -> 1 runs" in out
    assert "clustered 2 of 3 table(s)" in out
    assert "shard 2 (" in err and "EmbedderMismatchError" in err and "1 table(s) failed" in err
