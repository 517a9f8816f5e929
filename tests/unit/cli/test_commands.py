"""Every command in-process (the entry point's own ``run``) against a real store in a tmp dir."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryKind, MemoryRetriever, MemoryStore, default_store_path
from memory_retrievers.cli import exits
from memory_retrievers.cli.options import KINDS
from memory_retrievers.cli.settings import default_store_location, resolve

from .conftest import Result

Cli = Callable[..., Result]


@pytest.fixture
def alice(cli: Cli) -> dict[str, str]:
    """Three memories of alice, one of bob; returns alice's ids by a short name."""
    ids = {}
    for name, text, kind, extra in [
        ("theme", "Alice prefers the dark theme", "preference", ["--entity", "Alice", "--tag", "ui"]),
        ("berlin", "Alice moved to Berlin in March", "event", ["--created-at", "2024-03-01"]),
        ("tea", "Alice drinks green tea every morning", "preference", ["--pinned"]),
    ]:
        result = cli("add", text, "-n", "alice", "--kind", kind, *extra, "--json")
        assert result.code == 0, result.stderr
        ids[name] = json.loads(result.stdout)["id"]
    assert cli("add", "Bob likes the light theme", "-n", "bob").code == 0
    return ids


def test_add_prints_the_action_and_stores_every_field_given(cli: Cli, env: dict[str, str]) -> None:
    result = cli(
        "add",
        "Alice's dog is Rex",
        "-n",
        "alice",
        "--kind",
        "fact",
        "--id",
        "dog",
        "--session",
        "s1",
        "--project",
        "home",
        "--topic",
        "pets",
        "--tag",
        "a",
        "--tag",
        "b",
        "--entity",
        "Rex",
        "--link",
        "x",
        "--priority",
        "3",
        "--importance",
        "0.9",
        "--pinned",
        "--created-at",
        "2024-01-02T03:04:05+01:00",
        "--context",
        "talking about pets",
        "--metadata",
        '{"source": "test"}',
    )
    assert (result.code, result.stdout) == (0, "added dog\n")
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        m = store.get("dog", namespace="alice")
    assert (m.session_id, m.project, m.topic, m.tags, m.entities, m.links) == (
        "s1",
        "home",
        "pets",
        ("a", "b"),
        ("rex",),
        ("x",),
    )
    assert (m.priority, m.importance, m.pinned, m.context, dict(m.metadata)) == (
        3.0,
        0.9,
        True,
        "talking about pets",
        {"source": "test"},
    )
    assert m.created_at is not None and m.created_at.isoformat() == "2024-01-02T02:04:05+00:00"
    # the same words up to whitespace, in the same scope (kind, project, topic): a duplicate
    again = cli("add", "Alice's dog is  Rex", "-n", "alice", "--project", "home", "--topic", "pets")
    assert again.stdout.startswith("skipped dog (duplicate")


def test_add_reads_stdin_for_dash_and_strips_one_newline(cli: Cli) -> None:
    assert cli("add", "-", "-n", "u", "--json", input="line one\nline two\n").code == 0
    listed = json.loads(cli("list", "-n", "u", "--json").stdout)
    assert [m["text"] for m in listed["memories"]] == ["line one\nline two"]


def test_recall_prints_exactly_the_agent_context(cli: Cli, alice: dict[str, str], env: dict[str, str]) -> None:
    result = cli("recall", "which theme does she like", "-n", "alice", "--now", "2024-06-01", "--no-record-access")
    assert result.code == 0, result.stderr
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        from datetime import datetime, timezone

        expected = MemoryRetriever(store, namespace="alice", config={"record_access": False}).recall(
            "which theme does she like", now=datetime(2024, 6, 1, tzinfo=timezone.utc)
        )
    assert result.stdout == expected.to_context() + "\n"
    assert result.stdout.startswith("Relevant memories (most relevant first):\n")
    assert "Bob" not in result.stdout


def test_recall_flags_reach_the_config_and_filters_apply(cli: Cli, alice: dict[str, str]) -> None:
    one = json.loads(cli("recall", "theme", "-n", "alice", "--k", "1", "--mode", "vector", "--json").stdout)
    assert len(one["memories"]) == 1 and one["plan"]["mode"] == "vector"
    unbounded = json.loads(cli("recall", "Alice", "-n", "alice", "--budget", "none", "--json").stdout)
    assert unbounded["token_budget"] is None
    events = json.loads(cli("recall", "Alice", "-n", "alice", "--kind", "event", "--json").stdout)
    assert [m["memory"]["id"] for m in events["memories"]] == [alice["berlin"]]
    no_context = json.loads(cli("recall", "theme", "-n", "alice", "--weight-context", "0", "--json").stdout)
    assert all(c["channel"] != "context" for m in no_context["memories"] for c in m["explanation"]["channels"])
    bad = cli("recall", "theme", "-n", "alice", "--mmr-lambda", "2")
    assert bad.code == exits.USAGE and "mmr_lambda" in bad.stderr
    assert cli("recall", "theme", "-n", "alice", "--kind-boost", "nonsense=2").code == exits.USAGE


def test_recall_explain_renders_channels_ranks_and_cuts(cli: Cli, alice: dict[str, str]) -> None:
    result = cli("recall", "dark theme", "-n", "alice", "--explain", "--k", "1", "--no-pinned-first")
    assert result.code == 0
    context, _, tables = result.stdout.partition("\n\n")
    assert context.startswith("Relevant memories") and "Alice prefers the dark theme" in context
    assert "why these memories" in tables and "#1" in tables and "k_cap" in tables and "plan" in tables
    assert "\x1b[" not in result.stdout  # not a terminal: no colour codes


def test_colours_only_on_a_terminal_and_never_with_no_color(cli: Cli, alice: dict[str, str]) -> None:
    cyan = "\x1b[36m"  # the id column
    assert cyan in cli("list", "-n", "alice", tty=True).stdout
    assert cyan not in cli("list", "-n", "alice", tty=True, extra_env={"NO_COLOR": "1"}).stdout
    assert "\x1b[" not in cli("list", "-n", "alice").stdout


def test_list_show_and_supersession_chain(cli: Cli, alice: dict[str, str]) -> None:
    newer = json.loads(
        cli("add", "Alice now prefers the light theme", "-n", "alice", "--supersedes", alice["theme"], "--json").stdout
    )
    again = cli("add", "Alice now prefers the light theme", "-n", "alice", "--supersedes", alice["theme"], "--json")
    assert again.code == 0 and json.loads(again.stdout)["duplicate_of"] == newer["id"]  # a re-run piles nothing up
    listed = json.loads(cli("list", "-n", "alice", "--json").stdout)
    assert alice["theme"] not in [m["id"] for m in listed["memories"]] and listed["total"] == 3
    everything = json.loads(cli("list", "-n", "alice", "--include-superseded", "--json").stdout)
    assert everything["total"] == 4
    shown = json.loads(cli("show", alice["theme"], "-n", "alice", "--json").stdout)
    assert [m["id"] for m in shown["chain"]] == [alice["theme"], newer["id"]]
    assert shown["memory"]["superseded_by"] == newer["id"]
    text = cli("show", newer["id"], "-n", "alice").stdout
    assert "supersession chain" in text and "Alice prefers the dark theme" in text
    paged = json.loads(cli("list", "-n", "alice", "--limit", "1", "--offset", "1", "--oldest-first", "--json").stdout)
    assert [m["id"] for m in paged["memories"]] == [alice["tea"]]


def test_delete_and_forget(cli: Cli, alice: dict[str, str]) -> None:
    missing = cli("delete", alice["tea"], "nope", "-n", "alice")
    assert missing.code == exits.NOT_FOUND and "nothing was deleted" in missing.stderr
    assert cli("delete", alice["tea"], "nope", "-n", "alice", "--missing-ok", "--json").stdout == (
        '{"namespace": "alice", "deleted": 1}\n'
    )
    refused = cli("forget", "alice")  # stdin is not a terminal and no --yes
    assert refused.code == exits.USAGE and "--yes" in refused.stderr
    assert json.loads(cli("list", "-n", "alice", "--json").stdout)["total"] == 2
    assert cli("forget", "alice", "--yes").stdout == "forgot 2 memories of 'alice'\n"
    gone = cli("list", "-n", "alice")
    assert gone.code == exits.NOT_FOUND and "'bob'" in gone.stderr


def test_stats_optimize_and_dedup(cli: Cli, alice: dict[str, str]) -> None:
    stats = json.loads(cli("stats", "--json").stdout)
    counts = {n["namespace"]: n for n in stats["namespaces"]}
    assert counts["alice"]["kinds"] == {"event": 1, "preference": 2} and counts["bob"]["live"] == 1
    assert stats["disk_bytes"] > 0 and stats["fragments"] >= 1 and stats["indexes"]
    assert "memories per namespace" in cli("stats").stdout
    optimized = json.loads(cli("optimize", "--json").stdout)
    assert optimized["after"]["unindexed_rows"] == 0
    assert cli("add", "Alice prefers the dark theme!", "-n", "alice", "--kind", "preference", "--no-dedup").code == 0
    report = json.loads(cli("dedup", "--dry-run", "-n", "alice", "--json").stdout)
    assert report["duplicates"] == 1 and report["deleted"] == 0
    assert report["groups"][0]["keep"]["id"] == alice["theme"]  # the oldest of equally accessed ones
    assert json.loads(cli("dedup", "-n", "alice", "--delete", "--yes", "--json").stdout)["deleted"] == 1
    assert json.loads(cli("dedup", "-n", "alice", "--json").stdout)["duplicates"] == 0


@pytest.mark.parametrize(
    "command", [["list", "-n", "alice"], ["recall", "q", "-n", "alice"], ["stats"], ["export", "-n", "a"]]
)
def test_a_missing_store_is_reported_and_not_created(cli: Cli, env: dict[str, str], command: list[str]) -> None:
    result = cli(*command)
    assert result.code == exits.NOT_FOUND and "no store at" in result.stderr
    assert not Path(env["MEMORY_RETRIEVERS_STORE"]).exists()


@pytest.mark.parametrize("missing", ["mcp", "mcp.server.mcpserver"])
def test_mcp_without_the_mcp_extra_names_the_extra_to_install(
    cli: Cli, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # import raises ImportError, as when the extra is absent
    result = cli("mcp", "-n", "alice")
    assert result.code == exits.CONFIG and result.stdout == ""
    # Issue 40 item 12: not `pip install 'memory-retrievers[mcp]'`, which the package index does not have.
    assert 'the mcp command needs the mcp extra: python -m pip install "./memory-retrievers[mcp]"' in result.stderr
    assert not Path(env["MEMORY_RETRIEVERS_STORE"]).exists()  # refused before opening anything


def test_typed_errors_map_to_exit_codes(cli: Cli, alice: dict[str, str], tmp_path: Path) -> None:
    assert cli("add", "   ", "-n", "alice").code == exits.INVALID_INPUT
    assert cli("add", "x", "-n", "alice", "--metadata", "{not json").code == exits.USAGE
    assert cli("show", "nope", "-n", "alice").code == exits.NOT_FOUND
    assert cli("list").code == exits.USAGE  # no namespace anywhere
    mismatch = cli("list", "-n", "alice", "--embedder", "hash:16")
    assert mismatch.code == exits.MISMATCH and "hash-32" in mismatch.stderr
    assert cli("list", "-n", "alice", "--embedder", "word2vec").code == exits.CONFIG
    (tmp_path / "config.toml").write_text('colour = "red"\n')
    bad_config = cli("list", "-n", "alice")
    assert bad_config.code == exits.CONFIG and "valid keys" in bad_config.stderr


def test_settings_precedence(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('store = "from-config"\nnamespace = "cfg-ns"\nembedder = "hash:8"\nworker = false\n')
    env = {"MEMORY_RETRIEVERS_CONFIG": str(cfg)}
    s = resolve(env, tmp_path)
    assert (s.store, s.namespace, s.embedder, s.worker) == (str(cfg.parent / "from-config"), "cfg-ns", "hash:8", False)
    env |= {"MEMORY_RETRIEVERS_STORE": "env-store", "MEMORY_RETRIEVERS_NAMESPACE": "env-ns"}
    s = resolve(env, tmp_path)
    assert (s.store, s.namespace, s.store_source) == (str(tmp_path / "env-store"), "env-ns", "MEMORY_RETRIEVERS_STORE")
    s = resolve(env, tmp_path, store="s3://bucket/x", namespace="flag-ns")
    assert (s.store, s.namespace, s.store_source) == ("s3://bucket/x", "flag-ns", "--store")
    default = resolve({"MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "none.toml")}, tmp_path)
    assert default.store == str(default_store_path()) == str(default_store_location())
    assert default.embedder == "minilm" and default.worker


def test_spelt_out_kinds_match_the_library() -> None:
    assert tuple(k.value for k in MemoryKind) == KINDS


def test_every_command_has_json_and_help_with_examples(cli: Cli) -> None:
    from memory_retrievers.cli.app import cli as group

    names = []
    for name, command in group.commands.items():
        subcommands = getattr(command, "commands", {name: command})
        for sub in subcommands.values():
            names.append(sub.name)
            options = {o for p in sub.params for o in getattr(p, "opts", [])}
            assert "--json" in options or sub.name == "mcp", sub.name  # mcp's stdout is the protocol
            assert "Example" in (sub.epilog or ""), sub.name
    assert {
        "add",
        "import",
        "recall",
        "list",
        "show",
        "export",
        "forget",
        "delete",
        "stats",
        "optimize",
        "purge",
        "dedup",
        "locomo",
        "mcp",
        "status",
        "stop",
    } <= set(names)
    help_text = cli("recall", "--help").stdout
    assert "--rrf-k" in help_text and "--weight-context" in help_text and "--kind-boost" in help_text


# One real LongMemEval assistant turn is 76,566 characters (issue 42): stored whole, by default.
LONG_TURN = "The build ran its checks. " * 800 + "The nightly export runs on worker-3. " + "Done. " * 9_400


def test_add_stores_a_77k_character_turn_whole(cli: Cli) -> None:
    assert cli("add", "-", "-n", "u", "--kind", "message", "--json", input=LONG_TURN).code == 0
    listed = json.loads(cli("list", "-n", "u", "--json").stdout)
    assert [m["text"] for m in listed["memories"]] == [LONG_TURN.rstrip("\n")]
