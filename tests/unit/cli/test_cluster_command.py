"""``memory-retrievers cluster`` (issue 29): lays each namespace's memories out together."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from memory_retrievers.cli.app import cli as command_tree

from .conftest import Result

Cli = Callable[..., Result]


def test_cluster_moves_interleaved_memories_and_reports_it(cli: Cli) -> None:
    for i in range(3):  # one commit per add: alice's and bob's memories interleave
        for who in ("alice", "bob"):
            assert cli("add", f"{who} fact number {i}", "-n", who).code == 0
    first = json.loads(cli("cluster", "--optimize", "--json").stdout)
    assert first["moved"] == 6 and first["skipped"] == 0 and first["runs_after"] == 1 and first["optimized"]
    assert json.loads(cli("optimize", "--json").stdout)["after"]["unindexed_rows"] == 0
    again = cli("cluster")
    assert again.code == 0 and again.stdout.startswith("clustered: moved 0 memories"), again.stdout
    assert json.loads(cli("list", "-n", "alice", "--json").stdout)["total"] == 3


def test_cluster_is_in_the_command_tree_with_an_example() -> None:
    command = command_tree.commands["cluster"]
    assert "Example" in (command.epilog or "") and any(p.name == "as_json" for p in command.params)


def test_cluster_on_a_sharded_store_runs_on_every_shard(cli: Cli, tmp_path: Path) -> None:
    # Regression (issue 29 red team): on a shards:// store the command failed with AttributeError.
    shards = {"MEMORY_RETRIEVERS_STORE": f"shards://{tmp_path / 's0'},{tmp_path / 's1'}"}
    for i in range(2):
        for who in ("alice", "bob", "carol", "dave"):
            assert cli("add", f"{who} fact number {i}", "-n", who, extra_env=shards).code == 0
    done = cli("cluster", "--json", extra_env=shards)
    assert done.code == 0, done.stderr
    found = json.loads(done.stdout)
    assert len(found["shards"]) == 2 and found["moved"] == sum(s["moved"] for s in found["shards"]) > 0
