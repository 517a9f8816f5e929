"""The ``memory-retrievers bulk`` commands of docs/how-to/bulk-jobs.md run as pasted.

Its Python blocks run in tests/unit/test_docs.py.

They run in order in one folder holding what the page says the reader has: ``history.jsonl`` and a
package ``myapp`` whose ``llms.make_llm`` builds the LLM (the page's own stand-in). The store is the
page's ``./memories`` (``MEMORY_RETRIEVERS_STORE``); the hash embedder keeps the run short. The
``pip install`` and benchmark blocks are not run here (the benchmark is its own command).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from testing.paths import ROOT

PAGE = ROOT / "docs" / "how-to" / "bulk-jobs.md"
BLOCK = re.compile(r"```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)

LLMS = """
import json


def my_llm(prompt: str) -> str:
    if prompt.startswith("Extract"):
        fact = {"text": "Ana is planning a trip to Lisbon.", "about": "Ana", "sources": [1], "confidence": "explicit"}
        return json.dumps({"facts": [fact]})
    return '{"action": "ADD"}'


def make_llm():
    return my_llm
"""


def test_the_bulk_commands_run_as_pasted(ray_instance: Any, tmp_path: Path) -> None:
    commands = [
        line
        for m in BLOCK.finditer(PAGE.read_text())
        if m["lang"] == "bash"
        for line in m["body"].splitlines()
        if line.startswith("memory-retrievers bulk ")
    ]
    assert [c.split()[2] for c in commands] == ["import", "reembed", "backfill", "cluster"]
    lines = [{"text": f"Ana: message {i} about the trip", "kind": "message", "session_id": "trip"} for i in range(60)]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "llms.py").write_text(LLMS)
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_RETRIEVERS_")}
    env = base | {
        "MEMORY_RETRIEVERS_STORE": str(tmp_path / "memories"),
        "MEMORY_RETRIEVERS_EMBEDDER": "hash:32",
        "MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "config.toml"),
        "MEMORY_RETRIEVERS_NO_WORKER": "1",
        "RAY_ADDRESS": ray_instance.get_runtime_context().gcs_address,  # the test's instance, not a new one
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), base.get("PYTHONPATH", "")]),
    }
    outputs = []
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "memory_retrievers", *command.split("#")[0].split()[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        outputs.append(done.stdout)
    assert outputs[0].startswith("imported 60 records in ")
    assert outputs[1].startswith("re-embedded 60 memories in ")
    assert (tmp_path / "memories-v3" / "memories.lance").is_dir()
    assert outputs[2].startswith("formed 1 facts in 1 namespace(s) in ")
    assert outputs[3].startswith(f"shard 0 ({tmp_path / 'memories'}): moved ")  # the page's plain store: one table
    assert "clustered 1 of 1 table(s) in " in outputs[3]
