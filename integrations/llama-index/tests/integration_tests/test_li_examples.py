"""The LlamaIndex examples run as the README says (offline, real model, temporary store)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def run(script: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_RETRIEVERS_LLAMA_LLM"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.integration
def test_query_engine_example() -> None:
    out = run("llama_index_query_engine.py")
    sources = out[out.index("sources:") : out.index("answer:")]
    assert "Alice moved from Paris to Berlin in March 2024." in sources


@pytest.mark.integration
def test_chat_memory_example_recalls_across_sessions() -> None:
    out = run("llama_index_chat_memory.py")
    friday = out[out.index("[friday] memory recalled") :]
    assert "user: My sister Carla lives in Lisbon." in friday
    assert "stored messages: 4" in out
