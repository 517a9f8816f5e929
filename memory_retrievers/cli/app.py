"""The ``memory-retrievers`` command tree, and running it with errors mapped to exit codes."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.runtime import Invocation, WrongStoreError, std_streams_to

__all__ = ["cli", "run"]

_EPILOG = """\b
Examples:
  memory-retrievers add "Alice prefers the dark theme" -n alice --kind preference
  memory-retrievers recall "which theme does she like?" -n alice
  memory-retrievers recall "theme" -n alice --explain --k 3 --budget 300
  memory-retrievers list -n alice --kind preference
  memory-retrievers export -n alice > alice.jsonl
  memory-retrievers import alice.jsonl
  memory-retrievers stats

\b
Store: --store > MEMORY_RETRIEVERS_STORE > config file > per-user default.
Namespace: -n > MEMORY_RETRIEVERS_NAMESPACE > config file.
Every command takes --json; exit codes are listed in docs/how-to/cli.md.
"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory-retrievers")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0.0.0"


@click.group(epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(_version(), "--version", prog_name="memory-retrievers", message="%(prog)s %(version)s")
def cli() -> None:
    """Long-term memory for LLM apps, from the terminal: store, recall, inspect, move and maintain memories."""


def _register() -> None:
    from memory_retrievers.cli import (
        cmd_bulk,
        cmd_eval,
        cmd_health,
        cmd_memories,
        cmd_recall,
        cmd_serve,
        cmd_transfer,
        cmd_ui,
    )

    for module in (cmd_memories, cmd_recall, cmd_transfer, cmd_health, cmd_eval, cmd_serve, cmd_bulk, cmd_ui):
        for command in module.COMMANDS:
            cli.add_command(command)
    from memory_retrievers.cli.cmd_cluster import cluster  # issue 29

    cli.add_command(cluster)


_register()


def run(argv: Sequence[str], inv: Invocation) -> int:
    """Run one command line against an invocation; returns the exit code (never raises, except WrongStoreError).

    Usage errors print Click's message (exit 2); the library's typed errors print their message
    (each says how to fix the problem) with the exit code of :mod:`.exits`; anything else is a bug
    and prints its type too (exit 1).
    """
    try:
        try:
            # Click writes --help, --version and prompts to sys.stdout/stderr: send them where the
            # invocation's output goes (the worker's client, a test's buffer).
            with std_streams_to(inv.stdout, inv.stderr):
                returned = cli.main(args=list(argv), prog_name="memory-retrievers", standalone_mode=False, obj=inv)
            # Without standalone mode, Click returns the code of a click.exceptions.Exit (e.g. import's 5).
            return returned if isinstance(returned, int) else exits.OK
        finally:
            inv.stores.finish()
    except WrongStoreError:
        raise
    except click.exceptions.Exit as exc:  # --help, --version
        return int(exc.exit_code)
    except click.Abort:  # Ctrl-C at a prompt, or a declined confirmation
        inv.err("aborted", style="bold red")
        return exits.INTERRUPTED
    except click.ClickException as exc:
        exc.show(file=inv.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        inv.err("interrupted", style="bold red")
        return exits.INTERRUPTED
    except BrokenPipeError:  # `... | head`: the reader left; nothing more to say
        return exits.OK
    except Exception as exc:
        code = exits.code_for(exc)
        detail = (
            str(exc) if code != exits.FAILURE or isinstance(exc, exits.CliError) else f"{type(exc).__name__}: {exc}"
        )
        inv.err(f"error: {detail}", style="bold red")
        return code


def main_local(argv: Sequence[str] | None = None) -> int:
    """Run a command line in this process, on the process's own streams and environment."""
    import os
    from pathlib import Path

    from memory_retrievers.cli.runtime import StoreProvider

    inv = Invocation(
        env=dict(os.environ),
        cwd=Path.cwd(),
        stdout=sys.stdout,
        stderr=sys.stderr,
        stdin=sys.stdin,
        stdout_tty=sys.stdout.isatty(),
        stderr_tty=sys.stderr.isatty(),
        stdin_tty=bool(sys.stdin and sys.stdin.isatty()),
        width=None,
        stores=StoreProvider(),
    )
    return run(sys.argv[1:] if argv is None else argv, inv)
