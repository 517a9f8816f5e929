"""Bulk jobs on Ray: import chat history, re-embed a table, backfill memory formation, cluster by namespace.

Each job spreads its expensive part (embedding, LLM calls) over Ray workers and writes through the
store's own write path. Ray is an optional extra, imported only when a job runs::

    python -m pip install "./memory-retrievers[ray]"   # from the folder that holds your clone

A job starts a local Ray instance unless one is running: call ``ray.init(address=...)`` first to
run it on a cluster. See docs/how-to/bulk-jobs.md.
"""

from __future__ import annotations

from memory_retrievers.bulk.backfill import BackfillReport, NamespaceBackfill, backfill_formation
from memory_retrievers.bulk.batching import ImportReport
from memory_retrievers.bulk.clustering import ClusterReport, TableCluster, cluster_tables
from memory_retrievers.bulk.engine import factory_for
from memory_retrievers.bulk.jobs import import_records, reembed

__all__ = [
    "BackfillReport",
    "ClusterReport",
    "ImportReport",
    "NamespaceBackfill",
    "TableCluster",
    "backfill_formation",
    "cluster_tables",
    "factory_for",
    "import_records",
    "reembed",
]
