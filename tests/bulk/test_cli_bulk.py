"""`memory-retrievers bulk ...` on a local Ray instance: the same store as `import`, a re-embedded copy, bad input."""

from __future__ import annotations

import io
import json
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
        "MEMORY_RETRIEVERS_STORE": str(tmp_path / store),
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
