"""The memory store: :class:`~memory_retrievers.MemoryStore`, its everyday API, administration and lifecycle.

Private modules: the public names are exported by :mod:`memory_retrievers`.
"""
