"""Exit codes, and the one mapping from the library's typed errors to them.

| code | meaning |
|---|---|
| 0 | success |
| 1 | unexpected internal error (a bug: please report it with the message) |
| 2 | usage error: unknown option, bad flag value, missing argument, refused without ``--yes`` |
| 3 | not found: no store at the location, unknown namespace, unknown memory id |
| 4 | invalid input: bad text or field, malformed or unreadable input file, nothing importable |
| 5 | partial import: some records were rejected (reported with their line numbers), the rest imported |
| 6 | configuration: bad config file or environment variable, bad store config, missing optional extra |
| 7 | storage: LanceDB could not read or write the table (or purge could not stop the worker, or an add timed out) |
| 8 | mismatch: the table was written by another schema version or embedding model |
| 9 | embedding: the embedding model failed or could not be loaded |
| 130 | interrupted (Ctrl-C); an import keeps every batch committed before it, never half a batch |
"""

from __future__ import annotations

__all__ = [
    "CONFIG",
    "EMBEDDING",
    "FAILURE",
    "INTERRUPTED",
    "INVALID_INPUT",
    "MISMATCH",
    "NOT_FOUND",
    "OK",
    "PARTIAL",
    "STORAGE",
    "USAGE",
    "CliError",
    "code_for",
]

OK = 0
FAILURE = 1
USAGE = 2
NOT_FOUND = 3
INVALID_INPUT = 4
PARTIAL = 5
CONFIG = 6
STORAGE = 7
MISMATCH = 8
EMBEDDING = 9
INTERRUPTED = 130


class CliError(Exception):
    """An error the command line reports as one line and an exit code.

    Args:
        message: What went wrong and how to fix it.
        code: The exit code (see the module docstring).
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def code_for(exc: BaseException) -> int:
    """The exit code of an exception raised by the library (most specific class first)."""
    from memory_retrievers import errors

    # EmbedderMismatchError is both a SchemaMismatchError and a DimensionMismatchError: a mismatch.
    table: list[tuple[type[BaseException], int]] = [
        (errors.SchemaMismatchError, MISMATCH),
        (errors.NotFoundError, NOT_FOUND),
        (errors.InvalidInputError, INVALID_INPUT),
        (errors.ConfigError, CONFIG),
        (errors.EmbeddingError, EMBEDDING),
        (errors.StorageError, STORAGE),
        (KeyboardInterrupt, INTERRUPTED),
    ]
    if isinstance(exc, CliError):
        return exc.code
    for kind, code in table:
        if isinstance(exc, kind):
            return code
    return FAILURE
