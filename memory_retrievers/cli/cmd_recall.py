"""``recall``: the context block exactly as an agent receives it, and why each memory is in it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from memory_retrievers.cli.common import ensure_namespace, memory_dict
from memory_retrievers.cli.options import (
    common_options,
    filter_from,
    filter_options,
    namespace_option,
    parse_when,
    recall_config_from,
    recall_config_options,
    require_namespace,
    settings_for,
)
from memory_retrievers.cli.runtime import Invocation

if TYPE_CHECKING:
    from rich.table import Table

    from memory_retrievers.recall.results import RecallResult

__all__ = ["COMMANDS", "explain_tables", "result_dict"]


def result_dict(result: RecallResult) -> dict[str, Any]:
    """A recall result as JSON: the context, every memory with its explanation, plan and cuts."""
    return {
        "query": result.query,
        "context": result.to_context(),
        "tokens_used": result.tokens_used,
        "token_budget": result.token_budget,
        "trimmed": result.trimmed,
        "trimmed_count": result.trimmed_count,
        "memories": [
            {
                "score": m.score,
                "relevance": m.relevance,
                "memory": memory_dict(m.memory),
                "explanation": m.explanation.to_dict(),
            }
            for m in result.memories
        ],
        "plan": dict(result.plan),
        "cut": [{"id": c.id, "reason": c.reason.value, "score": c.score, "text": c.text} for c in result.cut],
    }


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def explain_tables(result: RecallResult) -> list[Table]:
    """The score breakdown: one row per returned memory (channels, ranks, fusion, multipliers), then the cuts."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="why these memories", title_justify="left")
    columns: list[tuple[str, dict[str, Any]]] = [
        ("#", {"justify": "right"}),
        ("id", {"no_wrap": True, "style": "cyan"}),
        ("score", {"justify": "right"}),
        ("relevance", {"justify": "right"}),
        ("channels: rank (contribution)", {}),
        ("fused", {"justify": "right"}),
        ("bonus", {"justify": "right"}),
        ("multipliers", {}),
        ("mmr", {"justify": "right"}),
        ("tokens", {"justify": "right"}),
        ("phase", {}),
    ]
    for name, kwargs in columns:
        table.add_column(name, **kwargs)
    for i, m in enumerate(result.memories, 1):
        e = m.explanation
        channels = "\n".join(f"{c.label} #{c.rank} ({c.value:.4f})" for c in e.channels)
        multipliers = "\n".join(f"{k} {v:.3f}" for k, v in e.multipliers.items() if abs(v - 1.0) > 1e-9) or "-"
        table.add_row(
            str(i),
            Text(m.id[:12]),
            _num(m.score),
            _num(m.relevance, 3),
            Text(channels or "-"),
            _num(e.fused_score),
            _num(e.rank_bonus, 3),
            Text(multipliers),
            _num(e.mmr_penalty, 3) if e.mmr_penalty else "-",
            str(e.tokens),
            e.phase + (" superseded" if e.superseded else ""),
        )
    tables = [table]
    if result.cut:
        cut = Table(title="cut", title_justify="left")
        cut.add_column("id", no_wrap=True, style="cyan")
        cut.add_column("reason", no_wrap=True)
        cut.add_column("score", justify="right")
        cut.add_column("text", overflow="ellipsis", no_wrap=True, max_width=60)
        for c in result.cut:
            cut.add_row(Text(c.id[:12]), c.reason.value, _num(c.score), Text(c.text))
        tables.append(cut)
    plan = Table(title="plan", title_justify="left", show_header=False)
    plan.add_column(style="bold", no_wrap=True)
    plan.add_column(overflow="fold")
    for key, value in result.plan.items():
        plan.add_row(key, Text(str(value)))
    tables.append(plan)
    return tables


@click.command(
    "recall",
    epilog="""\b
Examples:
  memory-retrievers recall "which theme does she like?" -n alice
  memory-retrievers recall "theme" -n alice --k 3 --budget 200 --kind preference
  memory-retrievers recall "what happened in Berlin?" -n alice --explain
  memory-retrievers recall "tea" -n alice --weight-context 0 --mode hybrid --json

Every RecallConfig field is a flag (below the filters); see docs/explanation/recall.md for the stages.""",
)
@click.argument("query")
@namespace_option
@click.option("--explain", is_flag=True, help="Also print the score breakdown and the cut candidates.")
@click.option("--project", metavar="P", help="The caller's project: same-project memories rank higher.")
@click.option("--topic", metavar="T", help="The caller's topic: other topics rank lower.")
@click.option("--now", "now_", metavar="WHEN", help="Time of the recall for decay (ISO 8601; default now).")
@filter_options
@recall_config_options
@common_options
@click.pass_obj
def recall(inv: Invocation, /, query: str, **params: Any) -> None:
    """Print the context an agent would be handed for QUERY (``RecallResult.to_context()``, verbatim)."""
    from memory_retrievers.recall.retriever import MemoryRetriever

    config = recall_config_from(params)
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    namespace = require_namespace(settings)
    store = inv.stores.open(settings, create=False)
    ensure_namespace(store, namespace)
    retriever = MemoryRetriever(store, namespace=namespace, config=config)
    result = retriever.recall(
        query,
        explain=params["explain"],
        project=params["project"],
        topic=params["topic"],
        now=parse_when(params["now_"], "--now"),
        **filter_from(params),
    )
    if params["as_json"]:
        inv.json(result_dict(result))
        return
    context = result.to_context()
    if context:
        inv.out(context)
    else:
        inv.err(f"no memories of {namespace!r} matched")
    if params["explain"]:
        console = inv.console()
        for table in explain_tables(result):
            console.print()
            console.print(table)


COMMANDS = [recall]
