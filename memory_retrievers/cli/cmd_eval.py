"""``eval locomo PATH``: the evidence-recall table of the recall benchmark, on your data or settings."""

from __future__ import annotations

import json
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from memory_retrievers.cli import exits, locomo
from memory_retrievers.cli.options import recall_config_from, recall_config_options
from memory_retrievers.cli.runtime import Invocation, make_embedder
from memory_retrievers.cli.settings import ENV_EMBEDDER

__all__ = ["COMMANDS"]


@click.group("eval")
def eval_() -> None:
    """Evaluate recall on a benchmark."""


@eval_.command(
    "locomo",
    epilog="""\b
Examples:
  memory-retrievers eval locomo ../shared/data/locomo/locomo_dev.json
  memory-retrievers eval locomo locomo10.json --conversations 1 --weight-context 0 --json

Each conversation is stored in its own namespace of a temporary store (every turn a message
memory, "Speaker: text"), each question recalled with the top 10 and no token budget, asked a day
after its conversation ends; the metrics are those of benchmarks/locomo_recall.py.""",
)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--conversations", type=click.IntRange(1), help="Only the first N conversations.")
@click.option("--questions", "max_questions", type=click.IntRange(1), help="Only the first N questions of each.")
@click.option("--embedder", metavar="SPEC", help="minilm (default), hash[:DIM] or st:<model>.")
@click.option("--keep-store", metavar="DIR", help="Build the store in DIR (kept) instead of a temporary folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of the table.")
@recall_config_options
@click.pass_obj
def eval_locomo(inv: Invocation, /, path: str, **params: Any) -> None:
    """Print evidence recall@5/@10 and hit@10 of recall over LoCoMo conversations at PATH."""
    from memory_retrievers.recall.retriever import MemoryRetriever
    from memory_retrievers.store.memory_store import MemoryStore

    config = recall_config_from(params).model_copy(update={"record_access": False, "k": 10, "token_budget": None})
    convs = locomo.conversations(_read_locomo(inv, path))[: params["conversations"]]
    turns: list[locomo.Turn] = []
    questions: list[locomo.Question] = []
    for i, conv in enumerate(convs):
        turns += [t for t in locomo.turns(conv, i) if isinstance(t, locomo.Turn)]
        questions += locomo.questions(conv, i)[: params["max_questions"]]
    if not turns or not questions:
        raise exits.CliError(f"{path} has no turns or no answerable questions with evidence", exits.INVALID_INPUT)
    embedder = make_embedder(params["embedder"] or inv.env.get(ENV_EMBEDDER) or "minilm")
    with tempfile.TemporaryDirectory() as tmp:
        folder = params["keep_store"] or str(Path(tmp) / "store")
        store = MemoryStore(folder, embedder=embedder)
        try:
            inv.err(f"storing {len(turns)} turns of {len(convs)} conversation(s)...")
            added = store.add_many(locomo.turn_records(turns, namespace=None), progress=inv.stderr_tty)
            dia_of = {m.id: t.dia_id for m, t in zip(added, turns, strict=True)}
            store.admin.optimize()
            ends: dict[str, Any] = {}
            for t in turns:
                ends[t.conversation] = max(ends.get(t.conversation, t.created_at), t.created_at)
            retrievers = {c: MemoryRetriever(store, namespace=c, config=config) for c in ends}

            def recall(q: locomo.Question) -> list[str]:
                result = retrievers[q.conversation].recall(q.question, now=ends[q.conversation] + timedelta(days=1))
                return [dia_of[m.id] for m in result.memories]

            inv.err(f"asking {len(questions)} questions...")
            rows = locomo.evaluate(questions, recall)
        finally:
            store.close()
    if params["as_json"]:
        inv.json({"path": path, "embedder": embedder.name, "k": 10, "rows": [r.to_dict() for r in rows]})
        return
    _print_table(inv, path, embedder.name, rows)


def _read_locomo(inv: Invocation, /, path: str) -> Any:
    """The parsed JSON of a LoCoMo file (relative to the invocation's folder); a typed exit otherwise."""
    file = Path(path) if Path(path).is_absolute() else inv.cwd / path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise exits.CliError(f"cannot read {path}: {exc.strerror or exc}", exits.INVALID_INPUT) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise exits.CliError(f"{path} is not JSON: {exc}", exits.INVALID_INPUT) from None
    if not locomo.is_locomo(data):
        raise exits.CliError(
            f"{path} is not LoCoMo JSON (a list of objects with a 'conversation')", exits.INVALID_INPUT
        )
    return data


def _print_table(inv: Invocation, /, path: str, embedder_name: str, rows: list[locomo.Row]) -> None:
    from rich.table import Table

    table = Table(title=f"evidence recall on {Path(path).name} ({embedder_name}, top 10, no LLM)", title_justify="left")
    for name in ("questions", "category", "recall@5", "recall@10", "hit@10", "p50 ms", "p95 ms"):
        table.add_column(name, justify="left" if name == "category" else "right")
    for r in rows:
        table.add_row(
            str(r.questions),
            r.label,
            f"{r.recall_at_5:.3f}",
            f"{r.recall_at_10:.3f}",
            f"{r.hit_at_10:.3f}",
            f"{r.p50_ms:.1f}",
            f"{r.p95_ms:.1f}",
        )
    inv.console().print(table)


COMMANDS = [eval_]
