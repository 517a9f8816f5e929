"""``python -m memory_retrievers``: the command line (see ``memory-retrievers --help``)."""

from memory_retrievers.cli import main

# Guarded so a tool that imports every module (the docs' API reference inspects them) does not run it.
if __name__ == "__main__":
    main()
