"""``cluster``: rewrite the table so each namespace's rows are contiguous (a cold tenant on object storage is cheap)."""

from __future__ import annotations

from typing import Any

import click

from memory_retrievers.cli.options import common_options, settings_for
from memory_retrievers.cli.runtime import Invocation

__all__ = ["COMMANDS"]


@click.command(
    "cluster",
    epilog="""\b
Examples:
  memory-retrievers cluster
  memory-retrievers cluster --optimize --json

\b
Incremental: each run rewrites the rows written since the last one, in namespace order, as one
new run (every row once runs pile up). Writers may keep writing meanwhile: a row they change
is left as they left it (counted as skipped) and taken by the next run.""",
)
@click.option("--optimize", "then_optimize", is_flag=True, help="Fold the moved rows back into the indexes at once.")
@common_options
@click.pass_obj
def cluster(inv: Invocation, /, **params: Any) -> None:
    """Lay each namespace's memories out together (fewer object-store requests for a cold recall)."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    store = inv.stores.open(settings, create=False)
    result = store.admin.cluster()
    if params["then_optimize"]:
        store.admin.optimize()
    if params["as_json"]:
        inv.json({**result.to_dict(), "optimized": params["then_optimize"]})
        return
    merged = " (runs merged into one)" if result.merged else ""
    inv.out(
        f"clustered: moved {result.moved} memories, skipped {result.skipped} changed meanwhile, "
        f"runs {result.runs_before} -> {result.runs_after}{merged}, {result.elapsed_s:.1f} s"
        + ("; indexes updated" if params["then_optimize"] else "; run optimize to fold them into the indexes")
    )


COMMANDS = [cluster]
