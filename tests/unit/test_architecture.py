"""The package's shape, pinned: adapters on public modules, recall through its source, one field registry."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import memory_retrievers
from memory_retrievers import Memory
from memory_retrievers.fields import FIELDS, INHERITED_FIELDS, SCALAR_COLUMNS, WRITABLE_FIELDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(memory_retrievers.__file__).parent
ADAPTERS = [
    ROOT / "integrations" / "langchain" / "langchain_memory_retrievers",
    ROOT / "integrations" / "llama-index" / "llama_index" / "memory_retrievers",
]
#: What an adapter may import of the core.
PUBLIC_MODULES = {"memory_retrievers", "memory_retrievers.integration"}


def imports(path: Path, package: str) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved against ``package``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                out.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                out.add(node.module)
    return out


@pytest.mark.parametrize("folder", ADAPTERS, ids=lambda p: p.name)
def test_adapters_import_only_public_core_modules(folder: Path) -> None:
    for path in folder.glob("*.py"):
        core = {m for m in imports(path, "adapter") if m.split(".")[0] == "memory_retrievers"}
        assert core <= PUBLIC_MODULES, f"{path.name} imports {sorted(core - PUBLIC_MODULES)}"


def test_recall_stages_read_through_the_recall_source_only() -> None:
    for path in (PACKAGE / "recall").glob("*.py"):
        found = imports(path, "memory_retrievers.recall")
        assert not {m for m in found if m.startswith(("memory_retrievers.store", "memory_retrievers.storage"))}, path
        assert "._" not in path.read_text().replace("self._", "").replace("cls._", ""), path  # no private access


def test_storage_components_do_not_import_the_facade_or_each_others_privates() -> None:
    for path in (PACKAGE / "storage").glob("*.py"):
        found = imports(path, "memory_retrievers.storage")
        assert "memory_retrievers.store" not in found and "memory_retrievers.retriever" not in found, path


@pytest.mark.parametrize("folder", ["storage", "recall"])
def test_components_are_small_enough_to_read_in_one_sitting(folder: str) -> None:
    for path in (PACKAGE / folder).glob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, path


def test_the_field_registry_matches_the_memory_record() -> None:
    public = [f.name for f in FIELDS if f.public]
    assert sorted(public) == sorted(f.name for f in dataclasses.fields(Memory))  # column order is the schema's
    assert list(SCALAR_COLUMNS) == [n for n in public if n != "vector"]
    assert set(INHERITED_FIELDS) <= WRITABLE_FIELDS
    assert {"superseded_by", "content_hash", "access_count", "last_accessed_at", "updated_at"}.isdisjoint(
        WRITABLE_FIELDS
    )
