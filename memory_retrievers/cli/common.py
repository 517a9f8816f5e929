"""Small helpers the commands share: namespace checks and how a memory is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_retrievers.cli import exits

if TYPE_CHECKING:
    from rich.table import Table

    from memory_retrievers.models import Memory
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["ensure_namespace", "memory_table", "short_time"]


def ensure_namespace(store: MemoryStore, namespace: str) -> None:
    """Refuse a namespace without memories: a misspelt name would otherwise read as "nothing stored".

    Raises:
        CliError: Unknown namespace (exit code 3); the message lists the known ones.
    """
    if store.count(namespace, filter={"include_superseded": True}):
        return
    known = store.namespaces()
    listed = ", ".join(repr(n) for n in known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
    raise exits.CliError(
        f"namespace {namespace!r} has no memories in this store; "
        + (f"known namespaces: {listed}" if known else "the store is empty"),
        exits.NOT_FOUND,
    )


def short_time(memory: Memory) -> str:
    """``created_at`` to the minute, UTC."""
    return memory.created_at.strftime("%Y-%m-%d %H:%M") if memory.created_at else "-"


def memory_table(memories: list[Memory], *, title: str | None = None) -> Table:
    """A table of memories for people: id, created, kind, flags, text."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("id", no_wrap=True, style="cyan")
    table.add_column("created (UTC)", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("text", overflow="fold")
    for m in memories:
        flags = ("*" if m.pinned else "") + ("S" if m.superseded_by else "")
        table.add_row(Text(m.id), short_time(m), m.kind.value, flags, Text(m.text))
    return table


def memory_dict(memory: Memory) -> dict[str, Any]:
    """A memory as JSON (no vector)."""
    out = memory.to_dict()
    out.pop("vector", None)
    return out
