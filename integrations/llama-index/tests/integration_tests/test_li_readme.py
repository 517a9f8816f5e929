"""The README's LlamaIndex snippets run as pasted (offline, real model, in a temporary folder)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[4] / "README.md"
#: The package's own README (its page on the package index).
PACKAGE_README = Path(__file__).resolve().parents[2] / "README.md"


def snippets(section: str, end: str) -> list[str]:
    text = README.read_text()
    body = text[text.index(f"## {section}\n") : text.index(f"## {end}\n")]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


@pytest.mark.integration
def test_the_llama_index_snippets_run_as_pasted(tmp_path: Path) -> None:
    blocks = snippets("LlamaIndex", "Benchmarks")
    assert len(blocks) == 2
    for i, block in enumerate(blocks):
        script = tmp_path / f"snippet_{i}.py"
        script.write_text(block)  # as pasted
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, f"README LlamaIndex snippet {i} failed:\n{done.stderr[-3000:]}"
    assert (tmp_path / "memories").is_dir()


@pytest.mark.integration
def test_the_package_readme_snippet_runs_as_pasted(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PACKAGE_README.read_text(), flags=re.S)
    assert len(blocks) == 1
    script = tmp_path / "snippet.py"
    script.write_text(blocks[0])
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"llama-index package README snippet failed:\n{done.stderr[-3000:]}"
    assert (tmp_path / "memories").is_dir()
