"""``import`` of every format (bad lines reported by number, the rest imported), ``export | import`` exactly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.cli import exits

from .conftest import PYTHON, Result

# Processes and the real model: the long tier (python -m pytest -m long).
pytestmark = pytest.mark.long

Cli = Callable[..., Result]


def _store(env: dict[str, str], key: str = "MEMORY_RETRIEVERS_STORE") -> MemoryStore:
    return MemoryStore(env[key], embedder=HashEmbedder(32))


def test_jsonl_with_malformed_lines_reports_them_by_number_and_imports_the_rest(
    cli: Cli, tmp_path: Path, env: dict[str, str]
) -> None:
    lines = [
        '{"text": "Alice likes tea", "kind": "preference", "created_at": "2024-01-01T10:00:00+00:00"}',
        "{not json",
        '{"text": "", "namespace": "alice"}',
        '{"text": "Alice has a dog", "tags": ["pets"]}',
        '["a list"]',
        '{"text": "Alice likes tea", "kind": "preference"}',  # a duplicate: same words, same kind
        '{"text": "Bob likes coffee", "namespace": "bob", "colour": "red"}',
    ]
    (tmp_path / "notes.jsonl").write_text("\n".join(lines) + "\n\n")
    result = cli("import", "notes.jsonl", "-n", "alice", "--json")
    assert result.code == exits.PARTIAL
    summary = json.loads(result.stdout)
    assert (summary["added"], summary["deduplicated"], summary["rejected"]) == (2, 1, 4)
    assert [r["where"] for r in summary["rejects"]] == ["line 2", "line 3", "line 5", "line 7"]
    assert "not JSON" in summary["rejects"][0]["error"] and "unknown field" in summary["rejects"][3]["error"]
    assert "rejected line 2: not JSON" in result.stderr
    with _store(env) as store:
        texts = {m.text: m for m in store.list("alice")}
    assert set(texts) == {"Alice likes tea", "Alice has a dog"}
    assert texts["Alice likes tea"].created_at is not None and texts["Alice likes tea"].created_at.year == 2024


def test_unreadable_missing_or_fully_invalid_input(cli: Cli, tmp_path: Path, env: dict[str, str]) -> None:
    assert cli("import", "missing.jsonl", "-n", "a").code == exits.INVALID_INPUT
    (tmp_path / "folder").mkdir()
    unreadable = cli("import", "folder", "-n", "a")
    assert unreadable.code == exits.INVALID_INPUT and "cannot read folder" in unreadable.stderr
    (tmp_path / "latin1.jsonl").write_bytes(b'{"text": "caf\xe9"}\n')
    assert "not UTF-8" in cli("import", "latin1.jsonl", "-n", "a").stderr
    (tmp_path / "bad.jsonl").write_text("nope\n{]\n")
    result = cli("import", "bad.jsonl", "-n", "a")
    assert result.code == exits.INVALID_INPUT and "every record was rejected" in result.stderr
    assert not Path(env["MEMORY_RETRIEVERS_STORE"]).exists()  # nothing to write: no store created
    (tmp_path / "no-ns.jsonl").write_text('{"text": "x"}\n')
    assert "no namespace" in cli("import", "no-ns.jsonl", "--json").stderr


def test_dry_run_writes_nothing(cli: Cli, tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "n.jsonl").write_text('{"text": "a"}\n{"text": ""}\n')
    result = cli("import", "n.jsonl", "-n", "u", "--dry-run", "--json")
    assert result.code == exits.PARTIAL and json.loads(result.stdout)["dry_run"] is True
    assert not Path(env["MEMORY_RETRIEVERS_STORE"]).exists()


def test_openai_transcripts_become_ordered_chat_turns(cli: Cli, tmp_path: Path, env: dict[str, str]) -> None:
    chat = [
        {"role": "system", "content": "You are helpful"},
        {"role": "user", "content": "I moved to Lisbon last week"},
        {"role": "assistant", "content": [{"type": "text", "text": "Congratulations on the move!"}]},
        {"role": "user"},
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    result = cli("import", "chat.json", "-n", "alice", "--json")
    assert result.code == exits.PARTIAL and json.loads(result.stdout)["added"] == 3
    assert "item 4" in result.stderr
    fine_tune = [{"messages": chat[:2]}, {"messages": chat[1:3]}]
    (tmp_path / "ft.jsonl").write_text("\n".join(json.dumps(x) for x in fine_tune))
    assert cli("import", "ft.jsonl", "-n", "bob", "--format", "openai").code == 0
    with _store(env) as store:
        turns = store.list("alice", newest_first=False)
        sessions = {m.session_id for m in store.list("bob")}
    assert [m.text for m in turns] == [
        "system: You are helpful",
        "user: I moved to Lisbon last week",
        "assistant: Congratulations on the move!",
    ]
    assert {m.kind.value for m in turns} == {"message"} and {m.session_id for m in turns} == {"chat"}
    assert "Lisbon" in (turns[2].context or "")  # neighbouring turns filled in as context
    assert sessions == {"ft-1", "ft-2"}


def test_langchain_message_dumps_in_both_forms(cli: Cli, tmp_path: Path, env: dict[str, str]) -> None:
    dumps = [
        {"type": "human", "data": {"content": "My favourite colour is teal", "additional_kwargs": {}}},
        {"type": "ai", "data": {"content": "Noted: teal"}},
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "And I live in Oslo"},
        },
        {"type": "alien", "data": {"content": "?"}},
    ]
    (tmp_path / "lc.jsonl").write_text("\n".join(json.dumps(d) for d in dumps))
    result = cli("import", "lc.jsonl", "-n", "alice", "--session", "c1", "--json")
    assert json.loads(result.stdout)["added"] == 3 and "line 4: unknown LangChain message type" in result.stderr
    with _store(env) as store:
        texts = [m.text for m in store.list("alice", newest_first=False)]
    assert texts == ["user: My favourite colour is teal", "assistant: Noted: teal", "user: And I live in Oslo"]


def _locomo() -> list[dict[str, object]]:
    return [
        {
            "sample_id": "conv-a",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso"},
                    {
                        "speaker": "Ben",
                        "dia_id": "D1:2",
                        "text": "Lovely, what colour is it?",
                        "blip_caption": "a ginger cat",
                    },
                ],
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I started learning the cello"}],
            },
            "qa": [
                {"question": "What is the name of Ann's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
                {
                    "question": "Which instrument does Ann learn?",
                    "answer": "cello",
                    "evidence": ["D2:1"],
                    "category": 1,
                },
                {"question": "Unanswerable", "evidence": [], "category": 5},
            ],
        }
    ]


def test_locomo_conversations_import_one_namespace_each(cli: Cli, tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "locomo.json").write_text(json.dumps(_locomo()))
    assert json.loads(cli("import", "locomo.json", "--json").stdout)["added"] == 3
    with _store(env) as store:
        turns = store.list("conv-a", newest_first=False)
    assert [m.text for m in turns][1] == "Ben: Lovely, what colour is it? [shares a photo: a ginger cat]"
    assert turns[0].session_id == "conv-a/session_1" and turns[0].metadata["dia_id"] == "D1:1"
    assert turns[2].created_at is not None and turns[2].created_at.isoformat() == "2023-06-09T10:00:02+00:00"


def test_eval_locomo_prints_the_evidence_recall_table(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "locomo.json").write_text(json.dumps(_locomo()))
    result = cli("eval", "locomo", "locomo.json", "--json")
    assert result.code == 0, result.stderr
    rows = {r["label"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["all"]["questions"] == 2 and set(rows) == {"all", "1 multi-hop", "4 single-hop"}
    # Three memories, top 10: every evidence turn is found.
    assert rows["all"]["recall@10"] == 1.0 and rows["all"]["hit@10"] == 1.0
    table = cli("eval", "locomo", "locomo.json").stdout
    assert "recall@10" in table and "single-hop" in table
    (tmp_path / "not.json").write_text("[1, 2]")
    assert cli("eval", "locomo", "not.json").code == exits.INVALID_INPUT


def test_export_pipe_import_round_trips_a_store_exactly(
    proc: Callable[..., subprocess.CompletedProcess[str]], env: dict[str, str], tmp_path: Path
) -> None:
    with _store(env) as store:
        old = store.add("Alice prefers the dark theme", namespace="alice", kind="preference", tags=["ui"])
        store.supersede(old.id, "Alice now prefers the light theme", namespace="alice")
        store.add_many(
            [
                {"text": "hi", "kind": "message", "session_id": "s"},
                {"text": "hello", "kind": "message", "session_id": "s"},
            ],
            namespace="alice",
        )
        store.add("Bob likes tea", namespace="bob", metadata={"k": [1, {"x": None}]})
        store.record_access([old.id], namespace="alice")
    exported = proc("export", "--all-namespaces")
    assert exported.returncode == 0, exported.stderr
    copy = {"MEMORY_RETRIEVERS_STORE": str(tmp_path / "copy")}
    imported = proc("import", "-", input=exported.stdout, extra_env=copy)
    assert imported.returncode == 0, imported.stderr
    assert "5 added, 0 replaced (id already stored), 0 deduplicated, 0 rejected" in imported.stdout
    again = proc("export", "--all-namespaces", extra_env=copy)
    body = lambda text: text.splitlines()[1:]  # noqa: E731 - the header holds the export time
    assert body(again.stdout) == body(exported.stdout) and len(body(exported.stdout)) == 5
    records = [json.loads(line) for line in body(exported.stdout)]
    assert any(r["superseded_by"] for r in records) and any(r["access_count"] == 1 for r in records)
    assert all(len(r["vector"]) == 32 for r in records)
    reimport = proc("import", "-", input=exported.stdout, extra_env=copy)
    assert "0 added, 5 replaced (id already stored)" in reimport.stdout  # idempotent: same ids replaced, nothing new
    other = proc(
        "import",
        "-",
        input=exported.stdout,
        extra_env={**copy, "MEMORY_RETRIEVERS_EMBEDDER": "hash:16", "MEMORY_RETRIEVERS_STORE": str(tmp_path / "c16")},
    )
    assert other.returncode == exits.MISMATCH and "--reembed" in other.stderr


def test_ctrl_c_during_import_leaves_only_whole_batches(env: dict[str, str], tmp_path: Path) -> None:
    lines = [json.dumps({"text": f"memory number {i} about subject {i % 97} and detail {i}"}) for i in range(5_000)]
    (tmp_path / "big.jsonl").write_text("\n".join(lines))
    child = subprocess.Popen(
        [PYTHON, "-m", "memory_retrievers", "import", "big.jsonl", "-n", "u", "--batch-size", "50"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for the first committed batch
        line = child.stderr.readline()
        if line.startswith("committed batch"):
            break
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == exits.INTERRUPTED, stderr
    committed = int(stderr.split("interrupted: ")[1].split(" records")[0])
    assert 0 < committed < 5_000 and committed % 50 == 0
    with _store(env) as store:
        assert store.count("u") == committed
    resumed = subprocess.run(
        [
            PYTHON,
            "-m",
            "memory_retrievers",
            "import",
            "big.jsonl",
            "-n",
            "u",
            "--skip",
            str(committed),
            "--batch-size",
            "5000",
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads(resumed.stdout)
    assert summary["added"] + summary["deduplicated"] == 5_000 - committed  # every record once, none lost


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")
def test_the_console_script_imports_too(proc: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    (tmp_path / "n.jsonl").write_text('{"text": "from the console script"}\n')
    done = proc("import", "n.jsonl", "-n", "u", script=True)
    assert done.returncode == 0 and "1 added" in done.stdout
