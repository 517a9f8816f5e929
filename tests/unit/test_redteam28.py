"""Red-team tests of the issue 28 refactor: behaviour users relied on at c4d7fc4 that changed.

Each test pins one defect found by probing the merged tree; they fail until it is fixed.
"""

from __future__ import annotations

import inspect

import pytest

from memory_retrievers import MemoryStore, StoreAdmin

ASYNC_MOVED = ["aoptimize", "apurge", "aexpire", "astats", "aexport", "arestore", "aflush_access"]


@pytest.mark.parametrize("name", ASYNC_MOVED)
def test_deprecated_async_admin_aliases_are_still_coroutine_functions(name: str) -> None:
    # Given the async admin methods that moved to store.admin (at c4d7fc4 each was an `async def`
    # on MemoryStore, and store.admin's still is)
    assert inspect.iscoroutinefunction(getattr(StoreAdmin, name))
    # When the deprecated alias left on MemoryStore is inspected the way frameworks dispatch
    # (LangChain tools, asyncio.iscoroutinefunction checks, FastAPI dependencies)
    alias = getattr(MemoryStore, name)
    # Then it is still a coroutine function, like the method it forwards to
    assert inspect.iscoroutinefunction(alias), f"MemoryStore.{name} is no longer a coroutine function"


@pytest.mark.parametrize("name", ASYNC_MOVED)
def test_deprecated_async_admin_alias_on_an_instance_is_a_coroutine_function(store: MemoryStore, name: str) -> None:
    # The bound alias on a live store reads like store.admin's bound method
    assert inspect.iscoroutinefunction(getattr(store.admin, name))
    assert inspect.iscoroutinefunction(getattr(store, name))
