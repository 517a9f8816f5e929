"""Which shard holds a namespace: a stable hash, the same in every process, Python version and hash seed.

Kept apart from the sharded store (``shards.py``) so that anything that must agree on the routing
(an app's own router, a bulk job, a test pinning the values) can import it without opening a store.
"""

from __future__ import annotations

import hashlib
import unicodedata

from memory_retrievers.errors import InvalidInputError

__all__ = ["shard_of"]

_MULTIPLIER = 2862933555777941757  # the jump hash's linear congruential step (Lamping & Veach, 2014)


def shard_of(namespace: str, shards: int) -> int:
    """The shard (``0 <= shard < shards``) that holds ``namespace``: stable across processes and versions.

    The UTF-8 bytes of the namespace's NFC form (the one form the store keeps a namespace in, so
    every spelling of ``"émile"`` routes alike) are hashed with BLAKE2b (8-byte digest, read big-endian) and the
    64-bit key is mapped to a shard by jump consistent hashing (Lamping & Veach, "A Fast, Minimal
    Memory, Consistent Hash Algorithm", 2014). Going from ``n`` to ``n + 1`` shards moves only the
    namespaces that land in the new shard (about ``1 / (n + 1)`` of them); the others stay where
    they are, so :func:`~memory_retrievers.reshard` copies little. Never Python's ``hash()``, which
    is salted per process.

    Args:
        namespace: The namespace (any str; its NFC form is hashed).
        shards: How many shards there are.

    Raises:
        InvalidInputError: ``shards`` is not a positive int, or ``namespace`` is not a str.

    Example:
        >>> shard_of("alice", 4)
        1
    """
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise InvalidInputError(f"shards must be a positive int, got {shards!r}")
    if not isinstance(namespace, str):
        raise InvalidInputError(f"namespace must be a str, got {type(namespace).__name__}")
    canonical = unicodedata.normalize("NFC", namespace)
    key = int.from_bytes(hashlib.blake2b(canonical.encode("utf-8"), digest_size=8).digest(), "big")
    bucket, jump = -1, 0
    while jump < shards:
        bucket = jump
        key = (key * _MULTIPLIER + 1) % 2**64
        jump = int((bucket + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return bucket
