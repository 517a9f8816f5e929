"""Keeping a store healthy: ``stats``, ``optimize``, ``purge`` and ``dedup`` (an offline near-duplicate report)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.common import ensure_namespace
from memory_retrievers.cli.options import common_options, namespace_option, settings_for
from memory_retrievers.cli.runtime import Invocation

if TYPE_CHECKING:
    from collections.abc import Iterator

    from memory_retrievers.cli.settings import Settings
    from memory_retrievers.storage.stats import StoreStats

__all__ = ["COMMANDS", "duplicate_groups"]


def _size(n: int | None) -> str:
    from memory_retrievers.storage.stats import human_bytes  # at call time: the command line starts without pyarrow

    return "n/a (object store)" if n is None else human_bytes(n)


def _print_stats(inv: Invocation, /, stats: StoreStats, namespace: str | None) -> None:
    from rich.table import Table
    from rich.text import Text

    console = inv.console()
    console.print(Text(f"store       {stats.uri} (table {stats.table!r})"))
    console.print(f"embedder    {stats.embedder} (dimension {stats.dimension}), schema version {stats.schema_version}")
    console.print(f"memories    {stats.rows} in {len(stats.namespaces)} namespace(s)")
    console.print(f"fragments   {stats.fragments} ({stats.small_fragments} small)")
    console.print(f"versions    {stats.versions} kept, current {stats.version}")
    console.print(f"disk        {_size(stats.disk_bytes)} (current data {_size(stats.data_bytes)})")
    kinds = sorted({k for n in stats.namespaces for k in n.kinds})
    table = Table(title="memories per namespace (live, by kind)", title_justify="left")
    table.add_column("namespace", style="cyan")
    table.add_column("live", justify="right")
    table.add_column("superseded", justify="right")
    for kind in kinds:
        table.add_column(kind, justify="right")
    for n in stats.namespaces:
        if namespace is None or n.namespace == namespace:
            table.add_row(Text(n.namespace), str(n.live), str(n.superseded), *(str(n.kinds.get(k, 0)) for k in kinds))
    console.print(table)
    indexes = Table(title="index coverage", title_justify="left")
    for name in ("index", "type", "column", "indexed", "unindexed"):
        indexes.add_column(name, justify="right" if name in ("indexed", "unindexed") else "left")
    for i in stats.indexes:
        indexes.add_row(i.name, i.index_type, ",".join(i.columns), str(i.indexed_rows), str(i.unindexed_rows))
    console.print(indexes)
    if not stats.indexes:
        console.print("no indexes yet: they are built after the first write")


@click.command(
    "stats",
    epilog="""\b
Examples:
  memory-retrievers stats
  memory-retrievers stats -n alice --json""",
)
@namespace_option
@common_options
@click.pass_obj
def stats(inv: Invocation, /, **params: Any) -> None:
    """Memories per namespace and kind, index coverage, fragments, versions, disk size."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    store = inv.stores.open(settings, create=False)
    if params["namespace"]:
        ensure_namespace(store, params["namespace"])
    result = store.admin.stats()
    if params["as_json"]:
        data = result.to_dict()
        if params["namespace"]:
            data["namespaces"] = [n for n in data["namespaces"] if n["namespace"] == params["namespace"]]
        inv.json(data)
    else:
        _print_stats(inv, result, params["namespace"])


@click.command(
    "optimize",
    epilog="""\b
Examples:
  memory-retrievers optimize
  memory-retrievers optimize --json""",
)
@common_options
@click.pass_obj
def optimize(inv: Invocation, /, **params: Any) -> None:
    """Fold new rows into the indexes, compact fragments, prune old versions."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    store = inv.stores.open(settings, create=False)
    before = store.admin.stats()
    store.admin.optimize()
    after = store.admin.stats()

    def brief(s: StoreStats) -> dict[str, Any]:
        return {
            "fragments": s.fragments,
            "versions": s.versions,
            "unindexed_rows": sum(i.unindexed_rows for i in s.indexes),
            "disk_bytes": s.disk_bytes,
        }

    if params["as_json"]:
        inv.json({"before": brief(before), "after": brief(after)})
        return
    b, a = brief(before), brief(after)
    inv.out(
        f"optimized: fragments {b['fragments']} -> {a['fragments']}, versions {b['versions']} -> {a['versions']}, "
        f"unindexed rows {b['unindexed_rows']} -> {a['unindexed_rows']}, "
        f"disk {_size(b['disk_bytes'])} -> {_size(a['disk_bytes'])}"
    )


@click.command(
    "purge",
    epilog="""\b
Examples:
  memory-retrievers forget alice --yes && memory-retrievers purge        # asks first
  memory-retrievers purge --yes --json

\b
delete and forget hide memories at once, but their bytes stay in older table versions and
files until those are pruned (optimize keeps versions for an hour). purge rewrites every file
holding a deleted memory, rebuilds the indexes and deletes every older version now: afterwards
the forgotten text is in no file of the store. It stops this store's worker and keeps it
stopped until done; another program (an app, an MCP server) writing meanwhile keeps its writes,
and its reads of an older version at that moment fail. Earlier versions can no longer be read
afterwards. Files of writes that never committed (a killed writer) are kept for 7 days, in case
they belong to a write in flight; --remove-uncommitted deletes them too, when nothing else
writes the store.""",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--remove-uncommitted",
    is_flag=True,
    help="Also delete files of writes that never committed; only when no other program writes the store.",
)
@common_options
@click.pass_obj
def purge(inv: Invocation, /, **params: Any) -> None:
    """Remove deleted and forgotten memories from disk for good (needs the store to itself)."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    from memory_retrievers.cli.runtime import store_exists

    if not store_exists(settings.store):
        inv.stores.open(settings, create=False)  # raises the usual "no store at ..." (exit 3)
    if not params["yes"]:
        if not inv.stdin_tty:
            raise click.UsageError("refusing to purge without --yes when not at a terminal")
        click.confirm(
            f"Purge {settings.store}? No other program may read or write it until this finishes "
            "(this store's worker is stopped first); older versions are deleted.",
            abort=True,
            err=True,
        )
    with _store_to_itself(inv, settings):
        store = inv.stores.open(settings, create=False)
        before = store.admin.stats()
        store.admin.purge(remove_uncommitted=params["remove_uncommitted"])
        after = store.admin.stats()
    result = {
        "versions": {"before": before.versions, "after": after.versions},
        "disk_bytes": {"before": before.disk_bytes, "after": after.disk_bytes},
        "rows": after.rows,
    }
    if params["as_json"]:
        inv.json(result)
        return
    inv.out(
        f"purged: versions {before.versions} -> {after.versions}, disk {_size(before.disk_bytes)} -> "
        f"{_size(after.disk_bytes)}; deleted and forgotten memories are no longer on disk"
    )


@contextlib.contextmanager
def _store_to_itself(inv: Invocation, /, settings: Settings) -> Iterator[None]:
    """Stop the store's worker (it keeps the table open) and keep a new one from starting until the block ends."""
    from memory_retrievers.cli.workerproto import (
        WorkerUnavailableError,
        no_worker_meanwhile,
        package_version,
        runtime_dir,
        socket_path,
    )
    from memory_retrievers.cli.workerproto import supported as workers_supported

    if not workers_supported():
        yield
        return
    try:
        path = socket_path(runtime_dir(inv.env), settings.store, settings.embedder, package_version(), settings.cloud)
    except WorkerUnavailableError:  # no safe runtime folder: no worker can serve this store
        yield
        return
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(no_worker_meanwhile(path))
        except WorkerUnavailableError as exc:
            raise exits.CliError(
                f"{exc}; stop it with `memory-retrievers worker stop` and purge again", exits.STORAGE
            ) from None
        yield


def duplicate_groups(records: list[dict[str, Any]], threshold: float) -> list[list[tuple[dict[str, Any], float]]]:
    """Groups of exact (same ``content_hash``) or near duplicates, by the write path's own rules.

    A near duplicate has cosine >= ``threshold`` *and* the same words, and duplicates share a kind,
    project and topic (see :mod:`memory_retrievers.text.dedup`): ``--delete`` never removes what a write
    would have kept apart ("at 3pm" vs "at 2pm"). Each group starts with the memory to keep (most
    accessed, then oldest, then smallest id), followed by its duplicates with their cosine
    similarity to it (1.0 for exact ones). Records need ``vector``.
    """
    import numpy as np

    from memory_retrievers.text.dedup import same_words, scope_of

    n = len(records)
    if n < 2:
        return []
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    scopes = [scope_of(r) for r in records]
    first_of: dict[tuple[Any, str], int] = {}
    for i, r in enumerate(records):
        j = first_of.setdefault((scopes[i], r["content_hash"]), i)
        if j != i:
            union(i, j)
    vectors = np.asarray([r["vector"] for r in records], dtype=np.float32)
    for start in range(0, n, 1024):  # blocks keep memory at 1024 x n similarities
        sims = vectors[start : start + 1024] @ vectors.T
        rows, cols = np.nonzero(sims >= threshold)
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            a = start + i
            if a < j and scopes[a] == scopes[j] and same_words(records[a]["text"], records[j]["text"]):
                union(a, j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    out = [_keep_first(records, vectors, members) for members in groups.values() if len(members) >= 2]
    out.sort(key=lambda g: g[0][0]["created_at"])
    return out


def _keep_first(records: list[dict[str, Any]], vectors: Any, members: list[int]) -> list[tuple[dict[str, Any], float]]:
    """One group: the memory to keep (most accessed, oldest, smallest id), then the others with their cosine to it."""
    members = sorted(members, key=lambda i: (-records[i]["access_count"], records[i]["created_at"], records[i]["id"]))
    keep = members[0]
    return [(records[keep], 1.0)] + [
        (
            records[i],
            1.0 if records[i]["content_hash"] == records[keep]["content_hash"] else float(vectors[i] @ vectors[keep]),
        )
        for i in members[1:]
    ]


@click.command(
    "dedup",
    epilog="""\b
Examples:
  memory-retrievers dedup --dry-run -n alice
  memory-retrievers dedup --dry-run --all-namespaces --threshold 0.9 --json
  memory-retrievers dedup -n alice --delete --yes""",
)
@namespace_option
@click.option("--all-namespaces", is_flag=True, help="Every namespace (each on its own).")
@click.option(
    "--threshold", type=click.FloatRange(0.0, 1.0, min_open=True), help="Cosine similarity (default: the store's 0.95)."
)
@click.option("--all-kinds", is_flag=True, help="Include kinds exempt from dedup on write (chat messages).")
@click.option("--dry-run", is_flag=True, help="Only report (the default).")
@click.option("--delete", "delete_", is_flag=True, help="Delete every duplicate, keeping the first of each group.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before --delete.")
@common_options
@click.pass_obj
def dedup(inv: Invocation, /, **params: Any) -> None:
    """Report near-duplicate memories (offline: stored vectors, no model); --delete removes them."""
    if params["dry_run"] and params["delete_"]:
        raise click.UsageError("--dry-run and --delete exclude each other")
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    store = inv.stores.open(settings, create=False)
    if params["all_namespaces"]:
        namespaces = store.namespaces()
    elif settings.namespace:
        ensure_namespace(store, settings.namespace)
        namespaces = [settings.namespace]
    else:
        raise click.UsageError("pass -n NAME or --all-namespaces")
    threshold = params["threshold"] or store.config.near_duplicate_threshold or 0.95
    exempt = set() if params["all_kinds"] else {k.value for k in store.config.dedup_exempt_kinds}
    report: dict[str, list[list[tuple[dict[str, Any], float]]]] = {}
    for namespace in namespaces:
        report[namespace] = duplicate_groups(_current_records(store, namespace, exempt), threshold)
    doomed = {ns: [m["id"] for g in groups for m, _ in g[1:]] for ns, groups in report.items()}
    total = sum(len(v) for v in doomed.values())
    deleted = 0
    if params["delete_"] and total:
        if not params["yes"]:
            if not inv.stdin_tty:
                raise click.UsageError(f"refusing to delete {total} duplicates without --yes when not at a terminal")
            click.confirm(f"Delete {total} duplicate memories?", abort=True, err=True)
        for ns, ids in doomed.items():
            if ids:
                deleted += store.delete(ids, namespace=ns, missing_ok=True)
    if params["as_json"]:
        inv.json(
            {
                "threshold": threshold,
                "duplicates": total,
                "deleted": deleted,
                "groups": [
                    {
                        "namespace": ns,
                        "keep": {"id": g[0][0]["id"], "text": g[0][0]["text"]},
                        "duplicates": [{"id": m["id"], "text": m["text"], "similarity": round(s, 4)} for m, s in g[1:]],
                    }
                    for ns, groups in report.items()
                    for g in groups
                ],
            }
        )
        return
    _print_groups(inv, report)
    groups_count = sum(len(g) for g in report.values())
    verb = f"deleted {deleted}" if params["delete_"] else "nothing deleted (dry run; --delete removes them)"
    inv.out(f"{total} duplicate(s) in {groups_count} group(s) at cosine >= {threshold}: {verb}")


def _current_records(store: Any, namespace: str, exempt: set[str]) -> list[dict[str, Any]]:
    """A namespace's records (with vectors) that are not superseded and of a kind dedup applies to."""
    records: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = store.admin.export(namespace, limit=1000, offset=offset)
        records += [r for r in page if r["superseded_by"] is None and r["kind"] not in exempt]
        offset += len(page)
        if len(page) < 1000:
            return records


def _print_groups(inv: Invocation, /, report: dict[str, list[list[tuple[dict[str, Any], float]]]]) -> None:
    from rich.text import Text

    console = inv.console()
    for ns, groups in report.items():
        for g in groups:
            keep = g[0][0]
            console.print(Text(f"[{ns}] keep {keep['id']}  {keep['text']}"))
            for m, s in g[1:]:
                console.print(Text(f"    {s:.3f}  {m['id']}  {m['text']}"))


COMMANDS = [stats, optimize, purge, dedup]
