"""The memory inspector: a local web app over a store (``memory-retrievers ui``, or mount it in your app).

Needs the ``ui`` extra (``python -m pip install "./memory-retrievers[ui]"`` from a clone: Starlette, uvicorn, Jinja2,
python-multipart). ``import memory_retrievers`` never imports this package.

Example:
    >>> from memory_retrievers.ui import create_app, serve                       # doctest: +SKIP
    >>> app = create_app(store, read_only=True)        # an ASGI app: mount it, or
    >>> serve(store, port=8765)                        # serve it on 127.0.0.1 until Ctrl-C
"""

from __future__ import annotations

try:
    import jinja2  # noqa: F401
    import python_multipart  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from memory_retrievers.errors import install_extra

    raise ImportError(
        f"the memory inspector needs the ui extra ({exc.name} is missing): {install_extra('ui')}"
    ) from exc

from memory_retrievers.ui.app import ROUTES, create_app
from memory_retrievers.ui.links import ns_url
from memory_retrievers.ui.server import serve

__all__ = ["ROUTES", "create_app", "ns_url", "serve"]
