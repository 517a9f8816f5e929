"""Long-running processes: ``mcp`` (a Model Context Protocol server) and ``worker status|stop``."""

from __future__ import annotations

import socket
from typing import Any

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.options import common_options, namespace_option, settings_for
from memory_retrievers.cli.runtime import Invocation

__all__ = ["COMMANDS"]


@click.command(
    "mcp",
    epilog="""\b
Examples:
  memory-retrievers mcp -n alice                    # tools use namespace 'alice' only
  memory-retrievers mcp --store ~/agent-memory      # tools take a namespace argument

\b
In an MCP client's configuration (e.g. Claude Desktop):
  {"mcpServers": {"memory": {"command": "memory-retrievers", "args": ["mcp", "-n", "alice"]}}}

Tools: remember, recall (the context block), search (ids and scores), forget (ids), list.
Stdout carries the protocol; --json does not apply. Needs the mcp extra.""",
)
@namespace_option
@click.option("--namespace-per-call", is_flag=True, help="Ignore a default namespace: every tool call names one.")
@click.option("--store", metavar="PATH", help="Store folder or LanceDB URI (as for every command).")
@click.option("--embedder", metavar="SPEC", help="minilm (default), hash[:DIM] or st:<model>.")
@click.pass_obj
def mcp(inv: Invocation, /, **params: Any) -> None:
    """Serve the store to an agent over the Model Context Protocol (stdio)."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        from memory_retrievers.errors import install_extra

        raise exits.CliError(f"the mcp command needs the mcp extra: {install_extra('mcp')}", exits.CONFIG) from None
    from memory_retrievers.cli.mcp_server import build_server
    from memory_retrievers.cli.runtime import StoreProvider

    settings = settings_for(inv, store=params["store"], embedder=params["embedder"], namespace=params["namespace"])
    namespace = None if params["namespace_per_call"] else settings.namespace
    # Opened as every command opens it (a sharded shards://... store too), long-lived: it sees what
    # other processes (the command line, an app) commit meanwhile.
    stores = StoreProvider(keep_open=True)
    store = stores.open(settings, create=True)
    try:
        build_server(store, namespace=namespace).run("stdio")
    finally:
        stores.close()


@click.group("worker")
def worker() -> None:
    """The persistent worker that keeps a store open and its model loaded between commands."""


def _ask(inv: Invocation, /, params: dict[str, Any], op: str) -> dict[str, Any] | None:
    from memory_retrievers.cli.workerproto import (
        PROTOCOL,
        WorkerUnavailableError,
        package_version,
        read_message,
        runtime_dir,
        socket_path,
        supported,
        write_message,
    )

    if not supported():
        raise exits.CliError("the worker needs Unix sockets; this platform runs every command one-shot", exits.CONFIG)
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    try:
        path = socket_path(runtime_dir(inv.env), settings.store, settings.embedder, package_version(), settings.cloud)
    except WorkerUnavailableError as exc:
        raise exits.CliError(str(exc), exits.CONFIG) from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    with sock, sock.makefile("rb") as reader:
        write_message(sock, {"v": PROTOCOL, "op": op})
        return read_message(reader)


@worker.command("status", epilog="Example:\n\n  memory-retrievers worker status --json")
@common_options
@click.pass_obj
def status(inv: Invocation, /, **params: Any) -> None:
    """Whether a worker serves the store, since when, and how many commands it ran."""
    reply = _ask(inv, params, "ping")
    if params["as_json"]:
        inv.json({"running": reply is not None, **(reply or {})})
    elif reply is None:
        inv.out("no worker is running for this store")
    else:
        inv.out(
            f"worker {reply['pid']} serves {reply['store']} ({reply['embedder']}): up {reply['uptime_s']} s, "
            f"{reply['served']} commands, exits after {reply['idle_exit_s']:.0f} s idle"
        )


@worker.command("stop", epilog="Example:\n\n  memory-retrievers worker stop")
@common_options
@click.pass_obj
def stop(inv: Invocation, /, **params: Any) -> None:
    """Stop the store's worker (it writes pending access statistics first)."""
    reply = _ask(inv, params, "stop")
    if params["as_json"]:
        inv.json({"stopped": reply is not None, "pid": (reply or {}).get("pid")})
    else:
        inv.out(f"stopped worker {reply['pid']}" if reply else "no worker is running for this store")


COMMANDS = [mcp, worker]
