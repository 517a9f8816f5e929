"""Commands on single memories and namespaces: ``add``, ``list``, ``show``, ``delete``, ``forget``."""

from __future__ import annotations

import json
from typing import Any

import click

from memory_retrievers.cli.common import ensure_namespace, memory_dict, memory_table
from memory_retrievers.cli.options import (
    KINDS,
    common_options,
    filter_from,
    filter_options,
    namespace_option,
    parse_when,
    require_namespace,
    settings_for,
)
from memory_retrievers.cli.runtime import Invocation

__all__ = ["COMMANDS"]


@click.command(
    "add",
    epilog="""\b
Examples:
  memory-retrievers add "Alice prefers the dark theme" -n alice --kind preference --entity Alice
  echo "Alice moved to Berlin" | memory-retrievers add -n alice --kind event --created-at 2024-03-01
  memory-retrievers add "Alice now prefers light" -n alice --supersedes 3f2a...""",
)
@click.argument("text", required=False)
@namespace_option
@click.option("--kind", type=click.Choice(KINDS), help="What it is (default fact).")
@click.option("--id", "id_", metavar="ID", help="Your id; an existing id is updated in place (upsert).")
@click.option("--session", "session_id", metavar="ID", help="Session (chat) it belongs to.")
@click.option("--project", metavar="P", help="Project it belongs to.")
@click.option("--topic", metavar="T", help="Topic it belongs to.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeat).")
@click.option("--entity", "entities", multiple=True, metavar="E", help="An entity it is about (repeat).")
@click.option("--link", "links", multiple=True, metavar="ID", help="Id of a related memory (repeat).")
@click.option("--priority", type=float, help="0-10 (default 1).")
@click.option("--importance", type=float, help="0-1 (default 0.5).")
@click.option("--pinned", is_flag=True, default=None, help="Always recalled first.")
@click.option("--created-at", metavar="WHEN", help="When it happened (ISO 8601; UTC if no offset). Default now.")
@click.option("--context", metavar="TEXT", help="Text searched with it but not returned (e.g. neighbouring turns).")
@click.option("--metadata", metavar="JSON", help='A JSON object, e.g. \'{"source": "chat"}\'.')
@click.option("--supersedes", metavar="ID", help="Replace this memory: it is kept but hidden from recall.")
@click.option("--no-dedup", is_flag=True, help="Store it even if an exact or near duplicate exists.")
@common_options
@click.pass_obj
def add(inv: Invocation, /, text: str | None, **params: Any) -> None:
    """Store one memory: TEXT, or stdin when TEXT is - or omitted."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    namespace = require_namespace(settings)
    if text is None or text == "-":
        if text is None and inv.stdin_tty:
            raise click.UsageError("pass TEXT, or pipe the text on stdin (TEXT is - or omitted)")
        text = inv.stdin.read()
        if text.endswith("\n"):  # `echo text |` adds one; the memory is the text itself
            text = text[:-1]
    fields: dict[str, Any] = {}
    for key in ("kind", "session_id", "project", "topic", "priority", "importance", "pinned", "context"):
        if params[key] is not None:
            fields[key] = params[key]
    if params["id_"] is not None:
        fields["id"] = params["id_"]
    for key in ("tags", "entities", "links"):
        if params[key]:
            fields[key] = list(params[key])
    if params["created_at"]:
        fields["created_at"] = parse_when(params["created_at"], "--created-at")
    if params["metadata"] is not None:
        try:
            fields["metadata"] = json.loads(params["metadata"])
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--metadata") from None
    store = inv.stores.open(settings, create=True)
    if params["supersedes"]:
        result = store.supersede(
            params["supersedes"],
            {"text": text, **fields},
            namespace=namespace,
            dedup=False if params["no_dedup"] else None,
        )
    else:
        result = store.add(text, namespace=namespace, dedup=False if params["no_dedup"] else None, **fields)
    if params["as_json"]:
        inv.json(
            {
                **memory_dict(result),
                "action": result.action.value,
                "duplicate_of": result.duplicate_of,
                "similarity": result.similarity,
            }
        )
    elif result.duplicate_of and result.action.value == "skipped":
        inv.out(f"skipped {result.id} (duplicate, similarity {result.similarity or 1.0:.3f})")
    else:
        inv.out(f"{result.action.value} {result.id}")


@click.command(
    "list",
    epilog="""\b
Examples:
  memory-retrievers list -n alice
  memory-retrievers list -n alice --kind preference --after 2024-01-01 --limit 50
  memory-retrievers list -n alice --json | jq '.memories[].text'""",
)
@namespace_option
@filter_options
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True, help="How many.")
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True, help="Skip this many.")
@click.option("--oldest-first", is_flag=True, help="Oldest first (default newest first).")
@common_options
@click.pass_obj
def list_(inv: Invocation, /, **params: Any) -> None:
    """List memories of a namespace, newest first (superseded ones only with --include-superseded)."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    namespace = require_namespace(settings)
    store = inv.stores.open(settings, create=False)
    ensure_namespace(store, namespace)
    flt = filter_from(params)
    memories = store.list(
        namespace, filter=flt, limit=params["limit"], offset=params["offset"], newest_first=not params["oldest_first"]
    )
    total = store.count(namespace, filter=flt)
    if params["as_json"]:
        inv.json(
            {
                "namespace": namespace,
                "total": total,
                "offset": params["offset"],
                "memories": [memory_dict(m) for m in memories],
            }
        )
        return
    if not memories:
        inv.err(f"no memories of {namespace!r} match" + (" at this offset" if params["offset"] else ""))
        return
    first = params["offset"] + 1
    console = inv.console()
    console.print(memory_table(memories))
    console.print(f"{first}-{first + len(memories) - 1} of {total}  (* pinned, S superseded)")


@click.command(
    "show",
    epilog="""\b
Examples:
  memory-retrievers show 3f2a9c... -n alice
  memory-retrievers show 3f2a9c... -n alice --json""",
)
@click.argument("memory_id", metavar="ID")
@namespace_option
@common_options
@click.pass_obj
def show(inv: Invocation, /, memory_id: str, **params: Any) -> None:
    """Show every field of one memory, its supersession chain and its links."""
    from memory_retrievers.errors import NotFoundError

    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    namespace = require_namespace(settings)
    store = inv.stores.open(settings, create=False)
    ensure_namespace(store, namespace)
    memory = store.get(memory_id, namespace=namespace)

    def fetch(id_: str) -> Any:
        try:
            return store.get(id_, namespace=namespace)
        except NotFoundError:
            return None

    older, newer = [], []
    seen = {memory.id}
    cursor = memory
    while cursor is not None and cursor.supersedes and cursor.supersedes not in seen:
        seen.add(cursor.supersedes)
        cursor = fetch(cursor.supersedes)
        older.append(cursor)
    cursor = memory
    while cursor is not None and cursor.superseded_by and cursor.superseded_by not in seen:
        seen.add(cursor.superseded_by)
        cursor = fetch(cursor.superseded_by)
        newer.append(cursor)
    chain = [*reversed(older), memory, *newer]
    links = [(id_, fetch(id_)) for id_ in memory.links]
    if params["as_json"]:
        inv.json(
            {
                "memory": memory_dict(memory),
                "chain": [memory_dict(m) if m is not None else None for m in chain],
                "links": [{"id": i, "found": m is not None, "text": m.text if m else None} for i, m in links],
            }
        )
        return
    from rich.table import Table
    from rich.text import Text

    fields = Table(show_header=False, box=None, pad_edge=False)
    fields.add_column(style="bold", no_wrap=True)
    fields.add_column(overflow="fold")
    for key, value in memory_dict(memory).items():
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else str(value)
        fields.add_row(key, Text(shown))
    console = inv.console()
    console.print(fields)
    if len(chain) > 1:
        console.print("\nsupersession chain (oldest first):", style="bold")
        for m in chain:
            mark = ">" if m is memory else " "
            console.print(Text(f"{mark} {m.id}  {m.text}" if m is not None else "  (missing: deleted)"))
    if links:
        console.print("\nlinks:", style="bold")
        for id_, m in links:
            console.print(Text(f"  {id_}  {m.text if m is not None else '(missing)'}"))


@click.command(
    "delete",
    epilog="""\b
Examples:
  memory-retrievers delete 3f2a9c... 77b0e1... -n alice
  memory-retrievers delete 3f2a9c... -n alice --missing-ok --json""",
)
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@namespace_option
@click.option("--missing-ok", is_flag=True, help="Delete the ids that exist (default: all or nothing).")
@common_options
@click.pass_obj
def delete(inv: Invocation, /, ids: tuple[str, ...], **params: Any) -> None:
    """Delete memories by id (a memory they superseded becomes live again)."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    namespace = require_namespace(settings)
    store = inv.stores.open(settings, create=False)
    ensure_namespace(store, namespace)
    deleted = store.delete(list(ids), namespace=namespace, missing_ok=params["missing_ok"])
    if params["as_json"]:
        inv.json({"namespace": namespace, "deleted": deleted})
    else:
        inv.out(f"deleted {deleted} memor{'y' if deleted == 1 else 'ies'} of {namespace!r}")


@click.command(
    "forget",
    epilog="""\b
Examples:
  memory-retrievers forget alice            # asks first
  memory-retrievers forget alice --yes --json
  memory-retrievers forget alice --yes && memory-retrievers purge --yes   # and off the disk now

\b
forget hides the memories at once; their bytes stay in older table versions and files until
those are pruned. Run `memory-retrievers purge` afterwards to remove them from disk now.""",
)
@click.argument("namespace")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@common_options
@click.pass_obj
def forget(inv: Invocation, /, namespace: str, **params: Any) -> None:
    """Delete every memory of NAMESPACE (a user's right to be forgotten; then purge erases the bytes)."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    store = inv.stores.open(settings, create=False)
    ensure_namespace(store, namespace)
    count = store.count(namespace, filter={"include_superseded": True})
    if not params["yes"]:
        if not inv.stdin_tty:
            raise click.UsageError(
                f"refusing to forget {namespace!r} ({count} memories) without --yes when not at a terminal"
            )
        click.confirm(f"Delete all {count} memories of {namespace!r}?", abort=True, err=True)
    deleted = store.forget(namespace)
    if params["as_json"]:
        inv.json({"namespace": namespace, "deleted": deleted})
    else:
        inv.out(f"forgot {deleted} memor{'y' if deleted == 1 else 'ies'} of {namespace!r}")


COMMANDS = [add, list_, show, delete, forget]
