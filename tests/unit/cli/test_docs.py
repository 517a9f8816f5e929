"""The commands shown in docs/how-to/cli.md and in the README's "Command line" quickstart run as pasted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testing.paths import ROOT

# Processes and the real model: the long tier (python -m pytest -m long).
pytestmark = pytest.mark.long

LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
BLOCK = re.compile(r"(?:<!-- (?P<note>[^>]*) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)


def blocks(text: str, lang: str) -> list[tuple[str, str]]:
    return [(m["note"] or "", m["body"]) for m in BLOCK.finditer(text) if m["lang"] == lang]


def _run(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    # Like a user's shell: the console script on PATH, the worker on (in the test's runtime dir), no
    # store variable, so the per-user default store is used: here under a tmp XDG_DATA_HOME. Only the
    # embedder is swapped for the fast hash one (a setting, not part of the commands).
    shell_env = {k: v for k, v in env.items() if k != "MEMORY_RETRIEVERS_STORE"} | {
        "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
        "MEMORY_RETRIEVERS_NO_WORKER": "",
        "XDG_DATA_HOME": str(Path(env["MEMORY_RETRIEVERS_CONFIG"]).parent / "xdg-data"),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=shell_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.heavy
def test_the_cli_guide_runs_as_pasted(env: dict[str, str], tmp_path: Path) -> None:
    text = (ROOT / "docs" / "how-to" / "cli.md").read_text()
    scripts = [body for note, body in blocks(text, "bash") if not note.startswith("cwd: repo")]
    done = _run("\n".join(scripts), env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Relevant memories (most relevant first):" in done.stdout
    assert "why these memories" in done.stdout and "index coverage" in done.stdout
    assert "exit code 5 (5: some lines rejected" in done.stdout
    assert "supersession chain" in done.stdout and "1 duplicate(s)" in done.stdout
    assert (tmp_path / "copy" / "memories.lance").is_dir() and (tmp_path / "backup.jsonl").is_file()
    assert (tmp_path / "team-store" / "memories.lance").is_dir()  # the config file's store, relative to it
    assert (tmp_path / "xdg-data" / "memory-retrievers" / "store" / "memories.lance").is_dir()  # the default
    (config,) = [json.loads(body) for _, body in blocks(text, "json")]
    assert config["mcpServers"]["memory"]["args"][0] == "mcp"


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not at {LOCOMO} (see shared/data/locomo/README.md)")
def test_the_eval_example_runs_from_the_repository_root(env: dict[str, str]) -> None:
    text = (ROOT / "docs" / "how-to" / "cli.md").read_text()
    (script,) = [body for note, body in blocks(text, "bash") if note.startswith("cwd: repo")]
    done = _run(script, env, ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "recall@10" in done.stdout and "all" in done.stdout


def test_the_readme_command_line_quickstart_runs_as_pasted(env: dict[str, str], tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Command line\n", 1)[1].split("\n## ", 1)[0]
    (script,) = [body for _, body in blocks(section, "bash")]
    lines = script.splitlines()
    assert len(lines) == 1 and "memory-retrievers add" in lines[0] and "memory-retrievers recall" in lines[0]
    done = _run("\n".join(lines), env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Relevant memories (most relevant first):" in done.stdout
