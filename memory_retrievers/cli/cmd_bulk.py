"""``bulk``: the Ray jobs of :mod:`memory_retrievers.bulk` from the terminal (import, reembed, backfill, cluster).

Each subcommand runs in this process (never in the persistent worker) and starts a local Ray
instance, or joins a cluster with ``--ray-address``. Ray is the optional extra
``memory-retrievers[ray]``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.formats import FORMATS, Item, parse
from memory_retrievers.cli.import_checks import check_records
from memory_retrievers.cli.options import common_options, namespace_option, settings_for
from memory_retrievers.cli.runtime import Invocation, make_embedder

__all__ = ["COMMANDS"]

F = Callable[..., Any]


def _ray_options(func: F) -> F:
    func = click.option(
        "--workers", type=click.IntRange(1), default=None, help="Ray workers at once (default: every Ray CPU)."
    )(func)
    return click.option(
        "--ray-address", metavar="ADDR", help="Join this Ray cluster (default: start a local instance)."
    )(func)


def _join(address: str | None) -> None:
    """Connect to the cluster at ``address`` before a job (a job otherwise starts a local instance)."""
    if address is None:
        return
    try:
        import ray
    except ImportError:
        from memory_retrievers.errors import install_extra

        raise exits.CliError(f"the bulk commands need Ray: {install_extra('ray')}", exits.CONFIG) from None
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)


def _records(inv: Invocation, /, files: tuple[str, ...], params: dict[str, Any], namespace: str | None) -> list[Any]:
    """Every file's records (the ``import`` command's formats); any rejected record stops the job."""
    from memory_retrievers.config import StoreConfig

    start = datetime.now(timezone.utc)
    records: list[Any] = []
    rejected: list[tuple[str, str]] = []
    for path in files:
        file = Path(path) if Path(path).is_absolute() else inv.cwd / path
        try:
            text = inv.stdin.read() if path == "-" else file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise exits.CliError(f"cannot read {path}: {exc}", exits.INVALID_INPUT) from None
        session = params["session"] or (Path(path).stem if path != "-" else "stdin")
        parsed = parse(text, params["fmt"], namespace=namespace, session=session, start=start)
        if parsed.format == "export":
            raise exits.CliError(
                f"{path} is an export: restore it with `memory-retrievers import` (exact, nothing to embed), or "
                "re-embed a whole store with `memory-retrievers bulk reembed`",
                exits.INVALID_INPUT,
            )
        items = [Item(f"{path}: {i.where}", i.record, i.error) for i in parsed.items]
        good = check_records(items, parsed.format, StoreConfig(), namespace, params["namespace"], rejected)
        records += [record for _, record in good]
    if rejected:
        where, error = rejected[0]
        raise exits.CliError(
            f"{len(rejected)} record(s) rejected, nothing imported; first: {where}: {error}", exits.INVALID_INPUT
        )
    return records


@click.group("bulk")
def bulk() -> None:
    """Bulk jobs on Ray: import chat history, re-embed a store, backfill memory formation, cluster by namespace."""


@bulk.command(
    "import",
    epilog="""\b
Examples:
  memory-retrievers bulk import history.jsonl -n alice
  memory-retrievers bulk import locomo10.json --format locomo --workers 8
  memory-retrievers bulk import chats/*.json --ray-address ray://head:10001

Stores what `import` stores (the same memories and vectors); the embedding runs on Ray workers.""",
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@namespace_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True, help="Input format.")
@click.option("--session", metavar="ID", help="Session id of a chat transcript (default: the file name).")
@click.option(
    "--batch-size", type=click.IntRange(1, 100_000), default=256, show_default=True, help="Records per commit."
)
@click.option("--no-dedup", is_flag=True, help="Write duplicates too.")
@_ray_options
@common_options
@click.pass_obj
def bulk_import(inv: Invocation, /, files: tuple[str, ...], **params: Any) -> None:
    """Import chat history or memory files with the embeddings computed on Ray."""
    from memory_retrievers.bulk import import_records

    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    records = _records(inv, files, params, settings.namespace)
    if not records:
        raise exits.CliError("nothing to import: the files hold no records", exits.INVALID_INPUT)
    _join(params["ray_address"])
    store = inv.stores.open(settings, create=True)
    report = import_records(
        store,
        records,
        namespace=settings.namespace,
        batch_size=params["batch_size"],
        dedup=False if params["no_dedup"] else None,
        workers=params["workers"],
    )
    _summary(inv, params, {"files": list(files), **report.to_dict()}, f"imported {len(records)} records")


@bulk.command(
    "reembed",
    epilog="""\b
Examples:
  memory-retrievers bulk reembed --to ./store-v2 --to-embedder st:BAAI/bge-small-en-v1.5
  memory-retrievers bulk reembed --to ./store-v2 --to-embedder hash:32 -n alice -n bob

Every memory is copied (ids, timestamps, access statistics, supersession kept) with a new vector.""",
)
@click.option("--to", "target", required=True, metavar="PATH", help="The new store (folder or LanceDB URI).")
@click.option("--to-embedder", required=True, metavar="SPEC", help="The new model: minilm, hash[:DIM] or st:<model>.")
@click.option("--to-table", default="memories", show_default=True, help="Table in the new store.")
@click.option("-n", "--namespace", "namespaces", multiple=True, metavar="NAME", help="Only these namespaces.")
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=1000, show_default=True, help="Rows per commit.")
@_ray_options
@common_options
@click.pass_obj
def bulk_reembed(inv: Invocation, /, **params: Any) -> None:
    """Copy the store into a new one, embedded with another model on Ray."""
    from memory_retrievers.bulk import reembed
    from memory_retrievers.store.memory_store import MemoryStore

    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    source = inv.stores.open(settings, create=False)
    target_path = Path(params["target"])
    target_uri = params["target"] if "://" in params["target"] else str(inv.cwd / target_path)
    _join(params["ray_address"])
    with MemoryStore(target_uri, table_name=params["to_table"], embedder=make_embedder(params["to_embedder"])) as new:
        report = reembed(
            source,
            new,
            namespaces=list(params["namespaces"]) or None,
            batch_size=params["batch_size"],
            workers=params["workers"],
        )
    _summary(inv, params, {"to": target_uri, **report.to_dict()}, f"re-embedded {report.records} memories")


def _llm_factory(spec: str) -> Callable[[], Any]:
    """``module:function`` (a function with no arguments that returns the LLM), imported now to fail early."""
    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name) if name else None
    except (ImportError, AttributeError) as exc:
        raise exits.CliError(f"--llm {spec!r}: {exc}", exits.CONFIG) from None
    if not callable(factory):
        raise exits.CliError(
            f"--llm {spec!r}: expected module:function, a function with no arguments returning the LLM", exits.CONFIG
        )
    return factory  # type: ignore[no-any-return]


@bulk.command(
    "backfill",
    epilog="""\b
Examples:
  memory-retrievers bulk backfill --llm myapp.llms:make_llm
  memory-retrievers bulk backfill --llm myapp.llms:make_llm -n alice --summarize

Runs memory formation over the stored conversations, one Ray task per namespace.""",
)
@click.option("--llm", "llm", required=True, metavar="MODULE:FUNCTION", help="Builds the LLM in each Ray task.")
@click.option("-n", "--namespace", "namespaces", multiple=True, metavar="NAME", help="Only these namespaces.")
@click.option("--summarize", is_flag=True, help="Also store a summary of each session.")
@_ray_options
@common_options
@click.pass_obj
def bulk_backfill(inv: Invocation, /, **params: Any) -> None:
    """Form facts and summaries from the conversations already stored, namespaces in parallel on Ray."""
    from memory_retrievers.bulk import backfill_formation

    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    factory = _llm_factory(params["llm"])
    store = inv.stores.open(settings, create=False)
    _join(params["ray_address"])
    report = backfill_formation(
        store,
        factory,
        namespaces=list(params["namespaces"]) or None,
        formation_config={"summarize": True} if params["summarize"] else None,
        workers=params["workers"],
    )
    facts = sum(n.facts for n in report.namespaces)
    _summary(inv, params, report.to_dict(), f"formed {facts} facts in {len(report.namespaces)} namespace(s)")


@bulk.command(
    "cluster",
    epilog="""\b
Examples:
  memory-retrievers bulk cluster
  memory-retrievers bulk cluster --optimize --workers 8 --json

Lays out each table by namespace (one clustering pass per shard, in parallel on Ray).""",
)
@click.option("--optimize", is_flag=True, help="Also optimize each table after its pass.")
@_ray_options
@common_options
@click.pass_obj
def bulk_cluster(inv: Invocation, /, **params: Any) -> None:
    """Cluster every table of the store (each shard of a sharded one) by namespace, tables in parallel on Ray."""
    from memory_retrievers.bulk import cluster_tables

    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    store = inv.stores.open(settings, create=False)
    _join(params["ray_address"])
    report = cluster_tables(store, optimize=params["optimize"], workers=params["workers"])
    if params["as_json"]:
        inv.json(report.to_dict())
    else:
        for done in report.tables:
            where = f"shard {done.shard} ({done.uri})"
            if done.result is not None:
                r = done.result
                inv.out(f"{where}: moved {r.moved} rows, {r.runs_before} -> {r.runs_after} runs")
            if done.error is not None:
                inv.err(f"{where}: {type(done.error).__name__}: {done.error}")
        inv.out(
            f"clustered {len(report.tables) - len(report.failed)} of {len(report.tables)} table(s) "
            f"in {report.seconds:.1f} s"
        )
    if report.failed:
        raise exits.CliError(f"{len(report.failed)} table(s) failed; the others were clustered", exits.STORAGE)


def _summary(inv: Invocation, params: dict[str, Any], summary: dict[str, Any], line: str) -> None:
    if params["as_json"]:
        inv.json(summary)
    else:
        inv.out(f"{line} in {summary['seconds']:.1f} s")


COMMANDS = [bulk]
