"""Every code block of docs/how-to/object-storage.md runs as pasted.

The blocks that talk to "your bucket" run with the ``AWS_*`` variables pointing at the test
server (as a deployed app has them for its bucket), and with a bucket of that name created there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testing.local_s3 import LocalS3Server
from testing.paths import ROOT

DOC = ROOT / "docs" / "how-to" / "object-storage.md"
BLOCK = re.compile(r"(?:<!-- (?P<note>[^>]*) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)


def blocks() -> list[tuple[str, str, str]]:
    return [(m["lang"], m["note"] or "", m["body"]) for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def _env(extra: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_RETRIEVERS_", "AWS_"))}
    bin_dir = str(Path(sys.executable).parent)  # the console script on PATH, as in a user's shell
    return base | {"PATH": bin_dir + os.pathsep + base.get("PATH", ""), "MEMORY_RETRIEVERS_NO_WORKER": "1"} | extra


def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.heavy
def test_every_block_of_the_object_storage_guide_runs_as_pasted(s3_server: LocalS3Server, tmp_path: Path) -> None:
    found = blocks()
    python = [body for lang, _, body in found if lang == "python"]
    bash = [body for lang, note, body in found if lang == "bash" and not note.startswith("not run")]
    assert len(python) == 3 and len(bash) == 1
    assert [note for _, note, _ in found if note] == ["not run by test_docs.py: it runs this very test"]

    # 1. The self-contained one starts its own server.
    out = _run([sys.executable, "-c", python[0]], _env({}), tmp_path)
    assert "'allow_http': 'true'" in out and "Hit(id=" in out

    # 2. "Your bucket": credentials and endpoint from the environment.
    s3_server.create_bucket("my-bucket")
    aws = _env(s3_server.env)
    assert _run([sys.executable, "-c", python[1]], aws, tmp_path).strip() == "1"
    out = _run(["bash", "-euo", "pipefail", "-c", bash[0]], aws, tmp_path)
    assert "Alice prefers the dark theme" in out  # recalled from the bucket

    # 3. Queued chat turns: the awaited one is ADDED, and close() committed the rest.
    assert _run([sys.executable, "-c", python[2]], aws, tmp_path).split() == ["WriteAction.ADDED", "3"]
    assert any(
        "my-bucket/memories/memories.lance/_versions/" in k for k in s3_server.list_objects("s3://my-bucket/memories")
    )
