"""Fixtures for the command line: a store per test, the CLI run in-process or as a real process."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_retrievers.cli.app import run
from memory_retrievers.cli.runtime import Invocation, StoreProvider
from memory_retrievers.cli.workerproto import ask_to_stop

PYTHON = sys.executable
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("memory-retrievers"))


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    # Short and private: Unix socket paths are limited to ~100 characters.
    folder = Path(tempfile.mkdtemp(prefix="mrw"))
    yield folder
    for sock in folder.glob("*.sock"):  # stop any worker a test started
        ask_to_stop(sock)  # the client's own request: a stale protocol is answered "fallback" and stops nothing
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def env(tmp_path: Path, runtime_dir: Path) -> dict[str, str]:
    """Environment of a CLI run: a store in tmp, the hash embedder, no config file, no worker."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_RETRIEVERS_")}
    return {
        **base,
        "MEMORY_RETRIEVERS_STORE": str(tmp_path / "store"),
        "MEMORY_RETRIEVERS_EMBEDDER": "hash:32",
        "MEMORY_RETRIEVERS_CONFIG": str(tmp_path / "config.toml"),
        "MEMORY_RETRIEVERS_RUNTIME_DIR": str(runtime_dir),
        "MEMORY_RETRIEVERS_NO_WORKER": "1",
    }


@pytest.fixture
def cli(env: dict[str, str], tmp_path: Path) -> Callable[..., Result]:
    """Run a command line in this process through the same ``run`` the entry point uses."""

    def invoke(*args: str, input: str = "", tty: bool = False, extra_env: dict[str, str] | None = None) -> Result:
        out, err = io.StringIO(), io.StringIO()
        inv = Invocation(
            env={**env, **(extra_env or {})},
            cwd=tmp_path,
            stdout=out,
            stderr=err,
            stdin=io.StringIO(input),
            stdout_tty=tty,
            stderr_tty=tty,
            stdin_tty=tty,
            width=120,
            stores=StoreProvider(),
        )
        code = run(list(args), inv)
        return Result(code, out.getvalue(), err.getvalue())

    return invoke


@pytest.fixture
def proc(env: dict[str, str], tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m memory_retrievers ARGS`` (or the console script with ``script=True``) as a real process."""

    def invoke(
        *args: str, input: str | None = None, script: bool = False, extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [CONSOLE_SCRIPT] if script else [PYTHON, "-m", "memory_retrievers"]
        return subprocess.run(
            [*command, *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=300,
            env={**env, **(extra_env or {})},
            cwd=tmp_path,
            check=False,
        )

    return invoke
