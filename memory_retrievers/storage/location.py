"""Where one LanceDB table of a store lives: what another process needs to open it again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memory_retrievers.storage.connect import CloudAccess

__all__ = ["TableLocation"]


@dataclass(frozen=True)
class TableLocation:
    """One table of a store: its location, its name and how to reach it (see ``MemoryStore.table_locations``).

    It says what a job in another process (a Ray task, a worker) needs to open the same table. The
    credentials it carries never appear in its repr or str: the API key is masked and only the
    names of the storage options are shown.

    Attributes:
        uri: The folder or LanceDB URI (``s3://...``, ``db://...``) as the store was given it.
        table_name: The LanceDB table inside it.
        storage_options: The LanceDB storage options the store was opened with (object-store
            credentials...), or ``None``.
        cloud: The LanceDB Cloud or Enterprise settings of a ``db://`` table, or ``None``.
    """

    uri: str
    table_name: str
    storage_options: Mapping[str, str] | None = field(default=None, repr=False, hash=False)
    cloud: CloudAccess | None = None

    def __post_init__(self) -> None:
        if self.storage_options is not None:  # a copy: the store's own options stay its own
            object.__setattr__(self, "storage_options", dict(self.storage_options))

    @property
    def is_cloud(self) -> bool:
        """Whether Cloud settings apply: a ``db://`` table opened with an API key, region or host."""
        return self.cloud is not None

    def __repr__(self) -> str:
        shown = None if self.storage_options is None else dict.fromkeys(self.storage_options, "***")
        return (
            f"TableLocation(uri={self.uri!r}, table_name={self.table_name!r}, storage_options={shown!r}, "
            f"cloud={self.cloud!r})"
        )
