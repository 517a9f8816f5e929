"""The storage components behind :class:`~memory_retrievers.MemoryStore`, one job per module.

- ``table``: :class:`MemoryTable`, the one owner of the LanceDB table. Every read goes through it,
  and every commit, which then tells its subscribers what changed (``events``); rewrites of stored
  rows are conditional on their ``revision``. ``migrations`` checks and upgrades a table on open.
- ``queue``: the one write path: every mutation is queued and applied by one consumer, concurrent
  writers' records grouped into one commit.
- ``vectors``: embedding and the checks every vector passes before it is stored or searched with.
- ``writes``: ``add``/``add_many``: dedup, upserts, context fill.
- ``edits``: ``update``, ``supersede``, ``delete``, ``forget``.
- ``duplicates``, ``context_fill``: the table side of duplicate detection, and chat-turn context
  (filled on write, kept free of deleted turns).
- ``search``: the search primitives and plain reads (get, list, count).
- ``views``: in-memory namespace views for recall (a commit subscriber).
- ``sources``: the :class:`~memory_retrievers.recall.RecallSource` implementations (view or table).
- ``maintenance``: index builds, optimize, conflict retries (a commit subscriber).
- ``access``: access statistics, batched.

The facade wires them together; nothing here is public API except what the facade returns.
"""

import os

# LanceDB's Rust logger reads LANCEDB_LOG once, when ``lancedb`` is first imported; every module of
# this package that imports it is in this package, so this line runs first. Lance logs a compaction
# that a concurrent commit preempted as a WARN with a Rust source path ("Compaction commit failed
# ... preempted by concurrent transaction"), although maintenance retries it and, if it keeps
# failing, says so in its own log line with what to do (``maintenance.retry_conflicts``): that one
# module is turned down to errors. A LANCEDB_LOG already set (the user's) wins; a process that
# imported lancedb before this package keeps the level it got then.
os.environ.setdefault("LANCEDB_LOG", "warn,lance::dataset::optimize=error")
