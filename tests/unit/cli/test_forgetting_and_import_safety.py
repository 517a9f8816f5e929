"""Issue 27 on the command line: purge after forget, imports that write only where told, hostile lines, huge pages."""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.cli import exits
from memory_retrievers.errors import InvalidInputError

from .conftest import Result

Cli = Callable[..., Result]


def _files_holding(folder: Path, values: list[str]) -> dict[str, list[str]]:
    """Every file under ``folder`` whose bytes contain one of ``values``, by value."""
    found: dict[str, list[str]] = {}
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in values:
                if value.encode("utf-8") in data:
                    found.setdefault(value, []).append(str(path.relative_to(folder)))
    return found


def _jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# --- item 4: the CLI can purge --------------------------------------------------------------------


def test_item4_forget_then_purge_leaves_no_forgotten_bytes_in_any_file(
    cli: Cli, env: dict[str, str], tmp_path: Path
) -> None:
    # 20 users x 5 memories in one commit (one fragment): forgetting one user deletes 5% of it,
    # under LanceDB's default share for rewriting a fragment, so nothing but purge removes the bytes.
    records = [
        {
            "text": f"user{u} note {i} " + ("quokkasecret lives at 12 Elm Street" if u == 7 else "ordinary words"),
            "namespace": "erin@example.org" if u == 7 else f"user{u}@example.org",
            "id": f"{'erinid' if u == 7 else 'keep'}-{u}-{i}",
            "tags": ["erintag"] if u == 7 else ["common"],
            "session_id": "erinsession" if u == 7 else "s",
        }
        for u in range(20)
        for i in range(5)
    ]
    assert cli("import", str(_jsonl(tmp_path / "all.jsonl", records)), "--no-dedup").code == exits.OK
    store = Path(env["MEMORY_RETRIEVERS_STORE"])
    forgotten = ["quokkasecret", "erin@example.org", "erinid-7-3", "erintag", "erinsession"]
    assert _files_holding(store, forgotten)  # the probe finds them while stored
    assert cli("forget", "erin@example.org", "--yes").code == exits.OK
    refused = cli("purge")  # not at a terminal and no --yes: nothing done
    assert refused.code == exits.USAGE and "--yes" in refused.stderr
    done = cli("purge", "--yes", "--json")
    assert done.code == exits.OK, done.stderr
    assert json.loads(done.stdout)["versions"]["after"] == 1
    assert _files_holding(store, forgotten) == {}
    listed = json.loads(cli("list", "-n", "user3@example.org", "--json").stdout)
    assert listed["total"] == 5  # nothing kept is lost


def test_item4_purge_is_offered_by_forget_and_refuses_a_missing_store(cli: Cli, env: dict[str, str]) -> None:
    assert "memory-retrievers purge" in cli("forget", "--help").stdout
    missing = cli("purge", "--yes")
    assert missing.code == exits.NOT_FOUND and "no store at" in missing.stderr
    assert not Path(env["MEMORY_RETRIEVERS_STORE"]).exists()


# --- item 10: import -n writes only into that namespace, and says what it replaced ----------------


def test_item10_import_with_n_refuses_records_naming_another_namespace(cli: Cli, tmp_path: Path) -> None:
    added = json.loads(cli("add", "Alice keeps bees", "-n", "alice", "--json").stdout)
    records = [
        {"text": "replaces alice's memory", "namespace": "alice", "id": added["id"]},
        {"text": "Carol keeps goats", "namespace": "carol"},
        {"text": "Bob keeps cats"},
        {"text": "Bob keeps dogs", "namespace": "bob"},
    ]
    done = cli("import", str(_jsonl(tmp_path / "mixed.jsonl", records)), "-n", "bob", "--json")
    assert done.code == exits.PARTIAL
    summary = json.loads(done.stdout)
    assert (summary["added"], summary["replaced"], summary["rejected"]) == (2, 0, 2)
    assert [r["where"] for r in summary["rejects"]] == ["line 1", "line 2"]
    assert "names namespace 'alice' but -n is 'bob'" in summary["rejects"][0]["error"]
    alice = json.loads(cli("list", "-n", "alice", "--json").stdout)["memories"]
    assert [m["text"] for m in alice] == ["Alice keeps bees"]  # untouched
    assert cli("list", "-n", "carol").code == exits.NOT_FOUND  # not created


def test_item10_an_export_imported_under_another_n_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    assert cli("add", "Alice keeps bees", "-n", "alice").code == exits.OK
    backup = tmp_path / "alice.jsonl"
    backup.write_text(cli("export", "-n", "alice").stdout)
    done = cli("import", str(backup), "-n", "bob")
    assert done.code == exits.INVALID_INPUT and "but -n is 'bob'" in done.stderr
    assert cli("list", "-n", "bob").code == exits.NOT_FOUND


def test_a_namespace_is_copied_with_into_namespace_and_alike_rejections_are_one_line(
    cli: Cli, tmp_path: Path, env: dict[str, str]
) -> None:
    """Issue 40 item 12: ``import alice.jsonl -n other`` printed the same sentence 20 times and offered no copy."""
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        store.add_many([{"text": f"Alice fact number {i}"} for i in range(20)], namespace="alice")
    backup = tmp_path / "alice.jsonl"
    backup.write_text(cli("export", "-n", "alice").stdout)
    refused = cli("import", str(backup), "-n", "other")
    assert refused.code == exits.INVALID_INPUT
    (line,) = [line for line in refused.stderr.splitlines() if line.startswith("  rejected")]
    assert line.startswith("  rejected 20 records (line 2, line 3, ..., line 21): names namespace 'alice'")
    assert "--into-namespace 'other'" in line
    copied = json.loads(cli("import", str(backup), "--into-namespace", "other", "--json").stdout)
    assert (copied["added"], copied["rejected"]) == (20, 0)
    texts = {ns: sorted(m["text"] for m in json.loads(cli("list", "-n", ns, "--json").stdout)["memories"])
             for ns in ("alice", "other")}  # fmt: skip
    assert texts["other"] == texts["alice"] and len(texts["alice"]) == 20  # a copy; the source untouched
    clash = cli("import", str(backup), "-n", "bob", "--into-namespace", "other")
    assert clash.code == exits.INVALID_INPUT and "--into-namespace" in clash.stderr


def test_item10_the_summary_counts_records_that_replaced_a_stored_id(cli: Cli, tmp_path: Path) -> None:
    assert cli("add", "Alice keeps bees", "-n", "alice", "--id", "k1").code == exits.OK
    records = [{"text": "Alice keeps wasps", "id": "k1"}, {"text": "Alice keeps ants", "id": "k2"}]
    done = cli("import", str(_jsonl(tmp_path / "ids.jsonl", records)), "-n", "alice")
    assert done.code == exits.OK
    assert "1 added, 1 replaced (id already stored)" in done.stdout
    backup = tmp_path / "alice.jsonl"
    backup.write_text(cli("export", "-n", "alice").stdout)
    again = json.loads(cli("import", str(backup), "--json").stdout)
    assert (again["added"], again["replaced"]) == (0, 2)


# --- item 11: a hostile line is reported and skipped, never a traceback -----------------------------


def test_item11_hostile_memory_lines_are_rejected_by_number_and_the_rest_imported(cli: Cli, tmp_path: Path) -> None:
    lines = [
        json.dumps({"text": "Alice keeps bees"}),
        "[" * 100_000 + "]" * 100_000,  # json.loads raises RecursionError
        '{"text": "deep", "metadata": ' + '{"a": ' * 3000 + "1" + "}" * 3000 + "}",
        json.dumps({"text": "a string vector", "vector": "0.1, 0.2"}),
        json.dumps({"text": "a short vector", "vector": [0.1, 0.2]}),
        json.dumps({"text": "a huge vector", "vector": [1e39] * 32}),
        json.dumps({"text": "booleans", "vector": [True] * 32}),
        json.dumps({"text": "Alice keeps wasps"}),
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = cli("import", str(path), "-n", "alice", "--json")
    assert done.code == exits.PARTIAL, done.stderr
    summary = json.loads(done.stdout)
    assert summary["added"] == 2
    assert sorted(r["where"] for r in summary["rejects"]) == [f"line {n}" for n in range(2, 8)]
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert "vector must be a JSON list of numbers" in done.stderr
    assert "vector has 2 numbers but the store's embedder gives 32" in done.stderr


def test_item11_hostile_export_records_are_rejected_by_number_and_the_rest_restored(cli: Cli, tmp_path: Path) -> None:
    assert cli("add", "Alice keeps bees", "-n", "alice").code == exits.OK
    header, record = cli("export", "-n", "alice").stdout.splitlines()
    good = json.loads(record)
    bad = [{**good, "id": f"bad{i}", "text": f"bad {i}", "vector": v} for i, v in enumerate(["x", [0.5] * 3])]
    lines = [header, *(json.dumps(b) for b in bad), "{" * 50_000, json.dumps({**good, "id": "fine", "text": "fine"})]
    path = tmp_path / "hostile-export.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = cli("import", str(path), "--json")
    assert done.code == exits.PARTIAL, done.stderr
    summary = json.loads(done.stdout)
    assert summary["added"] == 1 and sorted(r["where"] for r in summary["rejects"]) == ["line 2", "line 3", "line 4"]


# --- item 15: limit and offset beyond LanceDB's range are typed errors ------------------------------


@pytest.mark.parametrize(("name", "value"), [("limit", 2**32), ("offset", 2**32), ("offset", 2**63)])
def test_item15_list_and_export_refuse_huge_limit_or_offset_with_a_typed_error(
    tmp_path: Path, name: str, value: int
) -> None:
    with MemoryStore(tmp_path / "s", embedder=HashEmbedder(16)) as store:
        store.add("Alice keeps bees", namespace="alice")
        for call in (store.list, store.admin.export):
            with pytest.raises(InvalidInputError, match=name):
                call("alice", **{name: value})
        assert len(store.list("alice", limit=2**32 - 1, offset=0)) == 1  # the largest accepted


def test_item15_cli_list_with_a_huge_offset_is_invalid_input(cli: Cli) -> None:
    assert cli("add", "Alice keeps bees", "-n", "alice").code == exits.OK
    done = cli("list", "-n", "alice", "--offset", str(2**32))
    assert done.code == exits.INVALID_INPUT and "offset must be an int in [0, 4294967295]" in done.stderr


# --- item 12: the worker never waits on a client, and its queue is bounded ---------------------------


def test_item12_the_client_knows_which_command_lines_read_stdin() -> None:
    from memory_retrievers.cli.app import cli as group
    from memory_retrievers.cli.workerproto import ADD_FLAGS, reads_stdin

    add = group.commands["add"]
    flags = {o for p in add.params if getattr(p, "is_flag", False) for o in p.opts}
    assert flags | {"-h", "--help"} == ADD_FLAGS  # every other option takes a value
    assert reads_stdin(["add", "-n", "alice"]) and reads_stdin(["add", "-", "-n", "alice"])
    assert reads_stdin(["add", "--kind", "event", "--pinned", "-nalice"])
    assert not reads_stdin(["add", "-n", "alice", "text"]) and not reads_stdin(["add", "--tag=x", "text"])
    assert not reads_stdin(["add", "--", "-starts with a dash"]) and reads_stdin(["add", "--", "-"])
    assert not reads_stdin(["list", "-n", "alice"])


def _client(path: Path) -> tuple[socket.socket, Any]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(30)
        sock.connect(str(path))
    except BaseException:
        sock.close()  # a refused connection must not leak the socket into a later test's warnings
        raise
    return sock, sock.makefile("rb")


def _in_hand(path: Path) -> int:
    from memory_retrievers.cli.workerproto import PROTOCOL, read_message, write_message

    sock, reader = _client(path)
    with sock, reader:
        write_message(sock, {"v": PROTOCOL, "op": "ping"})
        return int((read_message(reader) or {})["in_hand"])


def test_item12_a_full_worker_answers_busy_at_once_and_a_client_that_gave_up_is_never_run(
    tmp_path: Path, env: dict[str, str]
) -> None:
    from memory_retrievers.cli.worker import Worker
    from memory_retrievers.cli.workerproto import PROTOCOL, read_message, write_message

    path = Path(tempfile.mkdtemp(prefix="mrq")) / "w.sock"  # short: Unix socket paths are limited
    store = env["MEMORY_RETRIEVERS_STORE"]
    worker = Worker(path, store, "hash:32", idle_s=60, max_running=1, max_in_hand=1)
    server = threading.Thread(target=worker.serve, daemon=True)
    server.start()
    deadline = time.monotonic() + 10
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    run = {"v": PROTOCOL, "op": "run", "argv": ["add", "-n", "alice"], "cwd": str(tmp_path), "env": env}
    try:
        with contextlib.ExitStack() as open_:
            first, first_reader = _client(path)
            write_message(first, {**run, "stdin": "never stored"})
            assert read_message(first_reader) == {"started": True}  # holds the only slot, never says go
            second, second_reader = (open_.enter_context(x) for x in _client(path))
            began = time.monotonic()
            write_message(second, {**run, "stdin": "sent while busy"})
            busy = read_message(second_reader)
            assert busy is not None and busy["fallback"].startswith("busy") and time.monotonic() - began < 5
            assert _in_hand(path) == 1  # ping is answered while busy
            first_reader.close()
            first.close()  # gave up waiting: the worker must not run it
            while _in_hand(path) and time.monotonic() < deadline + 20:
                time.sleep(0.02)
            third, third_reader = (open_.enter_context(x) for x in _client(path))
            write_message(third, {**run, "stdin": "Alice keeps bees"})
            assert read_message(third_reader) == {"started": True}
            write_message(third, {"go": True})
            done = read_message(third_reader) or {}
            assert done.get("code") == 0, done
            assert worker.served == 1
    finally:
        worker.stop()
        server.join(30)
    with MemoryStore(store, embedder=HashEmbedder(32)) as opened:
        assert [m.text for m in opened.list("alice")] == ["Alice keeps bees"]


def test_a_worker_is_idle_from_when_it_listens_not_from_when_it_was_built(tmp_path: Path) -> None:
    """A warm-up longer than ``--idle`` (the real model: ~10 s) must not make the worker exit unused."""
    from memory_retrievers.cli.worker import Worker

    path = Path(tempfile.mkdtemp(prefix="mrq")) / "w.sock"
    worker = Worker(path, str(tmp_path / "store"), "hash:32", idle_s=1.0)
    time.sleep(1.2)  # warming up, longer than its idle time
    listener = worker._listen()
    try:
        assert not worker._idle()  # a client polling for the socket still finds it serving
        time.sleep(1.2)
        assert worker._idle()  # and with no request, it is idle after idle_s
    finally:
        listener.close()


def test_item12_the_worker_timeout_is_a_setting_with_a_default(tmp_path: Path) -> None:
    from memory_retrievers.cli.settings import DEFAULT_WORKER_TIMEOUT_S, SettingsError, resolve

    none = {"MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "none.toml")}
    assert resolve(none, tmp_path).worker_timeout_s == DEFAULT_WORKER_TIMEOUT_S == 30.0
    assert resolve({**none, "MEMORY_RETRIEVERS_WORKER_TIMEOUT": "2.5"}, tmp_path).worker_timeout_s == 2.5
    config = tmp_path / "config.toml"
    config.write_text("worker_timeout_seconds = 5\n")
    assert resolve({"MEMORY_RETRIEVERS_CONFIG": str(config)}, tmp_path).worker_timeout_s == 5.0
    for bad in ("0", "-1", "soon", "inf", "nan"):
        with pytest.raises(SettingsError, match="MEMORY_RETRIEVERS_WORKER_TIMEOUT"):
            resolve({**none, "MEMORY_RETRIEVERS_WORKER_TIMEOUT": bad}, tmp_path)


def test_item10_an_nfd_spelling_of_the_n_namespace_is_that_namespace(cli: Cli, tmp_path: Path) -> None:
    # Red-team of issue 27: -n compared raw strings, rejecting a record whose namespace is the NFD
    # spelling of -n's, although the namespace rule makes them one namespace.
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "émile"), unicodedata.normalize("NFD", "émile")
    records = [{"text": "Émile plays the cello", "namespace": nfd}]
    done = cli("import", str(_jsonl(tmp_path / "nfd.jsonl", records)), "-n", nfc, "--json")
    assert done.code == exits.OK, done.stdout
    listed = json.loads(cli("list", "-n", nfc, "--json").stdout)["memories"]
    assert [m["text"] for m in listed] == ["Émile plays the cello"]
