"""``python -m memory_retrievers``: the command line (see ``memory-retrievers --help``)."""

from memory_retrievers.cli import main

main()
