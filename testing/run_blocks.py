"""Run a page's Python blocks in order, in this folder, in one interpreter: ``run_blocks.py COUNT``.

Each ``block_<i>.py`` of the current folder runs as ``__main__`` with fresh globals (``runpy``),
so a block that leans on a name another block defined still fails, as pasted into a new file
would; its stdout goes to ``block_<i>.out``. One interpreter per page instead of one per block
loads the embedding model (and starts Ray, for the bulk-jobs page) once per page, not once per
block: most of the docs tests' time was those loads (issue 38).

A block that raises stops the run: its traceback and ``python block <i> failed`` go to stderr and
the exit status is 1. The interpreter then exits normally, so the library's exit handlers run as
they do after any script.
"""

from __future__ import annotations

import gc
import os
import runpy
import sys
import traceback


def _run(index: int) -> bool:
    """Run block ``index`` with its stdout in ``block_<index>.out``; whether it succeeded."""
    out = os.open(f"block_{index}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(out, 1)  # the descriptor, not only sys.stdout: child processes a block starts print here too
    try:
        sys.argv = [f"block_{index}.py"]
        runpy.run_path(f"block_{index}.py", run_name="__main__")
    except SystemExit as stop:
        return stop.code in (0, None)
    except BaseException:
        traceback.print_exc()
        return False
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(out)
    return True


def main() -> int:
    """Run the blocks; 0 when every one succeeded."""
    sys.path[0] = os.getcwd()  # as `python block_0.py` would: imports see the page's folder first
    for index in range(int(sys.argv[1])):
        if not _run(index):
            print(f"python block {index} failed", file=sys.stderr)
            return 1
        gc.collect()  # what a block dropped is closed before the next block runs
    return 0


if __name__ == "__main__":
    sys.exit(main())
