"""``import`` and ``export``: moving memories in and out of a store, in batches that commit whole."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.common import ensure_namespace
from memory_retrievers.cli.formats import EXPORT_FORMAT, FORMATS, Item, parse
from memory_retrievers.cli.import_checks import check_records, check_widths
from memory_retrievers.cli.options import common_options, namespace_option, require_namespace, settings_for
from memory_retrievers.cli.runtime import Invocation

__all__ = ["COMMANDS"]

_SHOWN_REJECTS = 20


@dataclass
class Tally:
    """What an import did so far."""

    added: int = 0
    replaced: int = 0
    """Records whose id was already stored in their namespace: the stored memory was replaced."""
    deduplicated: int = 0
    """Records skipped as (or merged into) a duplicate of a stored memory."""
    rejected: list[tuple[str, str]] = field(default_factory=list)
    committed: int = 0
    batches: int = 0
    interrupted: bool = False

    def to_dict(self, files: list[str], fmt: str) -> dict[str, Any]:
        return {
            "files": files,
            "format": fmt,
            "added": self.added,
            "replaced": self.replaced,
            "deduplicated": self.deduplicated,
            "rejected": len(self.rejected),
            "rejects": [{"where": w, "error": e} for w, e in self.rejected],
            "committed_records": self.committed,
            "batches": self.batches,
            "interrupted": self.interrupted,
        }


class _Stop:
    """Ctrl-C during an import: the first finishes the batch being written, then stops; a second one aborts.

    A batch is one LanceDB commit, so even an abort leaves it written whole or not at all; waiting
    for it makes the summary exact (every record it reports as committed is in the store).
    """

    def __init__(self, inv: Invocation) -> None:
        self.inv = inv
        self.requested = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.inv.err("interrupt: finishing the batch being written (Ctrl-C again to abort it)", style="yellow")

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        try:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread (e.g. embedded in another program): default Ctrl-C
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, self._previous)


def _read(path: str, inv: Invocation) -> str:
    if path == "-":
        return inv.stdin.read()
    file = Path(path)
    file = file if file.is_absolute() else inv.cwd / file
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise exits.CliError(
            f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})", exits.INVALID_INPUT
        ) from None
    except OSError as exc:
        raise exits.CliError(f"cannot read {path}: {exc.strerror or exc}", exits.INVALID_INPUT) from None


def _check_header(
    header: dict[str, Any] | None, store: Any, reembed: bool, records: list[tuple[str, Any]]
) -> list[tuple[str, Any]]:
    """Export vectors are only usable by the same embedding model; otherwise re-embed or refuse."""
    if header is None:
        return records
    same = header.get("embedder") == store.embedder.name and header.get("dimension") == store.embedder.dimension
    if same or not header.get("vectors", True):
        return records
    if not reembed:
        raise exits.CliError(
            f"the export's vectors come from {header.get('embedder')!r} (dimension {header.get('dimension')}), this "
            f"store uses {store.embedder.name!r} (dimension {store.embedder.dimension}); pass --reembed to embed "
            "the texts again with the store's model",
            exits.MISMATCH,
        )
    return [(w, {k: v for k, v in r.items() if k != "vector"}) for w, r in records]


def _summary(inv: Invocation, /, tally: Tally, files: list[str], fmt: str, as_json: bool, dry_run: bool) -> None:
    if as_json:
        inv.json({**tally.to_dict(files, fmt), "dry_run": dry_run})
    else:
        verb = "would import" if dry_run else "imported"
        inv.out(
            f"{verb} {', '.join(files)} ({fmt}): {tally.added} added, "
            f"{tally.replaced} replaced (id already stored), "
            f"{tally.deduplicated} deduplicated, {len(tally.rejected)} rejected"
        )
    groups = _grouped(tally.rejected)
    for wheres, error in groups[:_SHOWN_REJECTS]:
        inv.err(f"  rejected {_places(wheres)}: {error}")
    if len(groups) > _SHOWN_REJECTS:
        hidden = sum(len(wheres) for wheres, _ in groups[_SHOWN_REJECTS:])
        inv.err(f"  ... and {hidden} more (all of them with --json)")
    if tally.interrupted:
        inv.err(
            f"interrupted: {tally.committed} records committed in {tally.batches} whole batches, nothing after them; "
            f"resume with --skip {tally.committed}",
            style="bold yellow",
        )


def _grouped(rejected: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """Rejections with the same reason as one entry (in order of first appearance): 20 alike are one line."""
    groups: dict[str, list[str]] = {}
    for where, error in rejected:
        groups.setdefault(error, []).append(where)
    return [(wheres, error) for error, wheres in groups.items()]


def _places(wheres: list[str]) -> str:
    """``line 4``, or ``20 records (line 2, line 3, ..., line 21)``."""
    if len(wheres) == 1:
        return wheres[0]
    shown = wheres if len(wheres) <= 3 else [wheres[0], wheres[1], "...", wheres[-1]]
    return f"{len(wheres)} records ({', '.join(shown)})"


@click.command(
    "import",
    epilog="""\b
Examples:
  memory-retrievers import alice.jsonl                      # an export: restored exactly
  memory-retrievers import notes.jsonl -n alice             # {"text": ..., "kind": ...} per line
  memory-retrievers import chat.json -n alice --session support-42   # OpenAI-style messages
  memory-retrievers import locomo10.json --format locomo    # one namespace per conversation
  memory-retrievers import alice.jsonl --into-namespace alice-copy   # copy a namespace's export
  cat notes.jsonl | memory-retrievers import - -n alice --dry-run

Malformed records are reported with their line numbers and the rest imported (exit code 5).
Ctrl-C finishes the batch being written and stops; a batch is never half written.""",
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@namespace_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True, help="Input format.")
@click.option("--session", metavar="ID", help="Session id of a chat transcript (default: the file name).")
@click.option(
    "--batch-size", type=click.IntRange(1, 100_000), default=256, show_default=True, help="Records per commit."
)
@click.option(
    "--skip", type=click.IntRange(0), default=0, help="Skip the first N valid records (resume an interrupted import)."
)
@click.option("--no-dedup", is_flag=True, help="Write duplicates too (memory formats).")
@click.option("--reembed", is_flag=True, help="Embed an export's texts again when it came from another model.")
@click.option("--dry-run", is_flag=True, help="Check every record and report; write nothing.")
@click.option(
    "--into-namespace",
    metavar="NAME",
    help="Write every record into NAME, whatever namespace it names (copy a namespace's export).",
)
@common_options
@click.pass_obj
def import_(inv: Invocation, /, files: tuple[str, ...], **params: Any) -> None:
    """Import memory files (- for stdin): JSONL memories, exports, chat transcripts, LoCoMo."""
    into = params["into_namespace"]
    if into is not None:
        if params["namespace"] is not None and params["namespace"] != into:
            raise exits.CliError(
                f"-n {params['namespace']!r} and --into-namespace {into!r} disagree: --into-namespace alone "
                "says where every record goes",
                exits.INVALID_INPUT,
            )
        params["namespace"] = into
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    tally = Tally()
    pending, fmt = _parse_files(inv, files, params, settings.namespace, tally)
    pending = pending[params["skip"] :]
    if not pending:
        _summary(inv, tally, list(files), fmt, params["as_json"], params["dry_run"])
        if tally.rejected:
            raise exits.CliError("nothing to import: every record was rejected", exits.INVALID_INPUT)
        return
    if params["dry_run"]:
        tally.added = len(pending)
        _summary(inv, tally, list(files), fmt, params["as_json"], True)
        raise click.exceptions.Exit(exits.PARTIAL if tally.rejected else exits.OK)
    store = inv.stores.open(settings, create=True)
    exports = [(w, r) for w, r, k, _ in pending if k == "export"]
    header = next((h for _, _, k, h in pending if k == "export" and h is not None), None)
    dimension = store.embedder.dimension
    exports = check_widths(_check_header(header, store, params["reembed"], exports), dimension, tally.rejected)
    writes = check_widths([(w, r) for w, r, k, _ in pending if k == "write"], dimension, tally.rejected)
    if not exports and not writes:
        _summary(inv, tally, list(files), fmt, params["as_json"], False)
        raise exits.CliError("nothing to import: every record was rejected", exits.INVALID_INPUT)
    _write_batches(inv, store, settings.namespace, params, exports, writes, tally)
    _summary(inv, tally, list(files), fmt, params["as_json"], False)
    if tally.interrupted:
        raise click.exceptions.Exit(exits.INTERRUPTED)
    if tally.rejected:
        raise click.exceptions.Exit(exits.PARTIAL)


_Pending = tuple[str, Any, str, dict[str, Any] | None]  # (where, record, kind, header)


def _parse_files(
    inv: Invocation, /, files: tuple[str, ...], params: dict[str, Any], namespace: str | None, tally: Tally
) -> tuple[list[_Pending], str]:
    """Every file's valid records, in order, with the formats found (invalid ones go to ``tally.rejected``)."""
    from memory_retrievers.config import StoreConfig

    start = datetime.now(timezone.utc)
    pending: list[_Pending] = []
    formats = set()
    store_config = StoreConfig()
    for path in files:
        text = _read(path, inv)
        session = params["session"] or (Path(path).stem if path != "-" else "stdin")
        parsed = parse(text, params["fmt"], namespace=namespace, session=session, start=start)
        formats.add(parsed.format)
        prefix = f"{path}: " if len(files) > 1 else ""
        kind = "export" if parsed.format == "export" else "write"
        items = [Item(prefix + i.where, _moved(i.record, params["into_namespace"]), i.error) for i in parsed.items]
        forced = params["namespace"]  # -n itself, not a default from the environment or config file
        good = check_records(items, parsed.format, store_config, namespace, forced, tally.rejected)
        pending += [(where, record, kind, parsed.header) for where, record in good]
    return pending, ",".join(sorted(formats))


def _moved(record: dict[str, Any] | None, into: str | None) -> dict[str, Any] | None:
    """``record`` with its namespace replaced by ``into`` (``--into-namespace``), or as it is."""
    if record is None or into is None:
        return record
    return {**record, "namespace": into}


def _write_batches(
    inv: Invocation,
    /,
    store: Any,
    namespace: str | None,
    params: dict[str, Any],
    exports: list[tuple[str, Any]],
    writes: list[tuple[str, Any]],
    tally: Tally,
) -> None:
    """Commit the records batch by batch (exports restored first); Ctrl-C stops after the batch being written."""
    stop = _Stop(inv)
    size = params["batch_size"]
    total = len(exports) + len(writes)
    progress = _Progress(inv, total, quiet=params["as_json"])
    try:
        with stop.installed(), progress:
            for batch_kind, records in (("export", exports), ("write", writes)):
                for begin in range(0, len(records), size):
                    if stop.requested:
                        break
                    batch = [r for _, r in records[begin : begin + size]]
                    if batch_kind == "export":
                        restored = store.admin.restore(batch, namespace=namespace)
                        tally.added += restored.added
                        tally.replaced += restored.replaced
                    else:
                        for result in store.add_many(
                            batch, namespace=namespace, dedup=False if params["no_dedup"] else None
                        ):
                            _count(tally, result)
                    tally.committed += len(batch)
                    tally.batches += 1
                    progress.advance(len(batch), tally)
    except KeyboardInterrupt:
        stop.requested = True  # aborted mid-batch: that batch is committed whole or not at all
    tally.interrupted = stop.requested and tally.committed < total


def _count(tally: Tally, result: Any) -> None:
    """Tally one ``add_many`` result: an update without a duplicate is an id that was already stored."""
    action = result.action.value
    if action == "added":
        tally.added += 1
    elif action == "updated" and result.duplicate_of is None:
        tally.replaced += 1
    else:  # skipped as a duplicate, or merged into one (its annotations added)
        tally.deduplicated += 1


class _Progress:
    """A progress bar on a terminal; one line per committed batch otherwise (logs, tests)."""

    def __init__(self, inv: Invocation, total: int, *, quiet: bool) -> None:
        self.inv = inv
        self.total = total
        self.quiet = quiet
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.inv.stderr_tty and not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("importing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=self.inv.console(err=True),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("import", total=self.total)
        return self

    def advance(self, n: int, tally: Tally) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)
        elif not self.quiet:
            self.inv.err(f"committed batch {tally.batches}: {tally.committed}/{self.total} records")
            self.inv.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


@click.command(
    "export",
    epilog="""\b
Examples:
  memory-retrievers export -n alice > alice.jsonl
  memory-retrievers export --all-namespaces -o backup.jsonl
  memory-retrievers export -n alice --no-vectors | memory-retrievers import - --store ./other

The first line is a header (format, embedder); every other line is one memory with every stored
field: importing the file restores them exactly (ids, timestamps, access stats, supersession, vectors).""",
)
@namespace_option
@click.option("--all-namespaces", is_flag=True, help="Export every namespace.")
@click.option("-o", "--output", metavar="FILE", help="Write to FILE (atomically) instead of stdout.")
@click.option("--no-vectors", is_flag=True, help="Leave vectors out (smaller; an import re-embeds).")
@common_options
@click.pass_obj
def export(inv: Invocation, /, **params: Any) -> None:
    """Write memories as JSONL that the import command restores exactly."""
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    store = inv.stores.open(settings, create=False)
    if params["all_namespaces"]:
        namespaces = store.namespaces()
    else:
        namespace = require_namespace(settings)
        ensure_namespace(store, namespace)
        namespaces = [namespace]
    header = {
        "format": EXPORT_FORMAT,
        "version": 1,
        "embedder": store.embedder.name,
        "dimension": store.embedder.dimension,
        "vectors": not params["no_vectors"],
        "namespaces": namespaces,
        "exported_at": datetime.now(timezone.utc).isoformat(),
    }
    count = 0
    with _target(inv, params["output"]) as out:
        out.write(json.dumps(header, ensure_ascii=False) + "\n")
        for namespace in namespaces:
            offset = 0
            while True:
                page = store.admin.export(
                    namespace, limit=1000, offset=offset, include_vectors=not params["no_vectors"]
                )
                for record in page:
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += len(page)
                offset += len(page)
                if len(page) < 1000:
                    break
    where = params["output"] or "stdout"
    summary = {"exported": count, "namespaces": namespaces, "output": where}
    if params["as_json"]:
        inv.json(summary, err=params["output"] is None)
    elif params["output"] or inv.stderr_tty:
        note = f"exported {count} memories of {len(namespaces)} namespace(s) to {where}"
        (inv.out if params["output"] else inv.err)(note)


@contextlib.contextmanager
def _target(inv: Invocation, /, output: str | None) -> Iterator[Any]:
    if output is None:
        yield inv.stdout
        return
    path = Path(output) if Path(output).is_absolute() else inv.cwd / output
    # Written beside the target and renamed over it: an interrupted export never leaves a truncated file.
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise exits.CliError(f"cannot write {output}: {exc.strerror or exc}", exits.INVALID_INPUT) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


COMMANDS = [import_, export]
