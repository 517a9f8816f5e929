"""A Model Context Protocol server over stdio: an agent remembers, recalls, searches, forgets and lists.

One namespace per server (``memory-retrievers mcp -n alice``: the tools take no namespace, so an
agent cannot read anyone else's memories, and a call that names another namespace anyway is refused
with a tool error) or per call (no namespace configured: every tool takes a required ``namespace``
argument). Recall returns the context block exactly as
:meth:`RecallResult.to_context` builds it; a namespace without memories recalls nothing rather
than failing, as a new user's first conversation must.

Built on the ``mcp`` SDK's ``MCPServer`` (the ``mcp`` extra: ``python -m pip install "./memory-retrievers[mcp]"``
from a clone).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["INSTRUCTIONS", "build_server"]

INSTRUCTIONS = (
    "Long-term memory of the user. Before answering, call recall with the user's message and use the "
    "returned context; call remember for durable facts, preferences and events worth keeping; call "
    "forget with ids when the user asks to delete something."
)


P = ParamSpec("P")
R = TypeVar("R")


def _reported(body: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """The library's typed errors reach the agent with their message (each says how to fix it).

    The SDK hides the message of any other exception ("Error executing tool"), rightly for bugs.
    """

    @functools.wraps(body)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from mcp.server.mcpserver.exceptions import ToolError

        from memory_retrievers.errors import MemoryRetrieversError

        try:
            return await body(*args, **kwargs)
        except MemoryRetrieversError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return run


class Tools:
    """The tools' bodies, over one open store (async: the server's event loop is never blocked)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def _known(self, namespace: str) -> bool:
        return await self.store.acount(namespace, filter={"include_superseded": True}) > 0

    @_reported
    async def remember(
        self,
        namespace: str,
        text: str,
        kind: str,
        tags: list[str] | None,
        entities: list[str] | None,
        session_id: str | None,
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {"kind": kind}
        if tags:
            fields["tags"] = tags
        if entities:
            fields["entities"] = entities
        if session_id:
            fields["session_id"] = session_id
        added = await self.store.aadd(text, namespace=namespace, **fields)
        return {"id": added.id, "action": added.action.value, "duplicate_of": added.duplicate_of}

    @_reported
    async def recall(self, namespace: str, query: str, k: int | None, token_budget: int | None) -> str:
        from memory_retrievers.recall.retriever import MemoryRetriever

        if not await self._known(namespace):
            return ""
        retriever = MemoryRetriever(self.store, namespace=namespace)
        budget: int | str | None = token_budget if token_budget is not None else "config"
        result = await retriever.arecall(query, k=k, token_budget=budget)
        return result.to_context()

    @_reported
    async def search(self, namespace: str, query: str, k: int) -> list[dict[str, Any]]:
        from memory_retrievers.recall.retriever import MemoryRetriever

        if not await self._known(namespace):
            return []
        result = await MemoryRetriever(self.store, namespace=namespace).arecall(query, k=k, token_budget=None)
        return [
            {
                "id": m.id,
                "text": m.text,
                "kind": m.memory.kind.value,
                "score": round(m.score, 6),
                "relevance": round(m.relevance, 4),
                "created_at": m.memory.created_at.isoformat() if m.memory.created_at else None,
            }
            for m in result.memories
        ]

    @_reported
    async def forget(self, namespace: str, ids: list[str]) -> dict[str, Any]:
        deleted = await self.store.adelete(ids, namespace=namespace, missing_ok=True)
        return {"deleted": deleted}

    @_reported
    async def list(self, namespace: str, limit: int, offset: int) -> list[dict[str, Any]]:
        if not await self._known(namespace):
            return []
        memories = await self.store.alist(namespace, limit=limit, offset=offset)
        return [
            {
                "id": m.id,
                "text": m.text,
                "kind": m.kind.value,
                "created_at": m.created_at.isoformat() if m.created_at else None,
            }
            for m in memories
        ]


def build_server(store: MemoryStore, *, namespace: str | None) -> MCPServer:
    """An MCP server with the five memory tools over ``store``.

    Args:
        store: An open store (the server uses its async API).
        namespace: The one namespace every call uses (a call naming another is refused with a tool
            error), or ``None`` for a ``namespace`` argument per call.
    """
    from mcp.server.mcpserver import MCPServer

    from memory_retrievers import __version__

    tools = Tools(store)
    # WARNING, not the SDK's INFO: a tool error goes to the agent; the terminal hears only of trouble.
    settings: dict[str, Any] = {"instructions": INSTRUCTIONS, "version": __version__, "log_level": "WARNING"}
    if namespace is None:
        server = MCPServer("memory-retrievers", **settings)
        _add_per_call_tools(server, tools)
    else:
        server = _one_namespace_server(namespace, **settings)
        _add_one_namespace_tools(server, tools, namespace)
    return server


def _add_one_namespace_tools(server: MCPServer, tools: Tools, fixed: str) -> None:
    """The five tools without a namespace argument: every call is served from ``fixed``."""

    @server.tool(description="Store a memory (a fact, preference, event...) for later recall.")
    async def remember(
        text: str,
        kind: str = "fact",
        tags: list[str] | None = None,
        entities: list[str] | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        return await tools.remember(fixed, text, kind, tags, entities, session_id)

    @server.tool(description="The memories relevant to a query, as a context block to read before answering.")
    async def recall(query: str, k: int | None = None, token_budget: int | None = None) -> str:
        return await tools.recall(fixed, query, k, token_budget)

    @server.tool(description="The memories relevant to a query, with ids and scores.")
    async def search(query: str, k: int = 10) -> list[dict[str, Any]]:
        return await tools.search(fixed, query, k)

    @server.tool(description="Delete memories by id.")
    async def forget(ids: list[str]) -> dict[str, Any]:
        return await tools.forget(fixed, ids)

    @server.tool(name="list", description="Memories, newest first.")
    async def list_(limit: int = 20, offset: int = 0) -> list[dict[str, Any]]:
        return await tools.list(fixed, limit, offset)


def _add_per_call_tools(server: MCPServer, tools: Tools) -> None:
    """The five tools, each with a required ``namespace`` argument."""

    @server.tool(name="remember", description="Store a memory of a namespace (user) for later recall.")
    async def remember_in(
        namespace: str,
        text: str,
        kind: str = "fact",
        tags: list[str] | None = None,
        entities: list[str] | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        return await tools.remember(namespace, text, kind, tags, entities, session_id)

    @server.tool(name="recall", description="A namespace's memories relevant to a query, as a context block.")
    async def recall_in(namespace: str, query: str, k: int | None = None, token_budget: int | None = None) -> str:
        return await tools.recall(namespace, query, k, token_budget)

    @server.tool(name="search", description="A namespace's memories relevant to a query, with ids and scores.")
    async def search_in(namespace: str, query: str, k: int = 10) -> list[dict[str, Any]]:
        return await tools.search(namespace, query, k)

    @server.tool(name="forget", description="Delete memories of a namespace by id.")
    async def forget_in(namespace: str, ids: list[str]) -> dict[str, Any]:
        return await tools.forget(namespace, ids)

    @server.tool(name="list", description="A namespace's memories, newest first.")
    async def list_in(namespace: str, limit: int = 20, offset: int = 0) -> list[dict[str, Any]]:
        return await tools.list(namespace, limit, offset)


def _one_namespace_server(namespace: str, **settings: Any) -> MCPServer:
    """An ``MCPServer`` that refuses any tool call naming a namespace other than ``namespace``.

    The SDK validates a call's arguments with a model of the tool's parameters that ignores
    undeclared ones, so ``namespace="bob"`` sent to a tool that takes none would silently be served
    from ``namespace``. Checked once here, before any tool runs, so no tool can forget it (the
    SDK's ``tools/call`` handler calls :meth:`MCPServer.call_tool` and returns a raised
    ``ToolError`` to the client as an ``is_error`` result with its message); a call naming
    ``namespace`` itself (or ``null``) is served.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from memory_retrievers.errors import InvalidInputError

    class OneNamespaceServer(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            asked = arguments.get("namespace")
            if asked is not None and asked != namespace:
                exc = InvalidInputError(
                    f"namespace {asked!r} refused: this server serves only namespace {namespace!r}; "
                    f"leave the namespace argument out (another namespace needs its own server)"
                )
                # Worded like the SDK's own tool errors, and like _reported's for the library's.
                raise ToolError(f"Error executing tool {name}: {type(exc).__name__}: {exc}") from exc
            return await super().call_tool(name, arguments, context)

    return OneNamespaceServer("memory-retrievers", **settings)
