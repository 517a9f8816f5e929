"""``memory-retrievers ui``: the memory inspector, a local web app over the store (needs the ui extra)."""

from __future__ import annotations

from typing import Any

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.options import settings_for
from memory_retrievers.cli.runtime import Invocation

__all__ = ["COMMANDS"]


@click.command(
    "ui",
    epilog="""\b
Examples:
  memory-retrievers ui                                  # http://127.0.0.1:8765/
  memory-retrievers ui --read-only --open
  memory-retrievers ui --host 0.0.0.0 --token "$(openssl rand -hex 16)"

\b
Binds to 127.0.0.1 unless --host says otherwise; any other address needs --token (the URL printed
at start carries it once, then a cookie keeps it). Needs the ui extra:
python -m pip install "./memory-retrievers[ui]" (from the folder that holds your clone).""",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (not loopback: needs --token).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one).")
@click.option("--token", metavar="T", help="Access token every request must carry (needed off loopback).")
@click.option("--read-only", is_flag=True, help="Show everything, change nothing (no action is offered).")
@click.option("--open", "open_browser", is_flag=True, help="Open the inspector in the default browser.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME", help="Another Host name to accept.")
@click.option("--store", metavar="PATH", help="Store folder or LanceDB URI (as for every command).")
@click.option("--embedder", metavar="SPEC", help="minilm (default), hash[:DIM] or st:<model>; must match the store's.")
@click.option("--json", "as_json", is_flag=True, help="Print the URL as one JSON document on stdout once serving.")
@click.pass_obj
def ui(inv: Invocation, /, **params: Any) -> None:
    """Browse, ask and tend the store's memories in a web browser (until Ctrl-C)."""
    try:
        from memory_retrievers.ui import serve
        from memory_retrievers.ui.security import check_bind
    except ImportError as exc:
        raise exits.CliError(str(exc), exits.CONFIG) from None
    from memory_retrievers.cli.runtime import StoreProvider

    check_bind(params["host"], params["token"])  # before loading a model: a ConfigError, exit code 6
    settings = settings_for(inv, store=params["store"], embedder=params["embedder"])
    # Opened as every command opens it (a folder, a URI or shards://...), long-lived: it sees what
    # other processes (the command line, the agent) commit meanwhile.
    stores = StoreProvider(keep_open=True)
    store = stores.open(settings, create=False)

    def ready(url: str) -> None:
        if params["as_json"]:
            inv.json({"url": url, "store": settings.store, "read_only": params["read_only"]})
            inv.stdout.flush()  # a script waits for this line while the server runs
        inv.err(f"memory inspector on {settings.store}: {url}")
        if params["open_browser"]:
            import webbrowser

            webbrowser.open(url)

    try:
        serve(
            store,
            host=params["host"],
            port=params["port"],
            token=params["token"],
            read_only=params["read_only"],
            allowed_hosts=list(params["allowed_hosts"]),
            on_ready=ready,
        )
    finally:
        stores.close()


COMMANDS = [ui]
