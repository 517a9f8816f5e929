"""The command line on a sharded store: ``shards://a,b`` (or a list as ``store`` in the config file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lancedb
import pytest

from memory_retrievers import shard_of
from memory_retrievers.cli.settings import SettingsError, load_config, resolve

Cli = Callable[..., Any]
USERS = ["alice", "bob", "carol", "dave"]


def _stored(folder: Path) -> set[str]:
    table = lancedb.connect(folder).open_table("memories")
    return set(table.to_arrow().column("namespace").to_pylist())


def test_a_sharded_store_from_the_environment_routes_each_namespace(cli: Cli, tmp_path: Path) -> None:
    sharded = {"MEMORY_RETRIEVERS_STORE": "shards://s0,s1"}  # relative to the working directory
    for user in USERS:
        assert cli("add", f"{user} drinks green tea", "-n", user, extra_env=sharded).code == 0
    recalled = cli("recall", "what do I drink?", "-n", "carol", extra_env=sharded)
    assert recalled.code == 0 and "carol drinks green tea" in recalled.stdout and "alice" not in recalled.stdout
    stats = json.loads(cli("stats", "--json", extra_env=sharded).stdout)
    assert stats["rows"] == 4 and len(stats["shards"]) == 2
    for i in range(2):
        assert _stored(tmp_path / f"s{i}") == {u for u in USERS if shard_of(u, 2) == i}


def test_a_list_in_the_config_file_is_a_sharded_store(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('store = ["./a", "s3://bucket/b"]\n')
    settings = resolve({"MEMORY_RETRIEVERS_CONFIG": str(config)}, tmp_path)
    assert settings.store == f"shards://{tmp_path / 'a'},s3://bucket/b"
    for bad in ("store = []\n", 'store = ["a,b"]\n', "store = [1]\n"):
        config.write_text(bad)
        with pytest.raises(SettingsError, match="store"):
            load_config(config)
