"""Sync methods made from their async twins, and deprecated aliases that forward elsewhere.

The store's implementation is async (LanceDB's native async API); each sync method runs its twin on
the private loop thread (see ``_loop``). Making the sync method from the twin keeps one signature,
one docstring and one behaviour for both, checked by mypy through the ``ParamSpec``.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

import memory_retrievers.runtime.loop as _loop

__all__ = ["deprecated_forward", "sync_twin"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


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


def deprecated_forward(
    target: Callable[Concatenate[T, P], R], to: Callable[[S], T], old: str, new: str
) -> Callable[Concatenate[S, P], R]:
    """A deprecated method that warns (``DeprecationWarning`` naming ``new``) and calls ``target`` on ``to(self)``.

    Args:
        target: The method that does the work now, unbound (``StoreAdmin.optimize``).
        to: From the old owner to the new one (``lambda store: store.admin``).
        old: The old spelling, for the message (``"store.optimize"``).
        new: The replacement, for the message (``"store.admin.optimize"``).
    """
    message = f"{old}() is deprecated; use {new}() instead"

    @functools.wraps(target)
    def method(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return target(to(self), *args, **kwargs)

    @functools.wraps(target)
    async def amethod(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Any:
        # An async alias stays a coroutine function (code dispatches on inspect.iscoroutinefunction);
        # it warns when called, as the sync one does, not when awaited.
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return await target(to(self), *args, **kwargs)  # type: ignore[misc]

    forward: Callable[Concatenate[S, P], R] = amethod if inspect.iscoroutinefunction(target) else method  # type: ignore[assignment]
    forward.__name__ = old.rsplit(".", 1)[-1]
    return forward
