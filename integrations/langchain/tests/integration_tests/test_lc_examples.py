"""The LangChain examples run as the README says (offline, real model, temporary store)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def run(script: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_RETRIEVERS_CHAT_MODEL"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.integration
def test_rag_chain_example() -> None:
    out = run("langchain_rag_chain.py")
    assert "- Alice moved from Paris to Berlin in March 2024." in out
    assert "answer: You live in Berlin" in out


@pytest.mark.integration
def test_agent_example_recalls_across_threads() -> None:
    out = run("langchain_agent_memory.py")
    friday = out[out.index("[thread friday] user") :]
    assert "- [" in friday and "user: My sister Carla lives in Lisbon." in friday
    assert "stored turns: 4" in out
