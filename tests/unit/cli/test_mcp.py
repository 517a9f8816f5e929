"""``memory-retrievers mcp`` answering the mcp SDK's own client over stdio, against a real store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'memory-retrievers[mcp]')")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memory_retrievers import HashEmbedder, MemoryStore


def _text(result: Any) -> str:
    assert not result.is_error, result.content
    return "".join(part.text for part in result.content if getattr(part, "type", "") == "text")


def _json(result: Any) -> Any:
    if result.structured_content is not None:
        value = result.structured_content
        return value.get("result", value) if isinstance(value, dict) and set(value) == {"result"} else value
    return json.loads(_text(result))


async def _session(env: dict[str, str], *args: str, errlog: Any = None) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "memory_retrievers", "mcp", *args], env=env)
    return stdio_client(params, errlog=errlog or sys.stderr)


async def test_one_namespace_per_server(env: dict[str, str], tmp_path: Path) -> None:
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        store.add("Bob's secret is 42", namespace="bob")
    errlog = (tmp_path / "stderr.txt").open("w+")
    async with (
        await _session(env, "-n", "alice", errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"remember", "recall", "search", "forget", "list"}
        assert "namespace" not in tools["recall"].input_schema["properties"]  # fixed: no way to read bob
        added = _json(
            await session.call_tool("remember", {"text": "Alice prefers the dark theme", "kind": "preference"})
        )
        assert added["action"] == "added"
        await session.call_tool("remember", {"text": "Alice's dog is called Rex", "entities": ["Rex"]})
        context = _text(await session.call_tool("recall", {"query": "the theme Alice prefers", "k": 1}))
        assert context.startswith("Relevant memories (most relevant first):") and "dark theme" in context
        assert "secret" not in _text(await session.call_tool("recall", {"query": "secret 42"}))
        found = _json(await session.call_tool("search", {"query": "dog Rex", "k": 5}))
        assert found[0]["text"] == "Alice's dog is called Rex" and found[0]["score"] > 0
        listed = _json(await session.call_tool("list", {"limit": 10}))
        assert {m["text"] for m in listed} == {"Alice prefers the dark theme", "Alice's dog is called Rex"}
        assert _json(await session.call_tool("forget", {"ids": [added["id"]]}))["deleted"] == 1
        assert len(_json(await session.call_tool("list", {}))) == 1
        bad = await session.call_tool("remember", {"text": "   "})
        assert bad.is_error and "empty" in _text_any(bad)
        long_turn = "The build ran its checks. " * 800 + "The nightly export runs on worker-3. " + "Done. " * 9_400
        stored = await session.call_tool("remember", {"text": long_turn, "kind": "message"})  # 77k: kept whole
        assert not stored.is_error, _text_any(stored)
    # Issue 40 item 11: a tool error went to the agent and, as a Rich INFO line, to the terminal.
    errlog.seek(0)
    assert errlog.read() == ""
    errlog.close()
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        texts = {m.text for m in store.list("alice")}  # the real store changed
        assert texts == {"Alice's dog is called Rex", long_turn}


def _text_any(result: Any) -> str:
    return "".join(part.text for part in result.content if getattr(part, "type", "") == "text")


@pytest.mark.long  # a server process (test_one_namespace_per_server is the fast tier's one)
async def test_namespace_per_call(env: dict[str, str], tmp_path: Path) -> None:
    async with await _session(env) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "namespace" in tools["recall"].input_schema["required"]
        await session.call_tool("remember", {"namespace": "u1", "text": "u1 likes jazz"})
        assert "jazz" in _text(await session.call_tool("recall", {"namespace": "u1", "query": "music jazz"}))
        assert _text(await session.call_tool("recall", {"namespace": "u2", "query": "music jazz"})) == ""
        missing = await session.call_tool("recall", {"query": "jazz"})
        assert missing.is_error


#: Every tool of a one-namespace server, with arguments it accepts.
FIXED_CALLS = [
    ("remember", {"text": "Bob's new secret is 43"}),
    ("recall", {"query": "secret"}),
    ("search", {"query": "secret", "k": 5}),
    ("forget", {"ids": ["BOB_ID"]}),
    ("list", {"limit": 10}),
]


@pytest.mark.long  # a server process
async def test_one_namespace_server_refuses_another_namespace_on_every_tool(env: dict[str, str]) -> None:
    # The SDK drops arguments a tool does not declare: namespace="bob" used to be served alice's memories.
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        bob_id = store.add("Bob's secret is 42", namespace="bob").id
        store.add("Alice's secret is 7", namespace="alice")
    async with await _session(env, "-n", "alice") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {name for name, _ in FIXED_CALLS}
        for name, args in FIXED_CALLS:
            args = {k: [bob_id] if v == ["BOB_ID"] else v for k, v in args.items()}
            refused = await session.call_tool(name, {**args, "namespace": "bob"})
            message = _text_any(refused)
            assert refused.is_error, (name, message)
            assert "namespace 'bob'" in message and "serves only namespace 'alice'" in message, message
            assert f"tool {name}" in message and "InvalidInputError" in message and "secret" not in message
            assert "namespace" not in tools[name].input_schema["properties"]  # still not advertised
        # Its own namespace, or none, is served.
        assert "secret is 7" in _text(await session.call_tool("recall", {"query": "secret", "namespace": "alice"}))
        assert len(_json(await session.call_tool("list", {"namespace": None}))) == 1
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        assert [m.text for m in store.list("bob")] == ["Bob's secret is 42"]  # neither forgotten nor added to
        assert [m.text for m in store.list("alice")] == ["Alice's secret is 7"]


@pytest.mark.long  # a server process
async def test_item15_list_with_a_huge_limit_or_offset_is_a_typed_error(env: dict[str, str]) -> None:
    with MemoryStore(env["MEMORY_RETRIEVERS_STORE"], embedder=HashEmbedder(32)) as store:
        store.add("Alice keeps bees", namespace="alice")
    async with await _session(env, "-n", "alice") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, value in (("limit", 2**32), ("offset", 2**32)):
            refused = await session.call_tool("list", {name: value})
            message = _text_any(refused)
            assert refused.is_error and "InvalidInputError" in message and f"{name} must be an int" in message
        assert len(_json(await session.call_tool("list", {"offset": 0}))) == 1
