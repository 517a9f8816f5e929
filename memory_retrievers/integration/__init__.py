"""Building blocks for framework adapters (the LangChain and LlamaIndex packages use only these).

Everything listed in ``__all__`` is public API; :mod:`memory_retrievers.integration.toolkit` documents each piece.
"""

from __future__ import annotations

from memory_retrievers.integration.toolkit import *  # noqa: F403
from memory_retrievers.integration.toolkit import __all__ as __all__
