"""A store over several LanceDB tables: :class:`~memory_retrievers.ShardedMemoryStore`, routing, resharding.

Private modules: the public names are exported by :mod:`memory_retrievers`.
"""
