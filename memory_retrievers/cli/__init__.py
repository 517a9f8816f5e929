"""The ``memory-retrievers`` command line and MCP server.

Importing this package is cheap: the console entry point (:func:`main`) loads the command tree only
when a command runs in this process; for the commands people run most it first asks the store's
persistent worker (see :mod:`.client`). Nothing here is imported by ``import memory_retrievers``.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Console entry point of ``memory-retrievers`` (and ``python -m memory_retrievers``)."""
    import sys

    from memory_retrievers.cli.client import main as run

    sys.exit(run())
