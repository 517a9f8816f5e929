"""README code blocks run as pasted (offline, real model, each in a fresh folder and home).

The root README's Quickstart, Recall, LangChain and LlamaIndex blocks, and each adapter package's
own README (its page on the package index). Where a Quickstart line states a write's action in a
comment (``.action  # WriteAction.SKIPPED``), the run also checks that claim.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)
_ACTION_CLAIM = re.compile(r"^(?P<call>.+)\.action  # WriteAction\.(?P<action>[A-Z]+)\b.*$", flags=re.M)


def section_blocks(section: str, end: str) -> list[str]:
    text = README.read_text()
    return _BLOCK.findall(text[text.index(f"## {section}\n") : text.index(f"## {end}\n")])


def run_as_pasted(code: str, folder: Path, name: str) -> None:
    script = folder / f"{name}.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env={**os.environ, "HOME": str(folder)},  # MemoryStore() with no path writes under ~
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stderr[-3000:]}"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("section", "end", "count", "store_folder"),
    [
        ("Quickstart", "Command line", 1, ".local/share/memory-retrievers/store"),
        ("Recall", "Memories", 1, "mem"),
        ("Memory formation", "LangChain", 1, "mem"),
        ("LangChain", "LlamaIndex", 3, "memories"),
        ("LlamaIndex", "Benchmarks", 2, "memories"),
    ],
)
def test_readme_section_runs_as_pasted(tmp_path: Path, section: str, end: str, count: int, store_folder: str) -> None:
    blocks = section_blocks(section, end)
    assert len(blocks) == count
    for i, block in enumerate(blocks):
        run_as_pasted(block, tmp_path, f"{section.lower()}_{i}")
    assert (tmp_path / store_folder).is_dir()


@pytest.mark.integration
def test_the_quickstart_actions_are_the_ones_its_comments_state(tmp_path: Path) -> None:
    (block,) = section_blocks("Quickstart", "Command line")
    checked = _ACTION_CLAIM.sub(r'assert (\g<call>).action.name == "\g<action>"', block)
    assert checked.count("assert") == 2  # ADDED, then SKIPPED
    run_as_pasted(checked, tmp_path, "quickstart_checked")


@pytest.mark.integration
def test_the_recall_section_abstains_where_its_comment_says(tmp_path: Path) -> None:
    (block,) = section_blocks("Recall", "Memories")
    claim = re.compile(r"^(?P<call>.+\.memories)  # \(\) .*$", flags=re.M)
    checked = claim.sub(r"assert \g<call> == ()", block)
    assert checked.count("assert") == 1  # min_relevance: nothing rather than noise
    run_as_pasted(checked, tmp_path, "recall_checked")


@pytest.mark.integration
@pytest.mark.parametrize("package", ["langchain", "llama-index"])
def test_the_package_readme_runs_as_pasted(tmp_path: Path, package: str) -> None:
    (block,) = _BLOCK.findall((ROOT / "integrations" / package / "README.md").read_text())
    run_as_pasted(block, tmp_path, f"{package}_readme")
    assert (tmp_path / "memories").is_dir()
