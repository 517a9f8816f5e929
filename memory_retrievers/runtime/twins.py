"""Sync methods made from their async twins.

The store's implementation is async (LanceDB's native async API); each sync method runs its twin on
the private loop thread (see ``_loop``). Making the sync method from the twin keeps one signature,
one docstring and one behaviour for both, checked by mypy through the ``ParamSpec``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

import memory_retrievers.runtime.loop as _loop

__all__ = ["sync_twin"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def sync_twin(async_method: Callable[Concatenate[S, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[S, P], R]:
    """The blocking twin of ``async_method`` (named ``aname``): ``name``, same arguments and docstring.

    Example:
        >>> class Store:                                                        # doctest: +SKIP
        ...     async def acount(self, namespace: str) -> int: ...
        ...     count = sync_twin(acount)
    """
    name = async_method.__name__.removeprefix("a")

    @functools.wraps(async_method)
    def method(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return _loop.run_sync(async_method(self, *args, **kwargs))

    owner, _, _ = async_method.__qualname__.rpartition(".")
    method.__name__ = name
    method.__qualname__ = f"{owner}.{name}" if owner else name
    return method
